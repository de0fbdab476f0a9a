"""The report's section on people's labels (results.json's ``human_labels`` and each entry's
``human_corrected``): which answers were used and refused, each score automatic beside
corrected with its interval and the people-labelled images it rests on (a plot of both), the
annotator's measured errors per group and the corrected shares. Plain data for the templates;
the plot is drawn into the report folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from benchmark.present.plotting import plot_corrected
from benchmark.present.text import fmt_number, short_estimator, value_text

__all__ = ["human_section"]

MAX_PLOTTED = 24


def _table(headers: list[str], rows: list[list[Any]], title: str = "") -> dict:
    return {"headers": headers, "rows": [["" if c is None else str(c) for c in r] for r in rows], "title": title}


def corrected_text(hc: Mapping | None) -> str:
    """One cell: "value [low, high]", or the reason there is no corrected value."""
    if not isinstance(hc, Mapping):
        return ""
    if hc.get("value") is None:
        return str(hc.get("reason") or "no corrected value")
    return value_text({"defined": True, "value": hc["value"], "ci": hc.get("ci")})


def _used_text(summary: Mapping) -> str:
    refused = {k: v for k, v in (summary.get("refused") or {}).items() if v}
    sample = summary.get("sample")
    parts = [f"{summary.get('n_answers', 0)} answers by {len(summary.get('annotators') or [])} annotator(s) count "
             f"(file {summary.get('answers_file')})"]
    if refused:
        parts.append("refused: " + ", ".join(f"{n} {why}" for why, n in refused.items()))
    if summary.get("ties"):
        parts.append(f"{summary['ties']} items tied between annotators (left out)")
    if sample:
        parts.append(f"calibration sample: {sample.get('size_per_suite')} images per suite, seed {sample.get('seed')} "
                     f"({sample.get('method')})")
    elif summary.get("sample_problem"):
        parts.append(f"the sample record is not used: {summary['sample_problem']}")
    else:
        parts.append("no calibration sample recorded: only suites people labelled completely (a census) are corrected")
    minimum = summary.get("minimum") or {}
    parts.append(f"a corrected value needs at least {minimum.get('labels')} people-labelled images, and "
                 f"{minimum.get('per_group')} in every group of a score built per group (or a census)")
    return "; ".join(parts) + "."


def _scores_table(scores: Sequence[Mapping]) -> dict:
    rows = []
    for e in scores:
        hc = e.get("human_corrected")
        if not isinstance(hc, Mapping):
            continue
        who = short_estimator(e.get("estimator") or e.get("annotator"), 24)
        rows.append([e.get("display_name") or e.get("name"), e.get("suite"), e.get("subset") or "", who,
                     value_text(e), corrected_text(hc),
                     f"{hc.get('n_human', 0)} of {hc.get('n_population', e.get('n', 0))}",
                     hc.get("method") or ""])
    return _table(["Score", "Suite", "Subset", "Estimator", "Automatic", "Corrected with people's labels",
                   "People-labelled images", "Method"], rows, "Scores: automatic and corrected")


def _errors_table(rows: Sequence[Mapping]) -> dict:
    out = [[r.get("file"), r.get("suite"), short_estimator(r.get("estimator") or r.get("annotator"), 24),
            r.get("by"), r.get("group"),
            "n/a" if r.get("rate") is None else f"{fmt_number(r['rate'], 3)} [{fmt_number(r.get('low'), 3)}, "
                                                 f"{fmt_number(r.get('high'), 3)}]", f"{r.get('n_errors')} of {r.get('n')}"]
           for r in rows]
    return _table(["Label file", "Suite", "Annotator", "By", "Group", "Error rate [Wilson 95 % CI]", "Errors"], out,
                  "The annotator's errors on the people-labelled images, per group")


def _shares_table(rows: Sequence[Mapping]) -> dict:
    out = [[r.get("suite"), short_estimator(r.get("estimator") or r.get("annotator"), 24), r.get("position") or "",
            r.get("category"), fmt_number(r.get("automatic"), 3), corrected_text(r),
            f"{r.get('n_human')} of {r.get('n_population')}"] for r in rows]
    return _table(["Suite", "Annotator", "Person", "Category", "Automatic share", "Corrected share (PPI++)",
                   "People-labelled images"], out, "Shares of each category: automatic and corrected")


def human_section(results: Mapping, out_dir: Path) -> dict | None:
    """The section's data (None when the run has no people's labels); its plot is written to ``out_dir``."""
    summary = results.get("human_labels")
    if not isinstance(summary, Mapping):
        return None
    scores = [e for e in results.get("scores") or [] if isinstance(e, Mapping)]
    suites = _table(["Suite", "Used for correction", "Images", "In the sample", "Labelled and used",
                     "Labelled outside the sample (agreement only)", "Why"],
                    [[s.get("suite"), s.get("mode"), s.get("population"), s.get("sampled"), s.get("used"),
                      s.get("outside_sample"), s.get("reason") or ""] for s in summary.get("suites") or []],
                    "People's labels per suite")
    plotted = [e for e in scores if isinstance(e.get("human_corrected"), Mapping)
               and e["human_corrected"].get("value") is not None and e.get("defined")][:MAX_PLOTTED]
    figures = [{"file": f, "caption": c} for f, c in plot_corrected(plotted, out_dir)]
    tables = [suites, _scores_table(scores)]
    if summary.get("annotator_errors"):
        tables.append(_errors_table(summary["annotator_errors"]))
    if summary.get("shares"):
        tables.append(_shares_table(summary["shares"]))
    notes = [summary["shares_note"]] if summary.get("shares_note") else []
    return {"text": _used_text(summary), "tables": tables, "figures": figures, "notes": notes}
