"""Scores corrected with people's labels: prediction-powered inference (PPI, Angelopoulos et al.,
Science 2023; PPI++, Angelopoulos, Duchi & Zrnic 2023; the prediction-powered bootstrap,
Zrnic 2024) over a random sample of an audit's images labelled by people.

Every score of the benchmark is read through an automatic annotator whose errors need not be
random (a gender classifier misgenders some skin tones more than others). People label a random
sample of the images; with ``theta`` any score function of a label table, ``Y`` people's labels,
``Yhat`` the annotator's,

    theta_hat = theta(Y on the sample) + lambda * (theta(Yhat on every image) - theta(Yhat on the sample))

estimates the score people's labels of every image would give, whatever the annotator's error
profile: the second term removes the annotator's bias as it shows on the sample. The three parts
are resampled together, probe by probe (the paired resamples of
:class:`benchmark.scores.bootstrap.ResamplePlan`: a probe carries its people's label and its
automatic label into every resample), so the interval accounts for both the images' and the
sample's randomness. The interval is ``theta_hat +/- t(n - 1) x SE`` with SE the standard
deviation of the resampled estimates: in this project's simulation (``benchmark.scores.
correction_simulation``, docs/human_correction.md) it keeps 95 % coverage at 30 labels, where the
percentile interval of the same resamples covers 88-90 %.

``lambda``: PPI++'s power tuning, the value minimising the resampled variance (clipped to
[0, 1]), for a score computed over all images at once; 1 (plain PPI) for a score built per group
of images (a profession, a prompt): there the score's small-sample bias differs between a sample
and all images, and only lambda = 1 cancels it (the simulation: bias +0.03 with a tuned lambda
on 83 groups of 9 images, -0.003 with lambda = 1). Shares of a category (a mean of 0/1) are
corrected with ppi-python's own ``ppi_mean_ci`` (PPI++, ``lam=None``): :func:`corrected_share`.

When there are too few labels, no number is given: :func:`not_enough` says why (at least
:data:`MIN_HUMAN_LABELS` labelled images, and :data:`MIN_PER_GROUP` in every group of a score
built per group, or people's labels of every image: with 6 per group the simulation's corrected
Gender-MAD-like score covers 91-93 %, with 10 per group 94 %).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from benchmark.extras import require

__all__ = ["MIN_HUMAN_LABELS", "MIN_PER_GROUP", "Part", "Corrected", "prediction_powered", "tuned_lambda",
           "not_enough", "corrected_share", "error_rate", "labels_needed", "allocate", "CENSUS", "PPI", "PPI_TUNED", "SHARE"]

#: fewest people-labelled images a corrected score is given with
MIN_HUMAN_LABELS = 30
#: fewest people-labelled images in each group of a score built per group (a profession, a prompt)
MIN_PER_GROUP = 10

CENSUS = "census: people's labels of every image (bootstrap over images)"
PPI = "prediction-powered bootstrap (PPI, lambda = 1: the score is built per group), t interval"
PPI_TUNED = "prediction-powered bootstrap (PPI++, power-tuned lambda), t interval"
SHARE = "PPI++ mean (ppi-python ppi_mean_ci, lam=None)"


@dataclass(frozen=True)
class Part:
    """A score on one set of images (``value``) and on each resample of the plan (``resamples``,
    None when no interval was asked for)."""

    value: float
    resamples: np.ndarray | None = None


@dataclass(frozen=True)
class Corrected:
    """A corrected score: the estimate, its interval (None without resamples), the people-labelled
    images it rests on out of the score's images, how it was computed, lambda, its standard error
    and the standard error people's labels of every image would leave (``se_census``: the part of
    the error more labels cannot remove; the labelling plan reads both)."""

    value: float
    low: float | None
    high: float | None
    confidence_level: float
    n_human: int
    n_population: int
    method: str
    lam: float | None = None
    se: float | None = None
    se_census: float | None = None
    n_resamples: int = 0

    def to_dict(self) -> dict:
        ci = None
        if self.low is not None and self.high is not None and math.isfinite(self.low) and math.isfinite(self.high):
            ci = {"low": float(self.low), "high": float(self.high), "confidence_level": float(self.confidence_level),
                  "n_resamples": int(self.n_resamples), "method": self.method}
        out = {"value": float(self.value), "ci": ci, "n_human": int(self.n_human),
               "n_population": int(self.n_population), "method": self.method}
        for key in ("lam", "se", "se_census"):
            v = getattr(self, key)
            out[key] = None if v is None or not math.isfinite(v) else float(v)
        return out

    def contains(self, value: float) -> bool:
        return self.low is not None and self.high is not None and self.low - 1e-12 <= value <= self.high + 1e-12


def tuned_lambda(human: np.ndarray, auto_labelled: np.ndarray, auto_all: np.ndarray) -> float:
    """PPI++'s lambda for ``human + lambda (auto_all - auto_labelled)``: the value minimising its
    variance over the resamples, ``cov(human, auto_labelled - auto_all) / var(auto_labelled - auto_all)``,
    clipped to [0, 1]; 1 when the automatic part does not vary (any lambda gives the same estimate)."""
    d = np.asarray(auto_labelled, float) - np.asarray(auto_all, float)
    h = np.asarray(human, float)
    ok = np.isfinite(d) & np.isfinite(h)
    if ok.sum() < 3 or float(np.var(d[ok])) <= 0:
        return 1.0
    lam = float(np.cov(h[ok], d[ok])[0, 1] / np.var(d[ok], ddof=1))
    return float(np.clip(lam, 0.0, 1.0)) if math.isfinite(lam) else 1.0


def _t_interval(value: float, draws: np.ndarray, n: int, confidence_level: float,
                bounds: tuple[float | None, float | None]) -> tuple[float, float, float]:
    """(low, high, se): ``value +/- t(n - 1) x SE``, SE the resamples' standard deviation times
    sqrt(n / (n - 1)) (the bootstrap's small-sample shrinkage undone), clipped to ``bounds``."""
    draws = np.asarray(draws, float)
    if n < 2 or draws.size < 2 or not np.all(np.isfinite(draws)):
        return float("nan"), float("nan"), float("nan")
    se = float(np.std(draws, ddof=1) * math.sqrt(n / (n - 1)))
    q = float(stats.t.ppf(0.5 + confidence_level / 2, n - 1))
    low, high = value - q * se, value + q * se
    lo_b, hi_b = bounds
    if lo_b is not None and math.isfinite(lo_b):
        low = max(low, lo_b)
    if hi_b is not None and math.isfinite(hi_b):
        high = min(high, hi_b)
    return low, high, se


def prediction_powered(human: Part, auto_labelled: Part, auto_all: Part, *, n_human: int, n_population: int,
                       census: bool | None = None, confidence_level: float = 0.95, tune: bool = True,
                       bounds: tuple[float | None, float | None] = (None, None)) -> Corrected:
    """The corrected score from people's labels of the sample (``human``), the annotator's labels of
    the same images (``auto_labelled``) and of every image (``auto_all``), their resamples paired
    probe by probe (one :class:`~benchmark.scores.bootstrap.ResamplePlan`). ``tune``: PPI++'s
    lambda (a score over all images at once), else lambda = 1 (a score built per group). A census
    (``census``, default ``n_human >= n_population``: people labelled every image) is ``human`` itself.
    ``bounds``: the score's range, which the interval never leaves."""
    if n_human < 1:
        raise ValueError("a corrected score needs at least one people-labelled image")
    census = n_human >= n_population if census is None else bool(census)
    resampled = all(p.resamples is not None for p in (human, auto_labelled, auto_all))
    if census:
        lam, value = None, float(human.value)
        draws = human.resamples if human.resamples is not None else None
        method = CENSUS
    else:
        lam = tuned_lambda(human.resamples, auto_labelled.resamples, auto_all.resamples) if tune and resampled else 1.0
        value = float(human.value + lam * (auto_all.value - auto_labelled.value))
        draws = human.resamples + lam * (auto_all.resamples - auto_labelled.resamples) if resampled else None
        method = PPI_TUNED if tune else PPI
    if draws is None:
        return Corrected(value, None, None, confidence_level, n_human, n_population, method, lam)
    low, high, se = _t_interval(value, draws, n_human, confidence_level, bounds)
    se_census = _census_se(human.resamples, n_human, n_population)
    return Corrected(value, low, high, confidence_level, n_human, n_population, method, lam, se, se_census,
                     len(draws))


def _census_se(human_resamples: np.ndarray | None, n_human: int, n_population: int) -> float | None:
    """The standard error people's labels of all ``n_population`` images would leave: the people's
    score's own spread on the sample, scaled from ``n_human`` to ``n_population`` images."""
    if human_resamples is None or n_human < 2:
        return None
    h = np.asarray(human_resamples, float)
    h = h[np.isfinite(h)]
    return float(np.std(h, ddof=1) * math.sqrt(n_human / n_population)) if h.size > 1 else None


def not_enough(n_human: int, n_population: int, *, groups: int | None = None,
               smallest_group: int | None = None) -> str | None:
    """Why ``n_human`` people-labelled images of a score's ``n_population`` are too few for a
    corrected value, or None when they suffice. A score built per group (``groups`` groups, the
    smallest holding ``smallest_group`` labelled images) needs :data:`MIN_PER_GROUP` in each, or a
    census (people's labels of every image)."""
    head = f"not enough human labels ({n_human} of {n_population})"
    if n_human >= n_population > 0:
        return None
    if n_human < MIN_HUMAN_LABELS:
        return f"{head}: at least {MIN_HUMAN_LABELS} are needed"
    if groups and groups > 1 and (smallest_group is None or smallest_group < MIN_PER_GROUP):
        held = "some group holds none" if smallest_group is None else f"the smallest holds {smallest_group}"
        return (f"{head}: the score is built per group of images ({groups} groups) and {held}; a corrected "
                f"value needs at least {MIN_PER_GROUP} labelled images in each group, or people's labels of "
                "every image")
    return None


def _ppi_py():
    """ppi-python (the authors' package), imported on first use: numba makes it slow to import."""
    require("ppi_py", extra="human", purpose="correct shares with people's labels (PPI++)")
    with warnings.catch_warnings():  # ppi_py sets warnings.simplefilter("ignore") on import
        import ppi_py
    return ppi_py


def corrected_share(human: Sequence[float], auto_labelled: Sequence[float], auto_unlabelled: Sequence[float],
                    *, confidence_level: float = 0.95) -> Corrected:
    """A share (the mean of 0/1 values: images in a category) corrected by PPI++: ppi-python's
    ``ppi_mean_ci`` with ``lam=None`` on people's labels of the sample (``human``), the annotator's
    labels of the same images and of the images outside the sample (``auto_unlabelled``: the two
    sets are disjoint, ppi-python's setting). With no image outside the sample: the census, a
    t interval of people's share."""
    y = np.asarray(human, float)
    yhat = np.asarray(auto_labelled, float)
    rest = np.asarray(auto_unlabelled, float)
    n, m = y.size, y.size + rest.size
    if n < 2 or yhat.size != n:
        raise ValueError(f"a corrected share needs at least two people-labelled images, each with its automatic "
                         f"label (got {n} and {yhat.size})")
    if rest.size == 0:
        se = float(y.std(ddof=1) / math.sqrt(n))
        q = float(stats.t.ppf(0.5 + confidence_level / 2, n - 1))
        return Corrected(float(y.mean()), max(0.0, y.mean() - q * se), min(1.0, y.mean() + q * se),
                         confidence_level, n, m, CENSUS, None, se)
    ppi = _ppi_py()
    alpha = 1 - confidence_level
    # lam=None tunes lambda from the annotator's variance; a constant annotator has none (0 / 0): any
    # lambda then gives the same estimate, and plain PPI (lambda = 1) is used
    lam = None if np.var(np.concatenate([yhat, rest])) > 0 else 1.0
    with np.errstate(all="ignore"):
        lo, hi = ppi.ppi_mean_ci(y, yhat, rest, alpha=alpha, lam=lam)
        value = float(np.ravel(ppi.ppi_mean_pointestimate(y, yhat, rest, lam=lam))[0])
    lo, hi = float(np.ravel(lo)[0]), float(np.ravel(hi)[0])
    se = (hi - lo) / (2 * float(stats.norm.ppf(0.5 + confidence_level / 2)))
    return Corrected(value, max(0.0, lo), min(1.0, hi), confidence_level, n, m, SHARE, None, se)


def error_rate(n_errors: int, n: int, *, confidence_level: float = 0.95) -> dict:
    """An annotator's error rate measured on ``n`` people-labelled images: ``{"rate", "low", "high",
    "n", "n_errors"}`` with the Wilson interval (statsmodels ``proportion_confint``); rate None for n = 0."""
    if n <= 0:
        return {"rate": None, "low": None, "high": None, "n": 0, "n_errors": 0}
    low, high = proportion_confint(int(n_errors), int(n), alpha=1 - confidence_level, method="wilson")
    return {"rate": n_errors / n, "low": float(low), "high": float(high), "n": int(n), "n_errors": int(n_errors)}


def labels_needed(se: float, se_census: float, n_human: int, n_population: int, half_width: float,
                  confidence_level: float = 0.95) -> int | None:
    """People-labelled images needed for a corrected interval of half-width ``half_width``, from a
    pilot: its corrected standard error ``se`` at ``n_human`` labels of ``n_population`` images and
    ``se_census``, the error people's labels of every image would leave. The estimator's variance is
    ``se_census^2 + (1 - n / N) s^2 / n`` (the images' noise, then the sample's: a random sample of
    ``n`` of ``N`` images), ``s^2`` read from the pilot; solved for ``n``. None when even a census
    would be wider (more images are needed, not labels); ``n_population`` when only a census reaches it."""
    if half_width <= 0:
        raise ValueError(f"the half-width must be positive, got {half_width}")
    n0, big_n = int(n_human), int(n_population)
    if n0 >= big_n or n0 < 2 or not (math.isfinite(se) and math.isfinite(se_census)):
        return None
    s2 = max(se**2 - se_census**2, 0.0) / ((1 - n0 / big_n) / n0)  # the sample's part, per label
    q = float(stats.norm.ppf(0.5 + confidence_level / 2))
    room = (half_width / q) ** 2 - se_census**2
    if room <= 0:
        return None
    if s2 == 0:
        return MIN_HUMAN_LABELS
    n = s2 / (room + s2 / big_n)
    return int(min(big_n, max(MIN_HUMAN_LABELS, math.ceil(n))))


def allocate(sizes: Mapping[str, int], n: int, rng: np.random.Generator) -> dict[str, int]:
    """Images to draw from each stratum for ``n`` in all: proportional to its size, the remainders
    given to the largest fractions (ties in random order), never more than a stratum holds."""
    total = sum(sizes.values())
    n = min(int(n), total)
    if n <= 0 or total == 0:
        return {k: 0 for k in sizes}
    keys = list(sizes)
    quota = np.array([sizes[k] * n / total for k in keys])
    base = np.floor(quota).astype(int)
    left = n - int(base.sum())
    order = sorted(range(len(keys)), key=lambda i: (-(quota[i] - base[i]), rng.random()))
    for i in order[:left]:
        base[i] += 1
    return {k: int(min(b, sizes[k])) for k, b in zip(keys, base)}
