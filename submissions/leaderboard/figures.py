"""The figures the leaderboard app shows (matplotlib, no Gradio): forest plots of scores across
models (:func:`forest_figure`), one model's scores with their intervals (:func:`scores_figure`)
and the report plots of a run folder (:func:`report_plots`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Sequence

from benchmark.contract.run_folder import REPORT_DIR
from benchmark.present.plotting import forest_figure as draw
from benchmark.present.text import short_estimator
from benchmark.scores.metadata import SCORE_METADATA
from benchmark.tasks.of_run import report_sections
from submissions.leaderboard import board_model, comparison, score_columns


def forest_figure(rows: Sequence[board_model.ModelRow], names: Sequence[str]):
    """Forest plots of ``names`` across ``rows`` (one panel per score, two columns), or None."""
    panels = comparison.forest_panels(rows, names)
    if not panels:
        return None
    fig = draw(panels, width=12.0, row_inches=0.3, label_chars=30, ncols=2 if len(panels) > 1 else 1)
    return _detached(fig)


def _detached(fig):
    """The figure out of pyplot's registry (Gradio draws it later; nothing else keeps it alive)."""
    import matplotlib.pyplot as plt

    plt.close(fig)
    return fig


_plot_cache: dict[tuple, list[tuple[str, str]]] = {}


def report_plots(sub: board_model.Submission) -> list[tuple[str, str]]:
    """(PNG path, caption) of the report's figures, for a results file inside a run folder.

    Regenerated from the run's detail tables by each task's own figures (the report's; into a
    cache folder: the run folder is not written); a run without detail tables shows the PNGs
    of its ``report/`` folder. A bare results file has neither (it does not embed per-item
    detail), so only the scores plot is shown for it.
    """
    if sub.run_dir is None:
        return []
    key = (str(sub.path), sub.path.stat().st_mtime_ns)
    if key not in _plot_cache:
        _plot_cache[key] = _draw_report_plots(sub)
    return _plot_cache[key]


def _draw_report_plots(sub: board_model.Submission) -> list[tuple[str, str]]:
    import pandas as pd

    out_dir = Path(tempfile.mkdtemp(prefix="t2ibench-leaderboard-plots-"))
    details = sub.doc.get("details") or {}
    run_dir = sub.run_dir.resolve()

    def read_detail(name: str):
        rel = details.get(name)
        path = (run_dir / rel).resolve() if isinstance(rel, str) else None
        ok = path is not None and path.is_file() and run_dir in path.parents  # never outside the run folder
        return pd.read_parquet(path) if ok else None

    made: list[tuple[str, str]] = []
    for fam in report_sections(sub.run_dir, sub.doc):
        report = getattr(fam.task, "report", None)
        if report is None or report.figures is None:
            continue
        entries = [e for e in sub.doc.get("scores", []) if e.get("suite") in fam.suites]
        try:
            made += [(str(out_dir / f), c) for f, c in report.figures(read_detail, entries, out_dir)]
        except Exception as exc:  # a detail table the plot cannot use: say so, keep the page
            made.append(("", f"{fam.title}: plot failed ({type(exc).__name__}: {exc})"))
    if not made and (sub.run_dir / REPORT_DIR).is_dir():
        made = [(str(p), p.stem) for p in sorted((sub.run_dir / REPORT_DIR).glob("*.png")) if p.name != "summary.png"]
    return made


def scores_figure(sub: board_model.Submission):
    """Every defined entry of each headline score with its interval (one panel per score), or None."""
    panels = []
    for n in score_columns.headline_names([sub]):
        entries = [e for e in sub.scores if e.get("name") == n and e.get("defined")]
        if not entries:
            continue
        meta = SCORE_METADATA[n]
        rows = []
        for e in entries:
            ci = e.get("ci") if isinstance(e.get("ci"), dict) else {}
            label = " / ".join(str(x) for x in (e.get("suite"), short_estimator(e.get("estimator"), 14),
                                                e.get("subset")) if x)
            rows.append({"label": label, "value": e["value"], "low": ci.get("low"), "high": ci.get("high")})
        title = f"{score_columns.value_column(n)}  ({score_columns.direction_text(n)})"
        panels.append({"title": title, "ideal": meta.ideal,
                       "bounds": (meta.min_value, meta.max_value), "rows": rows})
    if not panels:
        return None
    return _detached(draw(panels, width=12.0, row_inches=0.28, label_chars=40, ncols=2 if len(panels) > 1 else 1))
