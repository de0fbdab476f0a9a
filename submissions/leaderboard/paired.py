"""The Compare tab's paired test of two rows: what ``t2ibench compare`` computes
(:func:`benchmark.compare.compare_runs`: a paired bootstrap over the probes both runs hold,
Holm-corrected p-values, the minimum detectable difference; a score whose estimators differ is
refused by name), never a verdict read from overlapping intervals.

It needs both rows' run folders (their probes and label files); a row read from a submitted
results file has only its scores, and the tab says so. It runs on a button press, not at start
or on each pick: scoring two runs again takes seconds to minutes.
"""

from __future__ import annotations

from benchmark.present.text import md_escape
from submissions.leaderboard.board_model import Submission

__all__ = ["paired_markdown"]


def paired_markdown(subs: list[Submission]) -> str:
    """The paired comparison of two submissions as Markdown (the first is the baseline), or one
    line saying why there is none."""
    if len(subs) != 2:
        return "The paired test compares exactly two models: keep two in the picker."
    without = [s.model_id for s in subs if s.run_dir is None]
    if without:
        return md_escape(f"No paired test: {', '.join(without)} comes from a results file without its run folder "
                         "(its probes and labels), so only the intervals above can be shown, and overlapping "
                         "intervals are no test.")
    from benchmark.compare import CompareError, compare_runs  # scoring code: loaded when asked for
    from benchmark.compare.present import comparison_markdown

    try:
        comparison = compare_runs(subs[0].run_dir, subs[1].run_dir)
    except (CompareError, ValueError) as exc:
        return md_escape(f"No paired test: {exc}")
    return comparison_markdown(comparison)
