"""The exact (Clopper-Pearson) interval of a share: the calibration's rates (how often a
comparison calls a change) and the tables that pool them."""

from __future__ import annotations

__all__ = ["clopper_pearson"]


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact binomial interval of k events in n (statsmodels ``proportion_confint``, beta)."""
    from statsmodels.stats.proportion import proportion_confint  # heavy: loaded by the tables that need it

    low, high = proportion_confint(k, n, alpha=1 - level, method="beta")
    return float(low), float(high)
