"""The statistics of a comparison: for one score, the paired bootstrap difference between two
runs scored under one :class:`benchmark.scores.bootstrap.ResamplePlan`, its interval, p-value,
standard error and minimum detectable difference; Holm's correction across the scores.

What is tested is the change in the score's *badness*
(:meth:`benchmark.scores.metadata.ScoreMetadata.badness`, on arrays too): for a score where lower
(or higher) is better that is the difference B - A itself (sign aside), for a score with an ideal value
(STS, MCAS, average gender: 0) the change of its distance from the ideal,
|B - ideal| - |A - ideal|, since moving past the ideal is not an improvement. A score with no
better direction (average skin tone) is *described* (difference and interval), never tested.

* difference and interval: the statistic on the plan's resamples of both runs, d_b = B_b - A_b
  (paired: the same probes in both), percentile interval of d_b;
* no verdict without variation: a difference is *not tested* (no p-value, no MDD, outside
  Holm's family) when a stratum of its design holds one probe in either run (its statistic is
  the same in every resample, so its noise is invisible to the resamples: with one image per
  prompt every difference would look exact, and a MAD over one image per prompt is the same in
  any two runs) or when the paired resamples do not vary at all;
* otherwise two runs that give the same value on every resample (the same labels: a rerun of
  the same model) are *identical*: no change, nothing to test, outside Holm's family, never worse;
* p-value: two-sided normal test of the tested quantity q with the paired bootstrap standard
  error, 2 (1 - Phi(|q| / SE)): the approximation the MDD uses, and not floored at 1 / (B + 1).
  The null-shifted bootstrap p, (1 + #{|q_b - q| >= |q|}) / (1 + B) (Efron & Tibshirani 1993,
  Sec. 16.4), is reported beside it (``p_bootstrap``);
* minimum detectable difference (MDD): the true change found with power 0.8 by the test that
  decides. Holm's correction over a family of m tests rejects the smallest p-value first, at
  alpha / m, and whatever that first step rejects Holm rejects; so the MDD printed is that of the
  first step, (z_(1 - alpha / 2m) + z_0.8) x SE (:func:`decisive_mdd`), found at least four times
  in five whatever the other scores do. ``mdd_uncorrected``, (z_(1 - alpha / 2) + z_0.8) x SE,
  is the MDD of one test alone. PST Sec. 4.3 sizes its design "to ensure significance" (3
  images per identity, both orders of every pair) without a calculation; the MDD is that
  calculation, made from the audit's own resamples.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
from scipy import stats

from benchmark.scores.design import ALPHA, POWER, mdd_factor  # one home: the plan estimates with them too

__all__ = ["ALPHA", "POWER", "MDD_FACTOR", "decisive_mdd", "has_direction", "holm", "mdd_factor",
           "paired_difference", "summary_of"]

#: a planned resample where either run's statistic is undefined is left out; with fewer than
#: this share of the resamples left, the score is not tested
MIN_VALID_SHARE = 0.5
#: resamples whose spread is below this share of the values' scale do not vary (rounding only)
NO_SPREAD = 1e-9


MDD_FACTOR = mdd_factor()


def decisive_mdd(se: float, family: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The MDD of Holm's first step over ``family`` tests (alpha / family): a true change this
    large is found with at least ``power``, whatever the family's other tests do."""
    return mdd_factor(alpha / max(int(family), 1), power) * se


def has_direction(meta) -> bool:
    """Whether a score has a better direction (lower, higher, or closer to an ideal value); a
    descriptive one (average skin tone) only says higher or lower."""
    return meta.lower_is_better is not None or meta.ideal is not None


def tested_quantity(meta) -> str:
    """What is tested for a score: "B - A" or the change of the distance from its ideal."""
    if meta.lower_is_better is None and meta.ideal is not None:
        return f"|B - {meta.ideal or 0:g}| - |A - {meta.ideal or 0:g}|"
    return "B - A"


def _single_strata(designs: Mapping[str, Mapping | None]) -> str | None:
    """Why strata holding one probe leave nothing to test (None when every stratum has two)."""
    parts = [f"{d['single']} of {d['strata']} in {label}" for label, d in designs.items()
             if d and d.get("single")]
    if not parts:
        return None
    every = all(d and d.get("single") == d.get("strata") for d in designs.values())
    what = "every stratum (cell of the score's design) holds one image" if every else \
        f"strata (cells of the score's design) with one image: {'; '.join(parts)}"
    return (f"{what}: no resampling variation there, so the resamples cannot tell the "
            "difference from noise (more images per prompt, e.g. a larger --limit)")


def paired_difference(meta, value_a: float, value_b: float, resamples_a: np.ndarray, resamples_b: np.ndarray,
                      *, designs: Mapping[str, Mapping | None] | None = None, confidence_level: float = 0.95,
                      alpha: float = ALPHA, power: float = POWER) -> dict:
    """The comparison of one score (``meta``: its :class:`ScoreMetadata`) between run A and B.

    ``resamples_a`` / ``resamples_b``: the statistic on the same plan's resamples; ``designs``:
    run label -> the plan's strata of that run's entry (``{"strata": m, "single": k}``).
    Returns ``status`` ("compared", "identical", "descriptive" or "not tested" with a ``reason``),
    ``difference`` (B - A) and, where the resamples allow, ``difference_ci``; for a compared
    score ``tested``, ``estimate``, ``ci``, ``se``, ``mdd_uncorrected``, ``p`` and ``p_bootstrap``
    of the tested quantity (see the module doc; the deciding ``mdd`` needs the family's size:
    :func:`decisive_mdd`).
    """
    ra, rb = np.asarray(resamples_a, float), np.asarray(resamples_b, float)
    if ra.shape != rb.shape:
        raise ValueError(f"resamples differ in number: {ra.size} and {rb.size} (scored under different plans)")
    ok = np.isfinite(ra) & np.isfinite(rb)
    out: dict = {"status": "not tested", "tested": tested_quantity(meta), "difference": float(value_b - value_a),
                 "n_resamples": int(ok.sum()), "n_resamples_planned": int(ra.size)}
    if ok.sum() < max(2, MIN_VALID_SHARE * ra.size):
        out["reason"] = (f"the score is undefined on {int((~ok).sum())} of {ra.size} paired resamples "
                         "(too few images in some cell)")
        return out
    ra, rb = ra[ok], rb[ok]
    tail = 100 * (1 - confidence_level) / 2
    d_b = rb - ra
    out["difference_ci"] = [float(np.percentile(d_b, tail)), float(np.percentile(d_b, 100 - tail))]
    if not has_direction(meta):
        out.update(status="descriptive", reason="the score has no better direction: described, not tested")
        return out
    single = _single_strata(designs or {})  # first: one image per cell can make any two runs look identical
    if single is not None:
        out["reason"] = single
        return out
    scale = max(1.0, float(np.max(np.abs(np.concatenate([ra, rb])))))
    if np.all(np.abs(d_b) <= NO_SPREAD * scale) and abs(out["difference"]) <= NO_SPREAD * scale:
        out.update(status="identical", change="none",
                   reason="identical: both runs give the same value on every paired resample (no change to test)")
        return out
    ideal = meta.lower_is_better is None and meta.ideal is not None
    q_b = meta.badness(rb) - meta.badness(ra) if ideal else d_b
    se = float(np.std(q_b, ddof=1))
    if se <= NO_SPREAD * scale:
        out["reason"] = "no resampling variation: the paired resamples do not vary (every resample gives the same difference)"
        return out
    worse_by = float(meta.badness(value_b) - meta.badness(value_a))  # > 0: B is worse
    q = worse_by if ideal else out["difference"]
    count = int(np.sum(np.abs(q_b - q) >= abs(q) - 1e-12 * max(1.0, abs(q))))
    out.update({
        "status": "compared", "estimate": q,
        "ci": [float(np.percentile(q_b, tail)), float(np.percentile(q_b, 100 - tail))],
        "se": se, "mdd_uncorrected": mdd_factor(alpha, power) * se,
        "p": float(2 * stats.norm.sf(abs(q) / se)),
        "p_bootstrap": 1.0 if q == 0 else (1 + count) / (1 + len(q_b)),
        "change": ("worse" if worse_by > 0 else "better") if q != 0 else "none",
    })
    return out


def holm(pvalues: Sequence[float], alpha: float = ALPHA) -> tuple[list[float], list[bool]]:
    """Holm-corrected p-values and rejections (statsmodels ``multipletests(method="holm")``)."""
    if not len(pvalues):
        return [], []
    from statsmodels.stats.multitest import multipletests

    reject, corrected, _, _ = multipletests(list(pvalues), alpha=alpha, method="holm")
    return [float(p) for p in corrected], [bool(r) for r in reject]


def summary_of(rows: Sequence[Mapping]) -> dict:
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
