"""``t2ibench compare --detect X``: the images per prompt a comparison would need to detect a change
of X in a score, with the power and level of the MDD it prints (the command's: the library's
:func:`benchmark.compare.comparison.detect_rows` uses the square-root law alone).

The MDD printed now is the comparison's own (the spread of its swaps at this size). How it falls
with more images per prompt is not one over their square root for a plug-in over a few images
per cell (a MAD of two images per prompt is biased, and its spread is not that of a mean), so it
is simulated: a model of the baseline run's own labels (:mod:`benchmark.runner.simulate`, as
``--pilot`` fits one) gives audits of each candidate design (the suite's prompts with k images
each, by the ``--limit`` rule), and the MDD at k is the MDD now times the simulated MDD at k over
the simulated MDD now. Scores whose labels the model does not draw (CLIP embeddings, detector
queries) use the square-root law (:func:`benchmark.scores.design.images_needed`), as before.
"""

from __future__ import annotations

import math

import pandas as pd

from benchmark.compare.comparison import Comparison
from benchmark.compare.runs import Run
from benchmark.probes.source import open_probe_set
from benchmark.runner.planning import planned_mdd_from_labels
from benchmark.runner.probe_choice import limit_probes, prompt_key
from benchmark.runner.simulate import layout
from benchmark.scores.design import images_needed

__all__ = ["DETECT_PAIRS", "simulated_detect"]

#: pairs of simulated audits per candidate design
DETECT_PAIRS = 30


def _prompt_rows(run: Run, suite: str) -> pd.DataFrame:
    """Every probe of the probe set's ``suite`` on the prompts ``run`` audited of it."""
    rows = open_probe_set().table([suite])
    prompts = set(run.manifest.loc[run.manifest["suite"] == suite, "probe_id"].astype(str).map(prompt_key))
    return rows[rows["probe_id"].astype(str).map(prompt_key).isin(prompts)]


def _design(run: Run, suite: str, per_prompt: int) -> pd.DataFrame:
    """The probes of ``suite`` on the run's prompts, ``per_prompt`` images each (the ``--limit`` rule)."""
    rows = _prompt_rows(run, suite)
    return limit_probes(rows, rows["probe_id"].astype(str).map(prompt_key).nunique() * per_prompt)


def _full_per_prompt(run: Run, suite: str) -> int:
    return int(_prompt_rows(run, suite)["probe_id"].astype(str).map(prompt_key).value_counts().max())


class _Simulated:
    """The simulated MDD of one score at k images per prompt, from run A's labels (memoised)."""

    def __init__(self, run: Run, key: tuple):
        self.run, self.key, self.cache = run, key, {}

    def __call__(self, k: int) -> float | None:
        if k not in self.cache:
            suite = self.key[1]
            planned = _design(self.run, suite, k)
            lay = layout(planned)
            rows = planned_mdd_from_labels(self.run.manifest, {kind: self.run.label_frame(kind) for kind in lay.keys},
                                           planned, pairs=DETECT_PAIRS, seed=k, layout_of=lambda _: lay)
            found = [r for r in rows if (r["name"], r["suite"], r["subset"], r["estimator"], r["annotator"]) == self.key]
            self.cache[k] = found[0].get("mdd") if found else None
        return self.cache[k]


def _needed(mdd_now: float, now: float, target: float, simulated: _Simulated, top: int) -> dict:
    """Images per prompt where the printed MDD, scaled by the simulated one, reaches ``target``."""
    k_now = max(1, int(round(now)))
    base = simulated(k_now)
    if not base:
        raise ValueError("the simulated audits give no MDD for it")
    mdd_at = (lambda k: mdd_now * (simulated(k) or math.inf) / base)
    if mdd_now <= target:
        low, high = 1, k_now
    elif mdd_at(top) > target:  # past the suite's own images per prompt: the square-root law from there
        need = images_needed(mdd_at(top), target, top)
        return {"per_prompt": need["per_prompt"], "how": f"simulated to {top} per prompt, then the square-root law"}
    else:
        low, high = k_now, top
    while low < high:
        mid = (low + high) // 2
        if mdd_at(mid) <= target:
            high = mid
        else:
            low = mid + 1
    return {"per_prompt": low, "how": "simulated from the baseline's labels"}


def simulated_detect(comparison: Comparison) -> list[dict]:
    """``comparison.detect`` with the images per prompt of each compared row found by simulation
    from the baseline's labels where the model draws them (see the module doc)."""
    run = comparison.runs[0]
    out = []
    for item in comparison.detect:
        item = dict(item)
        now = item.get("images_per_prompt")
        if item.get("status") == "compared" and now:
            key = (item["name"], item["suite"], item["subset"], item["estimator"], item["annotator"])
            try:
                found = _needed(item["mdd"], now, item["target"], _Simulated(run, key), _full_per_prompt(run, key[1]))
                item.update(needed_per_prompt=found["per_prompt"], how=found["how"])
            except ValueError as exc:  # labels the model does not draw: the square-root law
                item["how"] = f"the square-root law ({exc})"
        out.append(item)
    return out
