"""The Compare tab's paired test of two rows: what ``t2ibench compare`` computes
(:func:`benchmark.compare.compare_loaded`: the paired randomization test over the probes both runs
hold, Holm-corrected p-values, the minimum detectable difference of the test that decides,
intervals checked; a score no swap can change is not tested; a score whose estimators differ is
refused by name), never a verdict read from overlapping intervals.

A row read from a submitted results file is rebuilt from the per-probe labels its results carry
(``pairing``, :mod:`benchmark.contract.pairing`; its probe rows from its probe set) and checked
against them: two such rows are compared without their run folders, with the verdicts their
folders give, as the board read from the Hub has them. A row with its run folder is checked as
``t2ibench verify`` checks it and scored again. A row whose results carry no per-probe labels
(scored before they were recorded) or contradict them gets one line saying why there is no paired
test. It runs on a button press: scoring two runs together takes seconds to minutes.
"""

from __future__ import annotations

from pathlib import Path

from benchmark.present.text import md_escape
from submissions.leaderboard.board_model import Submission

__all__ = ["paired_markdown"]


def _labels(subs: list[Submission]) -> list[str]:
    """The two rows' names: model id, with the revision when both share it."""
    names = [s.model_id for s in subs]
    if len(set(names)) < len(names):
        names = [f"{s.model_id}@{s.revision or 'main'}" for s in subs]
    if len(set(names)) < len(names):
        names = [f"{n} ({i + 1})" for i, n in enumerate(names)]
    return names


def _with_pairing(sub: Submission) -> dict:
    """The row's results document with its ``pairing`` section: read again from its file when the
    board keeps its documents without it (about 300 kB for a full audit)."""
    if "pairing" in sub.doc or not sub.path or not Path(sub.path).is_file():
        return sub.doc
    from benchmark.contract.results import load_results_file

    try:
        pairing = load_results_file(sub.path).get("pairing")
    except (ValueError, OSError):  # unreadable now: the row is compared as the board holds it
        return sub.doc
    return sub.doc if pairing is None else {**sub.doc, "pairing": pairing}


def paired_markdown(subs: list[Submission]) -> str:
    """The paired comparison of two submissions as Markdown (the first is the baseline), or one
    line saying why there is none."""
    if len(subs) != 2:
        return "The paired test compares exactly two models: keep two in the picker."
    from benchmark.commands.mdd import simulated_mdd
    from benchmark.compare import CompareError, compare_loaded  # scoring code: loaded when asked for
    from benchmark.compare.present import comparison_markdown
    from benchmark.compare.runs import load_run, run_from_results
    from benchmark.runner.expected import expected_problems

    try:
        runs = [load_run(s.run_dir, label, verify=True, expected=expected_problems) if s.run_dir is not None
                else run_from_results(_with_pairing(s), s.source, label) for s, label in zip(subs, _labels(subs))]
        comparison = simulated_mdd(compare_loaded(runs))
    except (CompareError, ValueError) as exc:
        return md_escape(f"No paired test: {exc}")
    return comparison_markdown(comparison)
