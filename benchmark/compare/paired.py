"""The statistics of a comparison: for one score, the difference between two runs scored together
(:class:`benchmark.scores.randomization.JointDraws`), its p-value from the paired randomization
test, its standard error and minimum detectable difference, its bootstrap interval (checked);
Holm's correction across the scores.

What is tested is the change in the score's *badness*
(:meth:`benchmark.scores.metadata.ScoreMetadata.badness`, on arrays too): for a score where lower
(or higher) is better that is the difference B - A itself (sign aside), for a score with an ideal
value (STS, MCAS, average gender: 0) the change of its distance from the ideal,
|B - ideal| - |A - ideal|, since moving past the ideal is not an improvement. A score with no
better direction (average skin tone) is *described* (difference and interval), never tested.

* p-value: the paired randomization test (:mod:`benchmark.scores.randomization`): the tested
  quantity q recomputed on swaps of A and B within probes (permutations within strata when the
  runs share no probe), p = (1 + #{|q_j| >= |q|}) / (1 + J). Exact for any score and any size:
  under no change it is below u with probability at most u. Where it could decide (p <= alpha),
  more swaps are made (:func:`swaps_needed`) so that Holm's smallest threshold is resolved;
* standard error: the spread of q over the swaps (under no change, the spread of q itself);
  for a score with an ideal value also that of B - A (``se_difference``), which its MDD is made
  from (:func:`benchmark.scores.design.mdd_spread`: near the ideal the swaps of |B| - |A|
  collapse); minimum detectable difference (MDD): the true change found with power 0.8 by the
  test that decides, Holm's first step over a family of m tests, (z_(1 - alpha / 2m) + z_0.8) x SE
  (:func:`decisive_mdd`); ``mdd_uncorrected``, (z_(1 - alpha / 2) + z_0.8) x SE, that of one test
  alone. PST Sec. 4.3 sizes its design "to ensure significance" (3 images per identity, both
  orders of every pair) without a calculation; the MDD is that calculation, made from the
  audit's own data;
* interval of the size of a change: the percentile interval of q over the paired Poisson
  resamples (each probe weighs the same in both runs). It is checked (:func:`interval_check`)
  and never decides: an interval that excludes its own estimate, whose resamples are biased by
  more than :data:`MAX_BIAS_SHARE` of their spread, or whose spread is not the swaps' (the
  resamples cannot see the score's noise: a MAD over ten tones with a few images per prompt, a
  cell of one image) is flagged with its reason;
* nothing to test: a score whose value no swap and no resample can change is *not tested* (a MAD
  of two categories over one image per cell is 0.5 in any run: a gate on it could never fail);
  two runs that give the same value on every swap of a score that does vary (a rerun with the
  same labels) are *identical*: no change, outside Holm's family, never worse.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from benchmark.scores.design import ALPHA, POWER, mdd_factor, mdd_spread  # one home: the plan uses them too

__all__ = ["ALPHA", "POWER", "MAX_BIAS_SHARE", "MDD_FACTOR", "decisive_mdd", "has_direction", "holm", "holm_level",
           "interval_check", "mdd_factor", "mdd_spread", "paired_test", "randomization_p", "rejection_threshold",
           "summary_of", "swaps_needed", "tested_quantity"]

#: a draw where either run's statistic is undefined is left out; with fewer than this share of
#: the swaps (or resamples) left, the score is not tested (no interval)
MIN_VALID_SHARE = 0.5
#: values whose spread is below this share of their scale do not vary (rounding only)
NO_SPREAD = 1e-9
#: the bootstrap interval is flagged when its resamples' mean is off the estimate by more than
#: this share of their standard deviation (a plug-in the resamples bias)
MAX_BIAS_SHARE = 0.25
#: ... or when their standard deviation is outside this range of the swaps' (the resamples do
#: not see the score's noise)
SE_RATIO_RANGE = (0.8, 1.25)
#: swaps made where a p-value could decide: enough that a p-value of alpha / m is resolved to
#: this many expected exceedances (the test's power at the MDD stays that of the exact test)
EXCEEDANCES = 10

MDD_FACTOR = mdd_factor()


def decisive_mdd(se: float, family: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The MDD of Holm's first step over ``family`` tests (alpha / family): a true change this
    large is found with at least ``power``, whatever the family's other tests do."""
    return mdd_factor(alpha / max(int(family), 1), power) * se


def swaps_needed(family: int, alpha: float = ALPHA) -> int:
    """Swaps that resolve Holm's smallest threshold, alpha / family, to :data:`EXCEEDANCES`
    expected exceedances."""
    return int(math.ceil(EXCEEDANCES * max(int(family), 1) / alpha))


def has_direction(meta) -> bool:
    """Whether a score has a better direction (lower, higher, or closer to an ideal value); a
    descriptive one (average skin tone) only says higher or lower."""
    return meta.lower_is_better is not None or meta.ideal is not None


def tested_quantity(meta) -> str:
    """What is tested for a score: "B - A" or the change of the distance from its ideal."""
    if meta.distance_from_ideal:
        return f"|B - {meta.ideal or 0:g}| - |A - {meta.ideal or 0:g}|"
    return "B - A"


def _q(meta, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The tested quantity of value pairs: B - A, or the change of the distance from the ideal."""
    if meta.distance_from_ideal:
        return np.asarray(meta.badness(b) - meta.badness(a), dtype=float)
    return np.asarray(b - a, dtype=float)


def _finite_swaps(draws) -> np.ndarray:
    """A's and B's values on each swap of ``draws`` where both are defined."""
    perm = np.asarray(draws.perm, float)
    return perm[np.all(np.isfinite(perm), axis=1)]


def _swapped_q(meta, draws) -> np.ndarray:
    """The tested quantity on each swap of ``draws`` where both runs' values are defined."""
    perm = _finite_swaps(draws)
    return _q(meta, perm[:, 0], perm[:, 1])


def randomization_p(q: float, q_swaps: np.ndarray, scale: float = 1.0) -> float:
    """(1 + #{|q_j| >= |q|}) / (1 + J) over the finite swaps (ties, to rounding, count)."""
    ok = q_swaps[np.isfinite(q_swaps)]
    count = int(np.sum(np.abs(ok) >= abs(q) - NO_SPREAD * max(scale, abs(q))))
    return (1 + count) / (1 + len(ok))


def rejection_threshold(meta, draws, level: float) -> float:
    """The |tested quantity| above which the randomization test rejects at ``level`` (what
    decides; a simulated MDD grows the row's ``critical``, z_(1 - level / 2) x the swaps' spread,
    instead): with the comparison's J finite swaps, p <= level exactly when |q| exceeds their
    (k + 1)-th largest |q_j| (ties to rounding aside), k = floor(level (1 + J)) - 1 (infinite where
    no p-value of J swaps reaches ``level``). The power bench measures power at the printed MDD by
    it (:func:`benchmark.calibration.power_runs`)."""
    q = np.sort(np.abs(_swapped_q(meta, draws)))[::-1]
    k = int(math.floor(level * (1 + len(q)) + 1e-9)) - 1
    return math.inf if k < 0 else 0.0 if k >= len(q) else float(q[k])


def interval_check(q: float, q_boot: np.ndarray, ci: Sequence[float], se_swaps: float) -> str | None:
    """Why the bootstrap interval of ``q`` cannot be trusted (None when it can): it excludes the
    estimate, its resamples are biased, or their spread is not the score's (the swaps')."""
    se_boot = float(np.std(q_boot, ddof=1))
    if not ci[0] - 1e-12 <= q <= ci[1] + 1e-12:
        return f"the interval [{ci[0]:.4g}, {ci[1]:.4g}] excludes its own estimate {q:.4g}"
    bias = float(np.mean(q_boot)) - q
    if se_boot > 0 and abs(bias) > MAX_BIAS_SHARE * se_boot:
        return (f"the resamples are biased by {abs(bias) / se_boot:.2f} of their spread (the score's plug-in is "
                "biased at this size)")
    low, high = SE_RATIO_RANGE
    if se_swaps > 0 and not low <= se_boot / se_swaps <= high:
        return (f"the resamples see {se_boot / se_swaps:.2f} of the score's noise (their spread against the "
                "swaps'): they cannot measure it at this size")
    return None


def _variation(meta, value: np.ndarray, perm: np.ndarray, same_labels: bool) -> str | None:
    """"identical" (the runs hold the same labels), "constant" (different labels, yet no swap
    changes the tested quantity) or None (it varies)."""
    q_perm = _q(meta, perm[:, 0], perm[:, 1])
    scale = max(1.0, float(np.nanmax(np.abs(np.concatenate([value, perm.ravel()])))))
    if np.nanmax(np.abs(q_perm)) > NO_SPREAD * scale or abs(value[1] - value[0]) > NO_SPREAD * scale:
        return None
    return "identical" if same_labels else "constant"


def _constant_reason(designs: dict) -> str:
    single = [f"{d['single']} of {d['strata']} in {label}" for label, d in designs.items() if d and d.get("single")]
    where = (f" (cells of the score's design with one image: {'; '.join(single)})" if single else "")
    return ("no variation: the runs' labels differ, yet no swap of their images changes this score at this size" +
            where + ", so no change can be detected (more images per prompt, e.g. a larger --limit)")


def paired_test(meta, value_a: float, value_b: float, draws, *, designs: dict | None = None,
                confidence_level: float = 0.95, alpha: float = ALPHA, power: float = POWER) -> dict:
    """The comparison of one score (``meta``: its :class:`ScoreMetadata`) between run A and B.

    ``draws``: the :class:`~benchmark.scores.randomization.JointDraws` of the score (its values,
    paired resamples and swaps); ``designs``: run label -> the strata of that run's rows.
    Returns ``status`` ("compared", "identical", "descriptive" or "not tested" with a
    ``reason``), ``difference`` (B - A) and, where the resamples allow, ``difference_ci``; for a
    compared score ``tested``, ``estimate``, ``ci`` (and ``ci_check``: why it cannot be trusted,
    or None), ``se``, ``se_bootstrap``, ``mdd_uncorrected``, ``p`` (randomization),
    ``n_permutations`` and ``change`` (the deciding ``mdd`` needs the family's size:
    :func:`decisive_mdd`).
    """
    boot, perm = np.asarray(draws.boot, float), np.asarray(draws.perm, float)
    out: dict = {"status": "not tested", "tested": tested_quantity(meta), "difference": float(value_b - value_a),
                 "n_resamples": 0, "n_permutations": 0}
    ok_b = np.all(np.isfinite(boot), axis=1)
    ok_p = np.all(np.isfinite(perm), axis=1)
    out.update(n_resamples=int(ok_b.sum()), n_permutations=int(ok_p.sum()))
    if ok_p.sum() < max(1, MIN_VALID_SHARE * len(perm)) or ok_b.sum() < max(2, MIN_VALID_SHARE * len(boot)):
        out["reason"] = (f"the score is undefined on {int((~ok_p).sum())} of {len(perm)} swaps of the runs' images "
                         f"and {int((~ok_b).sum())} of {len(boot)} paired resamples (too few images in some cell)")
        return out
    boot, perm = boot[ok_b], perm[ok_p]
    tail = 100 * (1 - confidence_level) / 2
    d_b = boot[:, 1] - boot[:, 0]
    out["difference_ci"] = [float(np.percentile(d_b, tail)), float(np.percentile(d_b, 100 - tail))]
    if not (meta.lower_is_better is not None or meta.ideal is not None):
        out.update(status="descriptive", reason="the score has no better direction: described, not tested")
        return out
    kind = _variation(meta, np.asarray(draws.value, float), perm, bool(getattr(draws, "same_labels", False)))
    if kind == "identical":
        out.update(status="identical", change="none", reason="identical: both runs hold the same labels for this "
                                                             "score (no change to test)")
        return out
    if kind == "constant":
        out["reason"] = _constant_reason(designs or {})
        return out
    q = float(_q(meta, np.array([value_a]), np.array([value_b]))[0])
    q_perm, q_boot = _q(meta, perm[:, 0], perm[:, 1]), _q(meta, boot[:, 0], boot[:, 1])
    se = float(np.std(q_perm, ddof=1))
    if meta.distance_from_ideal:
        out["se_difference"] = _difference_spread(perm)
    ci = [float(np.percentile(q_boot, tail)), float(np.percentile(q_boot, 100 - tail))]
    scale = max(1.0, abs(value_a), abs(value_b))
    worse_by = float(meta.badness(value_b) - meta.badness(value_a))  # > 0: B is worse
    out.update({
        "status": "compared", "estimate": q, "ci": ci, "ci_check": interval_check(q, q_boot, ci, se),
        "se": se, "se_bootstrap": float(np.std(q_boot, ddof=1)),
        "p": randomization_p(q, q_perm, scale), "change": ("worse" if worse_by > 0 else "better") if q != 0 else "none",
    })
    out["mdd_uncorrected"] = mdd_factor(alpha, power) * mdd_spread(out)
    return out


def _difference_spread(perm: np.ndarray) -> float:
    """The spread of B - A over the swaps (rows: A's and B's value on one swap, all finite)."""
    return float(np.std(perm[:, 1] - perm[:, 0], ddof=1))


def refresh_p(row: dict, meta, draws) -> None:
    """``row``'s p-value, permutation count and SE again after ``draws`` got more swaps."""
    q_perm = _swapped_q(meta, draws)
    scale = max(1.0, abs(row["value_a"]), abs(row["value_b"]))
    row.update(p=randomization_p(row["estimate"], q_perm, scale), n_permutations=int(len(q_perm)),
               se=float(np.std(q_perm, ddof=1)))
    if "se_difference" in row:
        row["se_difference"] = _difference_spread(_finite_swaps(draws))
    row["mdd_uncorrected"] = mdd_factor(ALPHA, POWER) * mdd_spread(row)


def holm(pvalues: Sequence[float], alpha: float = ALPHA) -> tuple[list[float], list[bool]]:
    """Holm-corrected p-values and rejections: the step-down of Holm (1979), as statsmodels'
    ``multipletests(method="holm")`` computes it (tests/test_compare_calibration.py checks they
    agree); written out because that function runs a full garbage collection on every call,
    half a second in the calibration's long simulations."""
    p = np.asarray(pvalues, dtype=float)
    if not p.size:
        return [], []
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, np.maximum.accumulate(p[order] * (p.size - np.arange(p.size))))
    corrected = np.empty_like(stepped)
    corrected[order] = stepped
    return [float(c) for c in corrected], [bool(c <= alpha) for c in corrected]


def holm_level(others: Sequence[float], alpha: float = ALPHA) -> float:
    """The largest p-value one test may have and still be rejected by Holm's step-down, the other
    p-values of its family fixed: alpha / (m - r) where r of the others lie below it and all r are
    rejected, capped where it would pass the next one (0 where Holm rejects nothing below it)."""
    o = np.sort(np.asarray(others, dtype=float))
    m, best = len(o) + 1, 0.0
    for r in range(m):  # r of the others below this test
        if r and o[r - 1] * (m - r + 1) > alpha:  # the r-th smallest is not rejected: nothing after it is
            break
        high = alpha / (m - r)
        if high >= (o[r - 1] if r else 0.0):
            best = max(best, min(high, o[r]) if r < m - 1 else high)
    return float(best)


def summary_of(rows: Sequence) -> dict:
    """Counts of the rows: compared, significantly better / worse, identical, described, refused,
    not tested."""
    compared = [r for r in rows if r.get("status") == "compared"]
    return {"compared": len(compared),
            "significantly_better": sum(1 for r in compared if r.get("significant") and r.get("change") == "better"),
            "significantly_worse": sum(1 for r in compared if r.get("significant") and r.get("change") == "worse"),
            "identical": sum(1 for r in rows if r.get("status") == "identical"),
            "descriptive": sum(1 for r in rows if r.get("status") == "descriptive"),
            "refused": sum(1 for r in rows if r.get("status") == "refused"),
            "not_tested": sum(1 for r in rows if r.get("status") == "not tested")}
