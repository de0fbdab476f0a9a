"""Models side by side: the forest plots' panels (:func:`forest_panels`, drawn by
:func:`benchmark.present.plotting.forest_figure`) and the Compare tab's table (:func:`compare_table`).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from benchmark.present import text
from benchmark.scores.metadata import SCORE_METADATA
from submissions.leaderboard.board_model import ModelRow
from submissions.leaderboard.board_table import sort_rows
from submissions.leaderboard.score_columns import direction_text, headline_entry, rounded, value_column
from submissions.leaderboard.wording import model_labels, row_tags


def forest_panels(rows: Sequence[ModelRow], names: Sequence[str], suites: Sequence[str] = ()) -> list[dict]:
    """One forest-plot panel per score (:func:`benchmark.present.plotting.forest_figure`):
    every model's value and interval, best first, undefined values last, demo rows grey."""
    labels = model_labels(rows)
    panels = []
    for n in names:
        meta = SCORE_METADATA[n]
        ranked = sort_rows(rows, n, suites)
        panel_rows = []
        for r in ranked:
            e = headline_entry(r.latest, n, suites)
            if e is None:
                continue
            ci = e.get("ci") if isinstance(e.get("ci"), Mapping) else {}
            label = labels[r.key] + (" (demo)" if r.latest.demo else "")
            panel_rows.append({"label": label, "value": rounded(e.get("value")) if e.get("defined") else None,
                               "low": ci.get("low"), "high": ci.get("high"), "muted": r.latest.demo})
        if panel_rows:
            panels.append({"title": f"{value_column(n)}  ({direction_text(n)})", "ideal": meta.ideal,
                           "bounds": (meta.min_value, meta.max_value), "rows": panel_rows})
    return panels


def compare_table(rows: Sequence[ModelRow], names: Sequence[str]) -> pd.DataFrame:
    """Scores side by side: one row per headline score, one column per model."""
    labels = model_labels(rows)
    labels = {r.key: labels[r.key] + row_tags(r.latest) for r in rows}  # who made the images, demo
    records = []
    for n in names:
        rec = {"Score": value_column(n)}
        for r in rows:
            e = headline_entry(r.latest, n)
            # the plots' words: "no interval" where there is none, or a zero-width one
            rec[labels[r.key]] = text.value_text(e, digits=3) if e else "not scored"
        records.append(rec)
    return pd.DataFrame(records, columns=["Score"] + [labels[r.key] for r in rows])
