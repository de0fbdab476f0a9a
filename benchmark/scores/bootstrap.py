"""Bootstrap confidence intervals over images, used by every score.

None of the papers reports a confidence interval; a leaderboard without them ranks
noise. The statistic is any function of a set of row indices (so it can be a whole
score pipeline). Resampling is over rows (images), optionally within strata (for
example per prompt or per group x attribute cell) so that every cell of the design
keeps its size, through ``scipy.stats.bootstrap`` with one sample per stratum.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
import warnings
from typing import Callable, Sequence

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class ConfidenceInterval:
    low: float
    high: float
    confidence_level: float
    n_resamples: int
    method: str = "percentile bootstrap over images"

    def to_dict(self) -> dict:
        return asdict(self)

    def contains(self, value: float) -> bool:
        return bool(self.low - 1e-12 <= value <= self.high + 1e-12)


def bootstrap_ci(
    statistic: Callable[[np.ndarray], float],
    n: int,
    *,
    strata: Sequence | None = None,
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    random_state: int = 0,
    method: str = "percentile",
) -> ConfidenceInterval:
    """Bootstrap interval of ``statistic(indices)`` over ``n`` rows.

    ``statistic`` receives an integer array of row indices (with repeats) and returns
    a float. ``strata`` (one label per row) resamples within each stratum. A
    statistic that is undefined on some resamples (returns NaN) gives a NaN
    interval rather than a misleading one. ``method`` is scipy's: "percentile"
    (default), "basic" or "BCa" (bias-corrected, for statistics such as a mean of
    absolute differences whose resampling distribution is biased near 0; it costs
    one extra statistic call per row for the jackknife).
    """
    if method not in ("percentile", "basic", "BCa"):
        raise ValueError(f"method must be 'percentile', 'basic' or 'BCa', got {method!r}")
    if n < 1:
        raise ValueError("bootstrap needs at least one row")
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level must be in (0, 1), got {confidence_level}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be positive, got {n_resamples}")
    index = np.arange(n)
    if strata is None:
        samples: tuple[np.ndarray, ...] = (index,)
    else:
        labels = np.asarray(strata)
        if len(labels) != n:
            raise ValueError(f"strata has {len(labels)} labels for {n} rows")
        _, codes = np.unique(labels, return_inverse=True)
        samples = tuple(index[codes == c] for c in range(codes.max() + 1))

    def resampled_statistic(*parts: np.ndarray) -> float:
        return float(statistic(np.concatenate(parts).astype(np.int64)))

    # scipy needs >= 2 observations per sample to resample; a 1-row stratum is fixed.
    fixed = [s for s in samples if len(s) < 2]
    free = [s for s in samples if len(s) >= 2]
    if not free:
        value = resampled_statistic(*samples)
        return ConfidenceInterval(value, value, confidence_level, 0)

    def with_fixed(*parts: np.ndarray) -> float:
        return resampled_statistic(*parts, *fixed)

    # A degenerate resample distribution is reported as a NaN interval below, not as a warning.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        res = stats.bootstrap(
            tuple(free), with_fixed, n_resamples=n_resamples, confidence_level=confidence_level,
            method=method, vectorized=False, paired=False, random_state=random_state,
        )
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not np.all(np.isfinite(res.bootstrap_distribution)):
        low = high = float("nan")
    return ConfidenceInterval(low, high, confidence_level, n_resamples, f"{method} bootstrap over images")
