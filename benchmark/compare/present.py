"""A comparison shown: the terminal table, the Markdown for a pull-request comment (the project's
Markdown table writer, :func:`benchmark.present.text.markdown_table`, cells escaped with
``md_escape``), the forest plot of the differences (PNG) and the JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, TextIO

import pandas as pd

from benchmark.compare.comparison import Comparison
from benchmark.present.text import direction_mark, fmt_number, markdown_table, md_escape, short_estimator

__all__ = ["print_comparison", "comparison_markdown", "plot_comparison", "write_json"]


def _score_label(r: Mapping) -> str:
    where = ", ".join(str(x) for x in (r["suite"], r.get("subset")) if x)
    return f"{r['display_name']} ({where}) {direction_mark(r)}".strip()


def _delta(r: Mapping, digits: int = 3) -> str:
    if r["status"] != "compared":
        return ""
    lo, hi = r["ci"]
    mark = "" if r["tested"] == "B - A" else " †"  # the change of the distance from the ideal
    return f"{fmt_number(r['estimate'], digits)} [{fmt_number(lo, digits)}, {fmt_number(hi, digits)}]{mark}"


def short_verdict(r: Mapping) -> str:
    """better / worse (significant), no change (not significant), refused, not tested."""
    if r["status"] != "compared":
        return r["status"]
    return r["change"] if r["significant"] else "no sig. change"


def table_rows(comparison: Comparison) -> pd.DataFrame:
    """One row per (run, score entry): the columns of the terminal table and the Markdown."""
    rows = []
    for r in comparison.rows:
        done = r["status"] == "compared"
        verdict = short_verdict(r) + (f": {r['reason']}" if r.get("reason") else "")
        rows.append({"run": r["run"], "score": _score_label(r),
                     "estimator": short_estimator(r.get("estimator") or r.get("annotator"), 20),
                     "A": fmt_number(r.get("value_a"), 3) if "value_a" in r else "",
                     "B": fmt_number(r.get("value_b"), 3) if "value_b" in r else "",
                     "Δ [95% CI]": _delta(r), "MDD": fmt_number(r["mdd"], 3) if done else "",
                     "p (Holm)": fmt_number(r["p_holm"], 3) if done else "", "verdict": verdict})
    return pd.DataFrame(rows, columns=["run", "score", "estimator", "A", "B", "Δ [95% CI]", "MDD", "p (Holm)",
                                       "verdict"])


def _header_lines(comparison: Comparison) -> list[str]:
    lines = [f"WARNING: {comparison.warning_text}"] if comparison.warning else []
    lines.append(f"baseline (A): {comparison.runs[0].label}")
    lines += [f"{p['run']} (B) vs {p['baseline']}: {p['text']}" for p in comparison.pairings]
    return lines


def _footer_lines(comparison: Comparison) -> list[str]:
    m = comparison.method
    return [f"Δ: B - A; † for a score with an ideal value (→x), the change of its distance from the ideal, "
            f"|B - x| - |A - x| (negative = closer). better / worse: significant after Holm, by the score's "
            f"direction (↓ lower is better, ↑ higher). Intervals: {100 * m['confidence_level']:g}% percentile of "
            f"{m['n_resamples']} paired resamples.", m["correction"] + ".", m["mdd"] + ".",
            *comparison.notes]


def print_comparison(comparison: Comparison, file: TextIO | None = None, width: int = 132) -> None:
    """The comparison at the terminal (at least ``width`` columns): warning, pairing, the table
    (long reasons numbered below it), how to read it."""
    import sys

    from rich import box
    from rich.table import Table
    from rich.text import Text

    from benchmark.present.terminal import console

    out = file or sys.stdout
    con = console(out)
    con.width = max(con.width, width)
    frame = table_rows(comparison)
    multi = len(comparison.runs) > 2
    notes: list[str] = []
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, header_style="bold")
    cols = [c for c in frame.columns if multi or c != "run"]
    for col in cols:
        table.add_column(col, overflow="fold", no_wrap=col not in ("score", "estimator"),
                         max_width=44 if col == "score" else None)
    for _, row in frame.iterrows():
        verdict, _, reason = str(row["verdict"]).partition(": ")
        if reason:
            notes.append(reason)
            verdict = f"{verdict} [{len(notes)}]"
        table.add_row(*[Text(verdict if c == "verdict" else str(row[c])) for c in cols])
    with con.capture() as cap:
        for line in _header_lines(comparison):
            con.print(Text(line))
        con.print(table)
        for i, note in enumerate(notes, 1):
            con.print(Text(f"[{i}] {note}"))
        for line in _footer_lines(comparison):
            con.print(Text(line))
    out.write("".join(line.rstrip() + "\n" for line in cap.get().splitlines()))
    out.flush()


def comparison_markdown(comparison: Comparison) -> str:
    """The comparison as Markdown for a pull-request comment (every cell and line escaped)."""
    frame = table_rows(comparison)
    if len(comparison.runs) <= 2:
        frame = frame.drop(columns="run")
    parts = ["## Did the change reduce bias? (`t2ibench compare`)", ""]
    parts += [f"> {md_escape(line)}" if line.startswith("WARNING") else f"- {md_escape(line)}"
              for line in _header_lines(comparison)]
    rows = [[md_escape(v) for v in row] for row in frame.itertuples(index=False)]
    parts += ["", markdown_table([md_escape(c) for c in frame.columns], rows), ""]
    parts += [f"- {md_escape(line)}" for line in _footer_lines(comparison)]
    return "\n".join(parts) + "\n"


def plot_comparison(comparison: Comparison, path: Path) -> Path | None:
    """A forest plot of the differences (one panel per score, 0 dashed); None when nothing was compared."""
    from benchmark.present.plotting import forest_figure, save_figure

    panels: dict[str, dict] = {}
    multi = len(comparison.runs) > 2
    for r in comparison.compared():
        title = f"{r['display_name']}: Δ {r['tested']} {direction_mark(r)}".strip()
        panel = panels.setdefault(title, {"title": title, "ideal": 0.0, "rows": []})
        label = ", ".join(str(x) for x in ((r["run"] if multi else None), r["suite"], r.get("subset"),
                                           short_estimator(r.get("estimator") or r.get("annotator"), 14)) if x)
        panel["rows"].append({"label": label, "value": r["estimate"], "low": r["ci"][0], "high": r["ci"][1],
                              "muted": not r["significant"]})
    if not panels:
        return None
    fig = forest_figure(list(panels.values()), width=8.0, label_chars=40)
    if comparison.warning:
        fig.suptitle("Built-in tiny random models: meaningless differences", fontsize=9, color="#a00", y=1.0)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path)
    return path


def write_json(comparison: Comparison, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(comparison.to_dict(), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return path
