"""A comparison shown: the terminal table, the Markdown for a pull-request comment (the project's
Markdown table writer, :func:`benchmark.present.text.markdown_table`, cells escaped with
``md_escape``), the forest plot of the differences (PNG) and the JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, TextIO

import pandas as pd

from benchmark.compare.comparison import Comparison
from benchmark.contract.atomic import write_bytes_atomic
from benchmark.present.text import direction_mark, fmt_number, markdown_table, md_escape, short_estimator

__all__ = ["print_comparison", "comparison_markdown", "detect_lines", "plot_comparison", "write_json"]


def _score_label(r: Mapping) -> str:
    where = ", ".join(str(x) for x in (r["suite"], r.get("subset")) if x)
    return f"{r['display_name']} ({where}) {direction_mark(r)}".strip()


def _delta(r: Mapping, digits: int = 3) -> str:
    """Δ and its interval: the tested quantity of a compared row, B - A of a described one; nothing
    for a row not tested (no interval is claimed where the resamples cannot vary)."""
    if r["status"] == "descriptive":
        lo, hi = r["difference_ci"]
        return f"{fmt_number(r['difference'], digits)} [{fmt_number(lo, digits)}, {fmt_number(hi, digits)}]"
    if r["status"] != "compared":
        return ""
    lo, hi = r["ci"]
    mark = "" if r["tested"] == "B - A" else " †"  # the change of the distance from the ideal
    if r.get("ci_check"):  # the resamples cannot be trusted here: no interval is claimed
        return f"{fmt_number(r['estimate'], digits)} [no interval]{mark}"
    return f"{fmt_number(r['estimate'], digits)} [{fmt_number(lo, digits)}, {fmt_number(hi, digits)}]{mark}"


def short_verdict(r: Mapping) -> str:
    """better / worse (significant), no sig. change, identical, higher / lower (described), refused,
    not tested."""
    if r["status"] == "descriptive":
        return f"{r['change']} (described)"
    if r["status"] != "compared":
        return r["status"]
    return r["change"] if r["significant"] else "no sig. change"


def _corrected_delta(r: Mapping, digits: int = 3) -> str:
    """B - A of the scores corrected with people's labels, and its interval (when both audits have one)."""
    hc = r.get("human_corrected")
    if not hc:
        return ""
    return (f"{fmt_number(hc['difference'], digits)} [{fmt_number(hc['low'], digits)}, "
            f"{fmt_number(hc['high'], digits)}]")


def table_rows(comparison: Comparison) -> pd.DataFrame:
    """One row per (run, score entry): the columns of the terminal table and the Markdown (a
    "Δ people" column where both audits of a row were corrected with people's labels)."""
    rows = []
    for r in comparison.rows:
        done = r["status"] == "compared"
        verdict = short_verdict(r) + (f": {r['reason']}" if r.get("reason") and r["status"] not in (
            "compared", "identical") else f": no interval: {r['ci_check']}" if r.get("ci_check") else "")
        rows.append({"run": r["run"], "score": _score_label(r),
                     "estimator": short_estimator(r.get("estimator") or r.get("annotator"), 20),
                     "A": fmt_number(r.get("value_a"), 3) if "value_a" in r else "",
                     "B": fmt_number(r.get("value_b"), 3) if "value_b" in r else "",
                     "Δ [95% CI]": _delta(r), "Δ people [95% CI]": _corrected_delta(r),
                     "MDD": _mdd(r) if done else "",
                     "p (Holm)": fmt_number(r["p_holm"], 3) if done else "", "verdict": verdict})
    people = any(r.get("human_corrected") for r in comparison.rows)
    return pd.DataFrame(rows, columns=["run", "score", "estimator", "A", "B", "Δ [95% CI]"]
                        + (["Δ people [95% CI]"] if people else []) + ["MDD", "p (Holm)", "verdict"])


def _mdd(r: Mapping) -> str:
    """A compared row's MDD, or "none detectable" where no change of the simulated kind is."""
    return "none detectable" if r.get("mdd") is None else fmt_number(r["mdd"], 3)


def _header_lines(comparison: Comparison) -> list[str]:
    lines = [f"WARNING: {comparison.warning_text}"] if comparison.warning else []
    lines.append(f"baseline (A): {comparison.runs[0].label}")
    lines += [f"{p['run']} (B) vs {p['baseline']}: {p['text']}" for p in comparison.pairings]
    return lines + [f"WARNING: {w}" for w in comparison.warnings]


def _footer_lines(comparison: Comparison) -> list[str]:
    m = comparison.method
    lines = [f"Δ: B - A; † for a score with an ideal value (→x), the change of its distance from the ideal, "
             f"|B - x| - |A - x| (negative = closer). better / worse: significant after Holm, by the score's "
             f"direction (↓ lower is better, ↑ higher); a score with no direction is described (higher / lower), "
             f"not tested. p: the paired randomization test ({m['n_permutations']} swaps of the two runs' images "
             f"within probes, up to {m['n_permutations_deciding']:,} where a p-value could decide; exact at any "
             f"size). Intervals: {100 * m['confidence_level']:g}% percentile of {m['n_resamples']} paired resamples, "
             "for the size of a change only; none is shown where its resamples cannot be trusted.",
             m["correction"] + ".", m["mdd"] + "." if m["mdd"] else "",
             m["not_tested"][:1].upper() + m["not_tested"][1:] + ".", *comparison.notes]
    return [line for line in lines if line]


def detect_lines(comparison: Comparison) -> list[str]:
    """``--detect``: per headline score, the smallest change the audit detects now (its MDD) and the
    images per prompt a named change would need (the SE falls as one over their square root)."""
    if not comparison.detect:
        return []
    lines = ["How many images are enough (power 0.8 at Holm's first step; the designs simulated from the baseline's "
             "labels, or the square-root law where they are not):"]
    for d in comparison.detect:
        where = ", ".join(str(x) for x in (d["suite"], d.get("subset"), d.get("estimator") or d.get("annotator")) if x)
        head = f"  {d['display_name']} ({where}), to detect {fmt_number(d['target'], 3)}:"
        if d["status"] != "compared":
            lines.append(f"{head} cannot say: {d['reason']}")
            continue
        now = d.get("images_per_prompt")
        at = f" at {fmt_number(now, 2)} images per prompt" if now else ""
        if d["factor"] <= 1:
            lines.append(f"{head} detectable now (MDD {fmt_number(d['mdd'], 3)}{at})")
        elif d.get("needed_per_prompt"):
            lines.append(f"{head} about {d['needed_per_prompt']} images per prompt (MDD now {fmt_number(d['mdd'], 3)}"
                         f"{at}; {d.get('how', 'the square-root law')})")
        else:
            lines.append(f"{head} about {fmt_number(d['factor'], 3)} times the images per prompt (MDD now "
                         f"{fmt_number(d['mdd'], 3)})")
    return lines


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
    detect = detect_lines(comparison)
    if detect:
        parts += ["", md_escape(detect[0]), ""] + [f"- {md_escape(line.strip())}" for line in detect[1:]]
    return "\n".join(parts) + "\n"


def _plot_row(r: Mapping, multi: bool) -> dict:
    """A forest-plot row saying what the table says: Δ and interval, verdict, the deciding MDD."""
    who = ", ".join(str(x) for x in ((r["run"] if multi else None),
                                     short_estimator(r.get("estimator") or r.get("annotator"), 14)) if x)
    if r["status"] == "descriptive":
        return {"label": f"{who}: {short_verdict(r)}", "value": r["difference"], "low": r["difference_ci"][0],
                "high": r["difference_ci"][1], "muted": True}
    low, high = (r["estimate"], r["estimate"]) if r.get("ci_check") else r["ci"]  # no interval claimed
    return {"label": f"{who}: {short_verdict(r)}, MDD {_mdd(r)}"
                     + (" (no interval)" if r.get("ci_check") else ""), "value": r["estimate"],
            "low": low, "high": high, "muted": not r["significant"]}


def plot_comparison(comparison: Comparison, path: Path) -> Path | None:
    """A forest plot of the differences (one panel per score entry, 0 dashed), compared and
    described rows labelled with their verdict and MDD, the rows not drawn counted below it; None
    when no row has a difference to draw."""
    import textwrap

    from benchmark.present.plotting import forest_figure, save_figure

    panels: dict[str, dict] = {}
    multi = len(comparison.runs) > 2
    for r in comparison.rows:
        if r["status"] not in ("compared", "descriptive"):
            continue
        tested = r["tested"] if r["status"] == "compared" else "B - A"
        where = ", ".join(str(x) for x in (r["suite"], r.get("subset")) if x)
        title = f"{r['display_name']} ({where}): Δ {tested} {direction_mark(r)}".strip()
        panels.setdefault(title, {"title": title, "ideal": 0.0, "rows": []})["rows"].append(_plot_row(r, multi))
    if not panels:
        return None
    fig = forest_figure(list(panels.values()), width=9.0, label_chars=48)
    if comparison.warning:
        fig.suptitle("Built-in tiny random models: meaningless differences", fontsize=9, color="#a00", y=1.0)
    m = comparison.method
    skipped = sum(1 for r in comparison.rows if r["status"] in ("not tested", "refused", "identical"))
    simulated = any(str(r.get("mdd_how", "")).startswith("simulated") for r in comparison.rows)
    how = "simulated from the runs' labels" if simulated else f"{m['mdd_factor']:.2f} x SE, the normal formula"
    note = (f"MDD: a true change found with power 0.8 by Holm's first step over the {m['family']} tests "
            f"({how}). Grey: not significant after Holm."
            + (f" {skipped} row(s) identical, not tested or refused are not drawn (reasons in the table)."
               if skipped else ""))
    fig.text(0.01, -0.01, "\n".join(textwrap.wrap(note, 150)), fontsize=7, color="#555", va="top")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path)
    return path


def write_json(comparison: Comparison, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, (json.dumps(comparison.to_dict(), indent=2, allow_nan=False) + "\n").encode("utf-8"))
    return path
