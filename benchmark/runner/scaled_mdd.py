"""The MDD a comparison would print at another design (k images per prompt), scaled from the one
it prints now (``t2ibench compare --detect``, :mod:`benchmark.commands.detect`; checked by
:func:`benchmark.calibration.detect_runs`).

How the MDD falls with more images per prompt is not one over their square root for a plug-in
over a few images per cell (a MAD of two images per prompt is biased, and its spread is not that
of a mean), so it is simulated: a model of the baseline run's own labels (as ``--pilot`` fits
one, :func:`benchmark.runner.planning.planned_mdd_from_labels`) gives audits of the suite's full
design, cut to each candidate design (the suite's prompts with k images each, by the ``--limit``
rule), and the MDD at k is the MDD now times the simulated MDD at k over the simulated MDD now.

A run here is anything with ``manifest`` (its probes) and ``label_frame(kind)`` (its label files),
as :class:`benchmark.compare.runs.Run` has.
"""

from __future__ import annotations

import math
from typing import Callable

import pandas as pd

from benchmark.probes.source import open_probe_set
from benchmark.runner.planning import PAIRS, named_like_runs, planned_mdd_rows, simulated_pairs
from benchmark.runner.probe_choice import limit_probes, prompt_key
from benchmark.runner.simulate import Fit, Layout, layout
from benchmark.tasks.context import entry_key

__all__ = ["DETECT_PAIRS", "SimulatedMDD", "full_per_prompt", "mdd_at"]

#: pairs of simulated audits of a suite's full design, which every candidate design is cut from (as many
#: as ``--pilot`` plans from: at 30, the scaled MDD of one comparison landed within 0.8-1.25 of what its
#: design prints in only 60-100% of comparisons, docs/compare.md)
DETECT_PAIRS = PAIRS


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
    suite and k: one simulation of a suite's design gives all of its scores).

    Each suite's pairs of audits are drawn once, at its full design (:data:`DETECT_PAIRS` pairs,
    ``seed``), and every design is cut from them: the ``--limit`` rule nests designs (k images per
    prompt are the first k of the full design's), so the design of k is that of its first k images.
    The MDDs of two designs then share their draws, and their ratio (:func:`mdd_at`) keeps little of
    the simulations' own noise (drawn apart, the MDD of each design from 30 pairs varied by about 13%
    and their ratio by about 18%: docs/compare.md, "The MDD ``--detect`` scales to")."""

    def __init__(self, run, seed: int = 0):
        self.run, self.seed, self.rows, self.drawn = run, seed, {}, {}

    def __call__(self, key: tuple, k: int) -> float | None:
        suite = key[1]
        if (suite, k) not in self.rows:
            fit, sets, full = self._full_design(suite)
            planned = _design(self.run, suite, k)
            ids = set(planned["probe_id"].astype(str))
            # every simulated audit's label file holds the full layout's rows in its order
            # (draw_labels): one mask per file cuts them all
            kept = {kind: keys["probe_id"].astype(str).isin(ids).to_numpy() for kind, keys in full.keys.items()}
            cut = [{kind: frame[kept[kind]] for kind, frame in labels.items()} for labels in sets]
            self.rows[suite, k] = planned_mdd_rows(fit, layout(planned), cut, self.run.manifest)
        found = [r for r in self.rows[suite, k] if entry_key(r) == key]
        return found[0].get("mdd") if found else None

    def _full_design(self, suite: str) -> tuple[Fit, list[dict], Layout]:
        """The model of run A's labels, the pairs of audits of ``suite``'s full design it draws and
        that design's layout."""
        if suite not in self.drawn:
            lay = layout(_design(self.run, suite, full_per_prompt(self.run, suite)))
            frames = {kind: self.run.label_frame(kind) for kind in lay.keys}
            # the annotators named as the run names them (the layout names the default ones): the
            # simulated scores' keys are matched to the compared rows' by them
            lay = named_like_runs(lay, {kind: [f] for kind, f in frames.items() if f is not None and len(f)})
            fit = Fit.of(self.run.manifest, frames)
            self.drawn[suite] = fit, simulated_pairs(fit, lay, DETECT_PAIRS, self.seed), lay
        return self.drawn[suite]


def mdd_at(simulated: Callable[[int], float | None], mdd_now: float, now: float, k: int) -> float:
    """The MDD a comparison with ``k`` images per prompt would print: the MDD printed now (at
    ``now`` images per prompt) times the simulated MDD at k over the simulated MDD now."""
    base = simulated(max(1, int(round(now))))
    if not base:
        raise ValueError("the simulated audits give no MDD for it")
    return mdd_now * (simulated(k) or math.inf) / base
