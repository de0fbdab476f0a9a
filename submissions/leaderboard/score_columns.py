"""The score columns: which entry of a results file a score's column shows
(:func:`headline_entry`), the headline scores present, column names and directions, the cell
text, and the views (column sets) the table offers; and which papers' scores a run input
(a reference dataset) changes (:data:`REFERENCED_PAPERS`).

Rule (also in ``docs/leaderboard.md``): a "value [low, high]" column per ``SCORE_METADATA``
entry with ``headline=True`` that some file has, in views: the overview keeps one score per
paper family (it fits 1280 px), a family view its scores, "all" every one. When a name has
several entries (estimators, encoders, subsets) the cell shows one, chosen by
:func:`benchmark.present.text.entry_rank`; all of them are in the detail view.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from benchmark.present import text
from benchmark.present.text import entry_rank
from benchmark.scores.metadata import SCORE_METADATA, column_group
from benchmark.tasks import task_of_family
from benchmark.tasks.inputs import declared_inputs
from submissions.leaderboard.board_model import Submission


def headline_entry(sub: Submission, name: str, suites: Sequence[str] = ()) -> dict | None:
    """The entry shown in ``name``'s column for ``sub`` (None: no entry of that name); the
    choice is :func:`benchmark.present.text.entry_rank`'s, the same as the report's summary."""
    cands = [(entry_rank(e, i), e) for i, e in enumerate(sub.scores)
             if e.get("name") == name and (not suites or e.get("suite") in suites)]
    return min(cands, key=lambda c: c[0])[1] if cands else None


def headline_order(present: Iterable[str]) -> list[str]:
    """The headline score names among ``present``, in metadata order (the columns' order)."""
    present = set(present)
    return [n for n, m in SCORE_METADATA.items() if m.headline and n in present]


def headline_names(submissions: Iterable[Submission], suites: Sequence[str] = ()) -> list[str]:
    """Headline score names present in some submission (metadata order), within ``suites`` if given."""
    return headline_order(e.get("name") for s in submissions for e in s.scores
                          if not suites or e.get("suite") in suites)


def _meta_entry(name: str) -> dict:
    m = SCORE_METADATA[name]
    return {"lower_is_better": m.lower_is_better, "ideal": m.ideal}


def direction_mark(name: str) -> str:
    """↓ lower is better, ↑ higher is better, →x closest to x is better."""
    return text.direction_mark(_meta_entry(name))


def direction_text(name: str) -> str:
    return text.direction_text(_meta_entry(name)) if name in SCORE_METADATA else ""


def value_column(name: str) -> str:
    return f"{SCORE_METADATA[name].display_name} {direction_mark(name)}".strip()


def cell_text(entry: Mapping | None) -> str:
    """A score cell: "value [low, high]" (3 significant digits), "value (no CI)", "value
    (zero-width CI)", "undefined", or "" (no entry)."""
    return text.short_value_text(entry, digits=3)


def rounded(value: Any) -> float | None:
    """The numeric value behind a cell (it sorts the column), None when undefined."""
    return float(value) if text.is_number(value) else None


OVERVIEW = "Overview: one score per paper"
ALL_SCORES = "All headline scores"


def score_family(name: str) -> str:
    """The column group a score belongs to (its metadata's ``column_group``, else its paper's short name)."""
    return column_group(name)


def views(names: Sequence[str]) -> list[str]:
    """The column sets the table offers: an overview, one per family present, all."""
    families = list(dict.fromkeys(score_family(n) for n in names))
    return [OVERVIEW, *families, ALL_SCORES] if len(families) > 1 else [ALL_SCORES]


def view_names(names: Sequence[str], view: str | None) -> list[str]:
    """The headline columns of ``view``: the overview keeps each family's first score (metadata
    order), so the table fits a 1280 px screen without scrolling sideways."""
    if view in (None, "", ALL_SCORES):
        return list(names)
    if view == OVERVIEW:
        seen, out = set(), []
        for n in names:
            if score_family(n) not in seen:
                seen.add(score_family(n))
                out.append(n)
        return out
    return [n for n in names if score_family(n) == view]


class ReferencedPapers:
    """The papers whose scores a run input changes (``paper in REFERENCED_PAPERS``): those of the
    task of each declared input's probe family (a reference's attribute images change MCAS and
    Generated Bias), asked of the registries when first tested, so that importing this module
    imports no task. Worked out once: the ranking asks it for every score of every row, and the
    declared inputs are read from the task folders on disk."""

    def __init__(self) -> None:
        self._papers: frozenset[str] | None = None

    def __contains__(self, paper: object) -> bool:
        if self._papers is None:
            tasks = (task_of_family(i.family) for i in declared_inputs() if i.family)
            self._papers = frozenset(p for task in tasks if task is not None for p in task.papers)
        return paper in self._papers


REFERENCED_PAPERS = ReferencedPapers()
