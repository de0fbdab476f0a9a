"""``t2ibench compare --detect X``: the images per prompt a comparison would need to detect a change
of X in a score, with the power and level of the MDD it prints (the command's: the library's
:func:`benchmark.compare.comparison.detect_rows` uses the square-root law alone).

The MDD printed now is the comparison's own (the spread of its swaps at this size); the MDD at k
images per prompt is it scaled by the MDD simulated from the baseline's labels at k over the one
now (:mod:`benchmark.runner.scaled_mdd`). Scores whose labels the model does not draw (CLIP
embeddings, detector queries) use the square-root law (:func:`benchmark.scores.design.images_needed`),
as before.
"""

from __future__ import annotations

from typing import Callable

from benchmark.compare.comparison import Comparison
from benchmark.runner.scaled_mdd import SimulatedMDD, full_per_prompt, mdd_at
from benchmark.scores.design import images_needed

__all__ = ["simulated_detect"]


def _needed(mdd_now: float, now: float, target: float, simulated: Callable[[int], float | None], top: int) -> dict:
    """Images per prompt where the printed MDD, scaled by the simulated one, reaches ``target``."""
    k_now = max(1, int(round(now)))
    at = (lambda k: mdd_at(simulated, mdd_now, now, k))
    at(k_now)  # no simulated MDD now: the caller's square-root law
    if mdd_now <= target:
        low, high = 1, k_now
    elif at(top) > target:  # past the suite's own images per prompt: the square-root law from there
        need = images_needed(at(top), target, top)
        return {"per_prompt": need["per_prompt"], "how": f"simulated to {top} per prompt, then the square-root law"}
    else:
        low, high = k_now, top
    while low < high:
        mid = (low + high) // 2
        if at(mid) <= target:
            high = mid
        else:
            low = mid + 1
    return {"per_prompt": low, "how": "simulated from the baseline's labels"}


def simulated_detect(comparison: Comparison) -> list[dict]:
    """``comparison.detect`` with the images per prompt of each compared row found by simulation
    from the baseline's labels where the model draws them (see the module doc)."""
    run = comparison.runs[0]
    simulated = SimulatedMDD(run)
    out = []
    for item in comparison.detect:
        item = dict(item)
        now = item.get("images_per_prompt")
        if item.get("status") == "compared" and now:
            key = (item["name"], item["suite"], item["subset"], item["estimator"], item["annotator"])
            try:
                found = _needed(item["mdd"], now, item["target"], lambda k, key=key: simulated(key, k),
                                full_per_prompt(run, key[1]))
                item.update(needed_per_prompt=found["per_prompt"], how=found["how"])
            except ValueError as exc:  # labels the model does not draw: the square-root law
                item["how"] = f"the square-root law ({exc})"
        out.append(item)
    return out
