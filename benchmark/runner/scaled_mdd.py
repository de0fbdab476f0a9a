"""The MDD a comparison would print at another design (k images per prompt), scaled from the one
it prints now (``t2ibench compare --detect``, :mod:`benchmark.commands.detect`; checked by
:func:`benchmark.calibration.detect_runs`).

How the MDD falls with more images per prompt is not one over their square root for a plug-in
over a few images per cell (a MAD of two images per prompt is biased, and its spread is not that
of a mean), so it is simulated: a model of the baseline run's own labels (as ``--pilot`` fits
one, :func:`benchmark.runner.planning.planned_mdd_from_labels`) gives audits of each candidate
design (the suite's prompts with k images each, by the ``--limit`` rule), and the MDD at k is the
MDD now times the simulated MDD at k over the simulated MDD now.

A run here is anything with ``manifest`` (its probes) and ``label_frame(kind)`` (its label files),
as :class:`benchmark.compare.runs.Run` has.
"""

from __future__ import annotations

import math
from typing import Callable

import pandas as pd

from benchmark.probes.source import open_probe_set
from benchmark.runner.planning import planned_mdd_from_labels
from benchmark.runner.probe_choice import limit_probes, prompt_key
from benchmark.runner.simulate import layout

__all__ = ["DETECT_PAIRS", "SimulatedMDD", "full_per_prompt", "mdd_at"]

#: pairs of simulated audits per candidate design
DETECT_PAIRS = 30


def _prompt_rows(run, suite: str) -> pd.DataFrame:
    """Every probe of the probe set's ``suite`` on the prompts ``run`` audited of it."""
    rows = open_probe_set().table([suite])
    prompts = set(run.manifest.loc[run.manifest["suite"] == suite, "probe_id"].astype(str).map(prompt_key))
    return rows[rows["probe_id"].astype(str).map(prompt_key).isin(prompts)]


def _design(run, suite: str, per_prompt: int) -> pd.DataFrame:
    """The probes of ``suite`` on the run's prompts, ``per_prompt`` images each (the ``--limit`` rule)."""
    rows = _prompt_rows(run, suite)
    return limit_probes(rows, rows["probe_id"].astype(str).map(prompt_key).nunique() * per_prompt)


def full_per_prompt(run, suite: str) -> int:
    """The most images any prompt of ``suite`` has in the probe set (its full design)."""
    return int(_prompt_rows(run, suite)["probe_id"].astype(str).map(prompt_key).value_counts().max())


class SimulatedMDD:
    """The simulated MDD of each score at k images per prompt, from run A's labels (memoised per
    suite and k: one simulation of a suite's design gives all of its scores)."""

    def __init__(self, run):
        self.run, self.rows = run, {}

    def __call__(self, key: tuple, k: int) -> float | None:
        suite = key[1]
        if (suite, k) not in self.rows:
            planned = _design(self.run, suite, k)
            lay = layout(planned)
            self.rows[suite, k] = planned_mdd_from_labels(
                self.run.manifest, {kind: self.run.label_frame(kind) for kind in lay.keys}, planned,
                pairs=DETECT_PAIRS, seed=k, layout_of=lambda _: lay)
        found = [r for r in self.rows[suite, k]
                 if (r["name"], r["suite"], r["subset"], r["estimator"], r["annotator"]) == key]
        return found[0].get("mdd") if found else None


def mdd_at(simulated: Callable[[int], float | None], mdd_now: float, now: float, k: int) -> float:
    """The MDD a comparison with ``k`` images per prompt would print: the MDD printed now (at
    ``now`` images per prompt) times the simulated MDD at k over the simulated MDD now."""
    base = simulated(max(1, int(round(now))))
    if not base:
        raise ValueError("the simulated audits give no MDD for it")
    return mdd_now * (simulated(k) or math.inf) / base
