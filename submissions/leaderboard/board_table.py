"""The leaderboard table: rows filtered (suites, families, search, demo, who evaluated, who made
the images), ordered, ranked, and one page of them laid out as a :class:`Table`
(:func:`leaderboard_table`).

Rules (also in ``docs/leaderboard.md``):

- Rank column: the rank range of each row by the ranking score, from the intervals
  (:mod:`submissions.leaderboard.ranks`); the table is made one page at a time
  (:mod:`submissions.leaderboard.paging`), the search, filters and order over every row.
- Default order: best first by the first headline column, by
  :meth:`ScoreMetadata.badness` (so "closest to 0" scores rank by distance to 0); undefined
  values after, demo rows (built-in tiny models) last. Scores a reference changes are never
  ranked across references.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from benchmark.present import text
from benchmark.scores.metadata import SCORE_METADATA
from benchmark.contract.image_provenance import provenance_kind
from submissions import provenance
from submissions.leaderboard.board_model import ModelRow, Submission
from submissions.leaderboard.paging import Page, page_of
from submissions.leaderboard.ranks import RankRange, badness_interval, rank_ranges
from submissions.leaderboard.score_columns import (OVERVIEW, REFERENCED_PAPERS, cell_text, headline_entry,
                                                   headline_names, rounded, value_column, view_names)
from submissions.leaderboard.wording import badges, badges_html, model_labels, suites_html


MODEL_COLUMN, RANK_COLUMN, BADGE_COLUMN, SUITES_COLUMN = "Model", "Rank", "Badge", "Suites"
#: the index of the first score column (Model, Rank, Badge, Suites come first)
FIRST_SCORE = 4
BASE_WIDTHS = {MODEL_COLUMN: "210px", RANK_COLUMN: "70px", BADGE_COLUMN: "84px", SUITES_COLUMN: "62px"}
SCORE_WIDTH = "136px"


def badge_width(subs: Iterable[Submission]) -> str:
    """The Badge column's width: room for the widest set of badges a row has (12 px bold
    letters about 7.5 px wide, 16 px padding and 3 px margin per badge), never less than 84 px."""
    widest = max((sum(len(name) * 7.5 + 24 for name, _ in badges(s)) for s in subs), default=0)
    return f"{max(84, int(widest) + 12)}px"


def filter_rows(rows: Iterable[ModelRow], *, suites: Sequence[str] = (), families: Sequence[str] = (),
                search: str = "", show_demo: bool = True, provenance_filter: str = "all",
                images: str = "all") -> list[ModelRow]:
    """Rows that scored every suite in ``suites``, of a family in ``families`` (empty: any),
    whose model id contains ``search`` (case-insensitive), evaluated as ``provenance_filter``
    says (``all``, the maintainers' worker, self-reported)."""
    needle = (search or "").strip().lower()
    rows = list(rows)
    if provenance_filter and provenance_filter != "all":
        rows = [r for r in rows if provenance.provenance(r.latest, r.latest.finished) == provenance_filter]
    if images and images != "all":  # generated / images supplied / api
        rows = [r for r in rows if provenance_kind(r.latest.doc) == images]
    out = []
    for r in rows:
        s = r.latest
        if (suites and not set(suites) <= set(s.suites)) or (families and s.family not in families):
            continue
        if (needle and needle not in s.model_id.lower()) or (s.demo and not show_demo):
            continue
        out.append(r)
    return out


def sort_rows(rows: Iterable[ModelRow], name: str | None, suites: Sequence[str] = ()) -> list[ModelRow]:
    """Best first by score ``name`` (metadata direction); rows without a defined value after,
    demo rows (meaningless scores) last."""
    rows = list(rows)
    if not name:
        return sorted(rows, key=lambda r: r.latest.demo)
    meta = SCORE_METADATA[name]
    # scores made against different references are never ranked together: the papers'
    # protocol first, then each reference's rows (by fingerprint) among themselves
    by_reference = meta.paper in REFERENCED_PAPERS

    def key(r: ModelRow):
        e = headline_entry(r.latest, name, suites)
        v = e.get("value") if e else None
        ok = text.is_number(v)
        group = (r.latest.reference_fingerprint is not None, r.latest.reference_fingerprint or "") \
            if by_reference else (False, "")
        return (r.latest.demo, *group, 0, meta.badness(float(v))) if ok else (r.latest.demo, *group, 1, 0.0)

    return sorted(rows, key=key)


@dataclass
class Table:
    """The leaderboard table (one page of it): numbers behind the score cells (they sort), the text shown."""

    headers: list[str]
    values: list[list[Any]]
    display: list[list[str]]
    datatype: list[str]
    widths: list[str]
    keys: list[str]  # row keys of the page, in row order
    page: Page | None = None  # which page of how many matching rows
    order: list[str] = field(default_factory=list)  # the keys of every matching row, in order

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.values, columns=self.headers)

    def shown(self) -> pd.DataFrame:
        """What the page shows, as text."""
        return pd.DataFrame(self.display, columns=self.headers)

    def gradio_value(self) -> dict:
        """The ``gr.Dataframe`` value: numbers as data (header menus sort them as numbers), the
        "value [low, high]" text as display values."""
        return {"headers": self.headers, "data": self.values,
                "metadata": {"display_value": self.display, "styling": [[""] * len(self.headers)
                                                                          for _ in self.display]}}


def rank_group(sub: Submission, name: str) -> tuple | None:
    """Which rows are ranked together by score ``name``: None for demo rows (never ranked), else
    the reference group for a score a reference changes (never ranked across references)."""
    if sub.demo:
        return None
    return (sub.reference_fingerprint or "",) if SCORE_METADATA[name].paper in REFERENCED_PAPERS else ()


def score_ranks(rows: Iterable[ModelRow], name: str | None, suites: Sequence[str] = ()) -> dict[str, RankRange]:
    """Row key -> its rank range by score ``name`` (:mod:`submissions.leaderboard.ranks`) among
    ``rows`` with a defined value, in its :func:`rank_group`."""
    if not name:
        return {}
    meta = SCORE_METADATA[name]
    groups: dict[tuple, list] = {}
    for r in rows:
        group = rank_group(r.latest, name)
        e = headline_entry(r.latest, name, suites) if group is not None else None
        if e is None or not e.get("defined") or not text.is_number(e.get("value")):
            continue
        ci = e.get("ci") if isinstance(e.get("ci"), Mapping) else {}
        groups.setdefault(group, []).append(
            (r.key, badness_interval(meta, float(e["value"]), ci.get("low"), ci.get("high"))))
    out: dict[str, RankRange] = {}
    for items in groups.values():
        out.update(rank_ranges(items))
    return out


def leaderboard_table(rows: Sequence[ModelRow], *, suites: Sequence[str] = (), families: Sequence[str] = (),
                      search: str = "", show_demo: bool = True, sort_by: str | None = None,
                      names: Sequence[str] | None = None, view: str | None = OVERVIEW,
                      evaluated: str = "all", images: str = "all", page: int = 1, page_size: int | None = None,
                      labels: Mapping[str, str] | None = None, present: Sequence[str] | None = None) -> Table:
    """The leaderboard: one row per model, a Rank column (the rank range by ``sort_by``, ties
    marked), one "value [low, high]" column per headline score of ``view`` (``names`` overrides
    it), best first by ``sort_by`` (default: the first column); with ``page_size`` only page
    ``page`` of the matching rows is made (:mod:`submissions.leaderboard.paging`).

    Ranks count the rows the filters keep, the search apart (searching does not re-rank).
    Score cells hold the value as a number (None when undefined, so it sorts) and show
    :func:`cell_text`; the Badge and Suites cells are HTML made here from fixed names and
    escaped text; the Model cell is plain text (the page shows it as text). ``labels`` and
    ``present`` (the headline names the rows have) may be given, worked out once.
    """
    present = headline_names([r.latest for r in rows], suites) if present is None else present
    names = list(names) if names is not None else view_names(present, view)
    if sort_by not in present:
        sort_by = names[0] if names else None
    filtered = filter_rows(rows, suites=suites, families=families, show_demo=show_demo,
                           provenance_filter=evaluated, images=images)
    ranks = score_ranks(filtered, sort_by, suites)
    ordered = sort_rows(filter_rows(filtered, search=search), sort_by, suites)
    shown = page_of(len(ordered), page, page_size or max(1, len(ordered)))
    kept = ordered[shown.start:shown.stop]
    labels = labels if labels is not None else model_labels(rows)
    headers = [MODEL_COLUMN, RANK_COLUMN, BADGE_COLUMN, SUITES_COLUMN] + [value_column(n) for n in names]
    values, display = [], []
    for r in kept:
        s = r.latest
        rank = ranks.get(r.key)
        base = [labels[r.key], rank.best if rank else None, badges_html(s), suites_html(s)]
        entries = [headline_entry(s, n, suites) for n in names]
        values.append(base + [rounded(e.get("value")) if e and e.get("defined") else None for e in entries])
        display.append([base[0], rank.text() if rank else "", *base[2:]] + [cell_text(e) for e in entries])
    return Table(headers, values, display, datatype=["str", "number", "html", "html"] + ["number"] * len(names),
                 widths=[BASE_WIDTHS[MODEL_COLUMN], BASE_WIDTHS[RANK_COLUMN], badge_width(r.latest for r in kept),
                         BASE_WIDTHS[SUITES_COLUMN]] + [SCORE_WIDTH] * len(names),
                 keys=[r.key for r in kept], page=shown, order=[r.key for r in ordered])


def all_suites(rows: Iterable[ModelRow]) -> list[str]:
    return sorted({s for r in rows for s in r.latest.suites})


def all_families(rows: Iterable[ModelRow]) -> list[str]:
    return sorted({r.latest.family for r in rows})
