"""How many people's labels a target interval needs (``t2ibench label-plan``, and the annotation
app's header): per headline score, from a pilot's corrected values (results.json's
``human_corrected`` after people labelled a first part of the sample) or, before any label, from
the automatic interval alone.

With a pilot: the corrected estimator's variance is ``se_census^2 + (1 - n / N) s^2 / n`` (the
images' own noise, then the sample's), ``s^2`` measured on the pilot's ``n0`` labels, so the
labels for a half-width ``w`` follow (:func:`benchmark.scores.ppi.labels_needed`; checked by
simulation in tests/test_human_correction_simulation.py). People's labels alone would need
``N (z se_census / w)^2``. Without a pilot only the second is known, from the automatic
interval's spread (the annotator's agreement can only lower it). Scores built per group also need
:data:`~benchmark.scores.ppi.MIN_PER_GROUP` labels in each group, so at least that many times the
groups (a census where the groups hold fewer images).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

from scipy import stats

from benchmark.contract.results import RESULTS_FILE, load_results_file
from benchmark.present.text import fmt_number, headline_entries, markdown_table
from benchmark.scores.ppi import MIN_HUMAN_LABELS, MIN_PER_GROUP, labels_needed
from benchmark.tasks.context import entry_key

__all__ = ["DEFAULT_FRACTION", "target_half_width", "plan_rows", "plan_markdown", "read_pilot"]

#: the default target half-width, as a share of the score's range
DEFAULT_FRACTION = 0.05


def target_half_width(entry: Mapping, targets: Mapping[str, float] | None = None) -> float | None:
    """The half-width asked for ``entry``: ``targets`` by score name, or :data:`DEFAULT_FRACTION` of its range."""
    if targets and entry.get("name") in targets:
        return float(targets[entry["name"]])
    if targets and "*" in targets:
        return float(targets["*"])
    lo, hi = entry.get("min"), entry.get("max")
    if lo is None or hi is None:
        return None
    return DEFAULT_FRACTION * (float(hi) - float(lo))


def _floor(n_pop: int, groups: int | None) -> int:
    """Fewest labels the correction accepts for a score of ``n_pop`` images over ``groups`` groups:
    :data:`MIN_HUMAN_LABELS`, and :data:`MIN_PER_GROUP` per group (every image when a group holds fewer)."""
    if not n_pop:
        return MIN_HUMAN_LABELS
    groups = groups or 1
    if groups > 1 and n_pop / groups < MIN_PER_GROUP:
        return n_pop
    return min(n_pop, max(MIN_HUMAN_LABELS, MIN_PER_GROUP * groups if groups > 1 else 0))


def _groups(results: Mapping) -> dict[tuple, int]:
    """entry key -> the groups its resamples were drawn within, from a ``pairing`` section of the
    older format that recorded resamples per entry (``paired-resamples/1``); today's sections
    carry label rows instead, and the groups come from ``human_corrected`` once people labelled."""
    section = results.get("pairing") if isinstance(results.get("pairing"), Mapping) else {}
    out = {}
    for item in section.get("entries") or []:
        key, strata = (item.get("key"), item.get("strata")) if isinstance(item, Mapping) else (None, None)
        if isinstance(key, list) and isinstance(strata, list) and strata and isinstance(strata[0], int):
            out[tuple(key)] = strata[0]
    return out


def _half(ci: Mapping | None) -> float | None:
    if not isinstance(ci, Mapping) or ci.get("low") is None or ci.get("high") is None:
        return None
    return (float(ci["high"]) - float(ci["low"])) / 2


def _row(entry: Mapping, w: float | None, z: float, groups: int | None) -> dict:
    hc = entry.get("human_corrected") if isinstance(entry.get("human_corrected"), Mapping) else {}
    n_pop = int(hc.get("n_population") or entry.get("n") or 0)
    groups = hc.get("groups") or groups
    row = {"name": entry.get("name"), "display_name": entry.get("display_name"), "suite": entry.get("suite"),
           "estimator": entry.get("estimator") or entry.get("annotator"), "target_half_width": w,
           "images": n_pop, "labels_now": int(hc.get("n_human") or 0), "half_width_now": _half(hc.get("ci")),
           "needed": None, "people_alone": None, "floor": _floor(n_pop, groups), "groups": groups, "basis": ""}
    if w is None or not n_pop:
        row["basis"] = "no target (an unbounded score: give --half-width NAME=W)"
        return row
    se, se_census = hc.get("se"), hc.get("se_census")
    if se is not None and se_census is not None and row["labels_now"] < n_pop:
        row["basis"] = f"pilot: {row['labels_now']} labels"
        row["needed"] = labels_needed(float(se), float(se_census), row["labels_now"], n_pop, w)
        spread = float(se_census)
    else:
        auto = _half(entry.get("ci"))
        spread = None if auto is None else auto / z
        row["basis"] = "no pilot yet: the automatic interval's spread (the annotator can only lower it)"
    if spread is not None:
        alone = n_pop * (z * spread / w) ** 2
        row["people_alone"] = None if z * spread >= w else int(min(n_pop, max(MIN_HUMAN_LABELS, math.ceil(alone))))
    for key in ("needed", "people_alone"):
        if row[key] is not None:
            row[key] = max(row[key], row["floor"])
    return row


def plan_rows(results: Mapping, targets: Mapping[str, float] | None = None, *, every_score: bool = False,
              confidence_level: float = 0.95) -> list[dict]:
    """One row per headline score (``every_score``: every defined entry): the labels needed for its
    target half-width, people's labels alone, and what the pilot has now."""
    z = float(stats.norm.ppf(0.5 + confidence_level / 2))
    scores = [e for e in results.get("scores") or [] if isinstance(e, Mapping) and e.get("defined")]
    chosen = scores if every_score else headline_entries(scores)
    groups = _groups(results)
    return [_row(e, target_half_width(e, targets), z, groups.get(entry_key(e)))
            for e in chosen]


def _cell(v, images: int) -> str:
    if v is None:
        return "-"
    return f"all {images} (a census)" if v >= images else str(v)


def plan_markdown(rows: Sequence[Mapping]) -> str:
    """The plan as a Markdown table (the app's header and the command's output)."""
    head = ["Score", "Suite", "Target ±", "Labels needed", "People's labels alone", "Now", "Images", "Basis"]
    cells = []
    for r in rows:
        needed = r["needed"]
        if needed is None and r["basis"].startswith("pilot"):
            needed_text = "more images, not labels: even a census is wider"
        else:
            needed_text = _cell(needed, r["images"])
        now = (f"{r['labels_now']} labels, ± {fmt_number(r['half_width_now'], 3)}" if r["half_width_now"] is not None
               else f"{r['labels_now']} labels")
        cells.append([str(r["display_name"] or r["name"]), str(r["suite"]), fmt_number(r["target_half_width"], 3),
                      needed_text, _cell(r["people_alone"], r["images"]), now, str(r["images"]), str(r["basis"])])
    return markdown_table(head, cells, align="llrrrlrl")


def read_pilot(path: str | Path) -> dict:
    """The pilot's results: a results.json, or a run folder holding one (a one-line ``ValueError`` otherwise)."""
    path = Path(path)
    target = path / RESULTS_FILE if path.is_dir() else path
    if not target.is_file():
        raise ValueError(f"{target} does not exist: score the run first (`t2ibench score {path}`)")
    return load_results_file(target)
