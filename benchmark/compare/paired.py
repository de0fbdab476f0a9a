"""The statistics of a comparison: for one score, the paired bootstrap difference between two
runs scored under one :class:`benchmark.scores.bootstrap.ResamplePlan`, its interval, p-value,
standard error and minimum detectable difference; Holm's correction across the scores.

What is tested is the change in the score's *badness*
(:meth:`benchmark.scores.metadata.ScoreMetadata.badness`, on arrays too): for a score where lower
(or higher) is better that is the difference B - A itself (sign aside), for a score with an ideal value
(STS, MCAS, average gender: 0) the change of its distance from the ideal,
|B - ideal| - |A - ideal|, since moving past the ideal is not an improvement.

* difference and interval: the statistic on the plan's resamples of both runs, d_b = B_b - A_b
  (paired: the same probes in both), percentile interval of d_b;
* p-value: two-sided normal test of the tested quantity q with the paired bootstrap standard
  error, 2 (1 - Phi(|q| / SE)): the same approximation the MDD uses, so "significant" and
  "larger than the MDD" speak one language, and not floored at 1 / (B + 1) (with Holm over m
  scores a floored p could never pass alpha / m when B < m / alpha). The null-shifted bootstrap
  p, (1 + #{|q_b - q| >= |q|}) / (1 + B) (Efron & Tibshirani 1993, Sec. 16.4), is reported
  beside it (``p_bootstrap``) and used where the resamples do not vary (SE = 0);
* minimum detectable difference (MDD) at alpha 0.05 (two-sided) and power 0.8:
  (z_0.975 + z_0.8) x SE, SE the standard deviation of q_b: the smallest true change this
  audit would find four times in five. PST Sec. 4.3 sizes its design "to ensure
  significance" (3 images per identity, both orders of every pair) without a calculation;
  the MDD is that calculation, made from the audit's own resamples.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from scipy import stats

__all__ = ["ALPHA", "POWER", "MDD_FACTOR", "holm", "mdd_factor", "paired_difference"]

ALPHA = 0.05
POWER = 0.8
#: a planned resample where either run's statistic is undefined is left out; with fewer than
#: this share of the resamples left, the score is not tested
MIN_VALID_SHARE = 0.5


def mdd_factor(alpha: float = ALPHA, power: float = POWER) -> float:
    """z_(1 - alpha/2) + z_power: the minimum detectable difference in standard errors (2.80)."""
    return float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))


MDD_FACTOR = mdd_factor()


def has_direction(meta) -> bool:
    """Whether a score has a better direction (lower, higher, or closer to an ideal value); a
    descriptive one (average skin tone) only says higher or lower."""
    return meta.lower_is_better is not None or meta.ideal is not None


def tested_quantity(meta) -> str:
    """What is tested for a score: "B - A" or the change of the distance from its ideal."""
    if meta.lower_is_better is None and meta.ideal is not None:
        return f"|B - {meta.ideal or 0:g}| - |A - {meta.ideal or 0:g}|"
    return "B - A"


def paired_difference(meta, value_a: float, value_b: float, resamples_a: np.ndarray, resamples_b: np.ndarray,
                      *, confidence_level: float = 0.95, alpha: float = ALPHA, power: float = POWER) -> dict:
    """The comparison of one score (``meta``: its :class:`ScoreMetadata`) between run A and B.

    ``resamples_a`` / ``resamples_b``: the statistic on the same plan's resamples. Returns
    ``difference`` (B - A) and ``difference_ci``; ``tested``, ``estimate``, ``ci``, ``se``, ``mdd``
    and ``p`` of the tested quantity (see the module doc); ``n_resamples`` used; or, when too
    few resamples are defined, ``reason`` and no p-value.
    """
    ra, rb = np.asarray(resamples_a, float), np.asarray(resamples_b, float)
    if ra.shape != rb.shape:
        raise ValueError(f"resamples differ in number: {ra.size} and {rb.size} (scored under different plans)")
    ok = np.isfinite(ra) & np.isfinite(rb)
    out: dict = {"tested": tested_quantity(meta), "difference": float(value_b - value_a),
                 "n_resamples": int(ok.sum()), "n_resamples_planned": int(ra.size)}
    if ok.sum() < max(2, MIN_VALID_SHARE * ra.size):
        out["reason"] = (f"the score is undefined on {int((~ok).sum())} of {ra.size} paired resamples "
                         "(too few images in some cell)")
        return out
    ra, rb = ra[ok], rb[ok]
    tail = 100 * (1 - confidence_level) / 2
    d_b = rb - ra
    ideal = meta.lower_is_better is None and meta.ideal is not None
    worse_by = float(meta.badness(value_b) - meta.badness(value_a))  # > 0: B is worse
    q = worse_by if ideal else out["difference"]
    q_b = meta.badness(rb) - meta.badness(ra) if ideal else d_b
    se = float(np.std(q_b, ddof=1))
    count = int(np.sum(np.abs(q_b - q) >= abs(q) - 1e-12 * max(1.0, abs(q))))
    out.update({
        "difference_ci": [float(np.percentile(d_b, tail)), float(np.percentile(d_b, 100 - tail))],
        "estimate": q, "ci": [float(np.percentile(q_b, tail)), float(np.percentile(q_b, 100 - tail))],
        "se": se, "mdd": mdd_factor(alpha, power) * se,
        "p_bootstrap": 1.0 if q == 0 else (1 + count) / (1 + len(q_b)),
        "change": (("worse" if worse_by > 0 else "better") if has_direction(meta) else
                   ("higher" if q > 0 else "lower")) if q != 0 else "none",
    })
    out["p"] = float(2 * stats.norm.sf(abs(q) / se)) if se > 0 else out["p_bootstrap"]
    return out


def holm(pvalues: Sequence[float], alpha: float = ALPHA) -> tuple[list[float], list[bool]]:
    """Holm-corrected p-values and rejections (statsmodels ``multipletests(method="holm")``)."""
    if not len(pvalues):
        return [], []
    from statsmodels.stats.multitest import multipletests

    reject, corrected, _, _ = multipletests(list(pvalues), alpha=alpha, method="holm")
    return [float(p) for p in corrected], [bool(r) for r in reject]


def summary_of(rows: Sequence[Mapping]) -> dict:
    """Counts of the rows: compared, significantly better / worse, refused, not tested."""
    compared = [r for r in rows if r.get("status") == "compared"]
    return {"compared": len(compared),
            "significantly_better": sum(1 for r in compared if r.get("significant") and r.get("change") == "better"),
            "significantly_worse": sum(1 for r in compared if r.get("significant") and r.get("change") == "worse"),
            "refused": sum(1 for r in rows if r.get("status") == "refused"),
            "not_tested": sum(1 for r in rows if r.get("status") == "not tested")}
