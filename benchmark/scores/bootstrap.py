"""Bootstrap confidence intervals over images, used by every score.

None of the papers reports a confidence interval; a leaderboard without them ranks
noise. The statistic is any function of a set of row indices (so it can be a whole
score pipeline). Resampling is over rows (images), optionally within strata (for
example per prompt or per group x attribute cell): no row ever moves to another stratum.

Two designs, one per use (both resample within strata):

* **results.json's intervals** (:func:`bootstrap_ci` outside a plan): ``scipy.stats.bootstrap``
  with one sample per stratum, so every stratum keeps its size in every resample;
* **paired resamples** (``t2ibench compare``, inside ``with resample_plan(plan):``,
  :class:`ResamplePlan`; or a :class:`benchmark.scores.randomization.JointPlan`, which uses its
  weights): a Poisson bootstrap (Hanley & MacGibbon 2006). Each probe weighs a Poisson(1) draw
  that depends only on the probe, the resample number and ``random_state``, so two runs scored
  under one plan are resampled with the same probes, whichever rows each keeps (a face found in
  one run and not in the other). A stratum's size therefore varies between resamples (its
  expected size is kept); a stratum a draw leaves empty is drawn again, so every cell of the
  design stays non-empty.

In both designs a stratum holding one probe cannot vary: its statistic is the same in every
resample, so the resamples say nothing about its sampling noise (nor, for a plug-in such as a
MAD over ten tones with a few images per prompt, about most of it). The plan counts such strata
(:attr:`ConfidenceInterval.design`, ``{"strata": m, "single": k}``). ``t2ibench compare`` takes
its p-values from a paired randomization test instead (:mod:`benchmark.scores.randomization`),
which needs no resampling variation, and uses these resamples only for the interval of a
change, checked (:mod:`benchmark.compare.paired`).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
from dataclasses import asdict, dataclass, field
import warnings
from typing import Callable, Iterator, Sequence

import numpy as np
from scipy import stats


#: the key under which ``ConfidenceInterval.to_dict`` carries the planned resamples (popped by
#: :meth:`benchmark.tasks.context.ScoringContext.add`, never written to results.json)
PLANNED_RESAMPLES = "_planned_resamples"
#: beside them, the plan's count of strata and of strata holding one probe (``{"strata": m,
#: "single": k}``), popped with them
PLANNED_DESIGN = "_planned_design"
#: the active :class:`ResamplePlan` (:func:`resample_plan`), None outside one
_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("resample_plan", default=None)


@dataclass(frozen=True)
class ConfidenceInterval:
    low: float
    high: float
    confidence_level: float
    n_resamples: int
    method: str = "percentile bootstrap over images"
    #: the statistic on each resample of the active :class:`ResamplePlan` (None outside one)
    resamples: np.ndarray | None = field(default=None, compare=False, repr=False)
    #: with ``resamples``: ``{"strata": m, "single": k}``, the design's strata and those holding
    #: one probe (whose statistic no resample can vary)
    design: dict | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict:
        d = asdict(self)
        planned, design = d.pop("resamples"), d.pop("design")
        if planned is not None:  # popped again by ScoringContext.add: never written to results.json
            d[PLANNED_RESAMPLES] = planned
            d[PLANNED_DESIGN] = design
        return d

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
    keys: Sequence | None = None,
) -> ConfidenceInterval:
    """Bootstrap interval of ``statistic(indices)`` over ``n`` rows.

    ``statistic`` receives an integer array of row indices (with repeats) and returns
    a float. ``strata`` (one label per row) resamples within each stratum. A
    statistic that is undefined on some resamples (returns NaN) gives a NaN
    interval rather than a misleading one. ``method`` is scipy's: "percentile"
    (default), "basic" or "BCa" (bias-corrected, for statistics such as a mean of
    absolute differences whose resampling distribution is biased near 0; it costs
    one extra statistic call per row for the jackknife).

    ``keys`` (one probe id per row, optional) changes nothing outside a :func:`resample_plan`;
    inside one, the statistic is evaluated by the plan instead (``plan.interval``): a
    :class:`ResamplePlan` gives the percentile interval of its resamples and carries them in
    ``resamples`` (and the strata in ``design``); a joint plan of two runs
    (:class:`benchmark.scores.randomization.JointPlan`) carries its draws there.
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
    plan = _ACTIVE.get()
    if plan is not None and keys is not None:  # t2ibench compare: evaluated by the plan only
        return plan.interval(statistic, n, strata, keys, confidence_level)
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


# --------------------------------------------------------------------------- paired resampling

#: a stratum left empty by a resample is drawn again up to this many times, then kept as observed
MAX_REDRAWS = 8
#: resamples weighed at once (a (chunk x rows) matrix), so memory does not grow with n_resamples
CHUNK = 256
_POISSON_CDF = stats.poisson.cdf(np.arange(40), 1.0)
_M1, _M2, _GOLDEN = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(0x9E3779B97F4A7C15)


def mix_hash(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise on uint64 (wrapping arithmetic)."""
    x = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


@dataclass
class ResamplePlan:
    """``n_resamples`` paired resamples of probes: the multiplicity of probe ``k`` in resample
    ``b`` is a Poisson(1) draw that depends only on (``random_state``, ``k``, ``b``), so every
    score of every run scored under this plan sees the same resampled probes (paired), and two
    runs with no probe in common are resampled independently (unpaired). Strata: see the module
    doc (sizes vary, none is left empty)."""

    n_resamples: int = 1000
    random_state: int = 0
    _hashes: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.n_resamples < 2:
            raise ValueError(f"a resample plan needs at least 2 resamples, got {self.n_resamples}")
        if not 0 <= self.random_state < 2**63:
            raise ValueError(f"random_state must be a whole number in [0, 2**63), got {self.random_state}")

    def probe_hashes(self, keys: np.ndarray) -> np.ndarray:
        """A 64-bit hash of each probe key (blake2b of its text), memoised."""
        out = np.empty(len(keys), dtype=np.uint64)
        for i, k in enumerate(keys):
            h = self._hashes.get(k)
            if h is None:
                h = self._hashes[k] = int.from_bytes(hashlib.blake2b(str(k).encode(), digest_size=8).digest(), "little")
            out[i] = h
        return out

    def draw(self, hashes: np.ndarray, attempt: int = 0, resamples: np.ndarray | None = None) -> np.ndarray:
        """Multiplicities (len(resamples) x len(hashes)) of the probes with these key hashes."""
        b = np.arange(self.n_resamples, dtype=np.uint64) if resamples is None else resamples.astype(np.uint64)
        with np.errstate(over="ignore"):
            base = mix_hash(np.uint64(self.random_state) * _GOLDEN + np.uint64(attempt) * _M1)
            x = mix_hash(hashes[None, :] ^ mix_hash(base + b * _GOLDEN)[:, None])
        u = (x >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
        return np.searchsorted(_POISSON_CDF, u, side="right").astype(np.int64)

    @staticmethod
    def _codes(keys: Sequence, strata: Sequence | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(unique keys, key code of each row, stratum code of each row)."""
        uniq, code = np.unique(np.asarray([str(k) for k in keys], dtype=object), return_inverse=True)
        labels = np.zeros(len(code), dtype=np.int64) if strata is None else np.unique(
            np.asarray(strata), return_inverse=True)[1].reshape(-1)
        return uniq, code.reshape(-1), labels

    def row_weights(self, keys: Sequence, strata: Sequence | None = None,
                    resamples: np.ndarray | None = None) -> np.ndarray:
        """(resamples x rows) multiplicity of each row (its probe's), every stratum non-empty;
        ``resamples``: the resample numbers (default all)."""
        uniq, code, labels = self._codes(keys, strata)
        hashes = self.probe_hashes(uniq)
        b = np.arange(self.n_resamples) if resamples is None else np.asarray(resamples)
        weights = self.draw(hashes, 0, b)[:, code]
        if not len(labels):
            return weights
        n_strata = int(labels.max()) + 1

        def empty_rows() -> np.ndarray:  # (resamples x rows): the row's stratum is empty in that resample
            sums = np.zeros((len(b), n_strata), dtype=np.int64)
            np.add.at(sums.T, labels, weights.T)
            return (sums == 0)[:, labels]

        empty = empty_rows()
        for attempt in range(1, MAX_REDRAWS + 1):  # an emptied stratum is drawn again, whole
            if not empty.any():
                return weights
            redo = np.flatnonzero(empty.any(axis=1))
            again = self.draw(hashes, attempt, b[redo])[:, code]
            weights[redo] = np.where(empty[redo], again, weights[redo])
            empty = empty_rows()
        weights[empty] = 1  # still empty: the stratum as observed
        return weights

    def design(self, keys: Sequence, strata: Sequence | None = None) -> dict:
        """``{"strata": m, "single": k}``: the strata of the rows and those holding one probe
        (their statistic is the same in every resample)."""
        _, code, labels = self._codes(keys, strata)
        per_stratum = [np.unique(code[labels == s]).size for s in np.unique(labels)]
        return {"strata": len(per_stratum), "single": int(sum(1 for k in per_stratum if k < 2))}

    def evaluate(self, statistic: Callable[[np.ndarray], float], n: int, strata: Sequence | None,
                 keys: Sequence) -> np.ndarray:
        """``statistic`` on each resample (rows repeated by their probe's multiplicity); NaN where
        it is undefined. The weights are drawn :data:`CHUNK` resamples at a time."""
        if len(keys) != n:
            raise ValueError(f"keys has {len(keys)} entries for {n} rows")
        rows = np.arange(n)
        out = np.empty(self.n_resamples)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for start in range(0, self.n_resamples, CHUNK):
                chunk = np.arange(start, min(start + CHUNK, self.n_resamples))
                for b, w in zip(chunk, self.row_weights(keys, strata, chunk)):
                    try:
                        out[b] = float(statistic(np.repeat(rows, w)))
                    except (ValueError, ZeroDivisionError, FloatingPointError):
                        out[b] = np.nan
        return out

    def interval(self, statistic: Callable[[np.ndarray], float], n: int, strata: Sequence | None, keys: Sequence,
                 confidence_level: float = 0.95) -> ConfidenceInterval:
        """The percentile interval of ``statistic`` over the plan's resamples, carrying them and
        the design's strata."""
        planned = self.evaluate(statistic, n, strata, keys)
        tail = 100 * (1 - confidence_level) / 2
        low, high = (np.percentile(planned, [tail, 100 - tail]) if np.all(np.isfinite(planned))
                     else (float("nan"), float("nan")))
        return ConfidenceInterval(float(low), float(high), confidence_level, len(planned),
                                  "percentile paired Poisson bootstrap over probes", resamples=planned,
                                  design=self.design(keys, strata))


@contextlib.contextmanager
def resample_plan(plan: ResamplePlan) -> Iterator[ResamplePlan]:
    """Make ``plan`` active: :func:`bootstrap_ci` calls with ``keys=`` also evaluate it."""
    token = _ACTIVE.set(plan)
    try:
        yield plan
    finally:
        _ACTIVE.reset(token)


def active_plan() -> ResamplePlan | None:
    return _ACTIVE.get()
