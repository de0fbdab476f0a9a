"""The paired randomization test of a difference between two audits, for any score.

Two audits of the same probes made by the same model are, probe by probe, exchangeable: with the
images made from the probe's own seed (or drawn alike), nothing tells run A's labels of a probe
from run B's. So the difference of any score between the runs can be tested exactly by swapping
A and B within random probes and recomputing the difference (a paired randomization test; Fisher
1935, Sec. 21; Good, *Permutation Tests*, 2005, Sec. 3.1): under no change every swap is as
likely as the observed split, whatever the score (a MAD over ten tones with two images per
prompt, a score near its floor, cells of one image). Where no probe is in both runs (unpaired),
the probes' run labels are permuted within the score's strata instead (each stratum keeps how
many probes each run has there).

How: both runs are scored *together* (``t2ibench compare`` builds one table of both runs' rows,
each probe id tagged with its run, :func:`tag`), with a :class:`JointPlan` active. The tasks' own
scoring code runs once on that table and calls :func:`benchmark.scores.bootstrap.bootstrap_ci`
with the rows' probe keys as always; under the plan the statistic is evaluated (:class:`JointDraws`)

* on each run's own rows (the run's value: checked against the run scored alone);
* on the paired Poisson resamples of each run (:class:`benchmark.scores.bootstrap.ResamplePlan`,
  the same weights a probe gets in both runs): the interval of the size of a change;
* on swaps: in swap j, probe k's rows of A go to B' and B's to A' when a bit fixed by
  (random state, probe id, j) is set; or, unpaired, a permutation of the probes' run labels
  within strata. :meth:`JointDraws.extend` adds swaps (the comparison adds them where a p-value
  is near a decision).

The statistic must be defined on any subset of the table's rows (a cell with no row is left
out): the tasks' statistics are.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from benchmark.scores.bootstrap import CHUNK, ConfidenceInterval, ResamplePlan, mix_hash

__all__ = ["CopyPlan", "JointDraws", "JointPlan", "PairDraws", "PairsPlan", "RUN_TAG", "SIDES", "copy_tag", "pair_tag",
           "split_tags", "tag"]

#: joins a probe id and its run's side in the joint table ("<probe id>\x1fa")
RUN_TAG = "\x1f"
SIDES = ("a", "b")
#: salt of the swaps' random bits (the resamples use attempts 0..MAX_REDRAWS)
_SWAP_SALT = 0x5EED5
_NO_SIDE = -1


def tag(probe_ids: Sequence, side: str) -> list[str]:
    """The probe ids of one run (``side`` "a" or "b") as the joint table holds them."""
    return [f"{p}{RUN_TAG}{side}" for p in probe_ids]


def split_tags(keys: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """(probe id, side: 0 for A, 1 for B, -1 for a row of neither run) of each key."""
    probes, sides = [], []
    for k in keys:
        text = str(k)
        probe, sep, side = text.rpartition(RUN_TAG)
        if sep and side in SIDES:
            probes.append(probe)
            sides.append(SIDES.index(side))
        else:  # a row both runs share (a fixed reference image): in both sides, never swapped
            probes.append(text)
            sides.append(_NO_SIDE)
    return np.asarray(probes, dtype=object), np.asarray(sides, dtype=np.int8)


def _evaluate(statistic: Callable[[np.ndarray], float], rows: np.ndarray) -> float:
    try:
        return float(statistic(rows))
    except (ValueError, ZeroDivisionError, FloatingPointError, IndexError, KeyError):
        return float("nan")


@dataclass
class JointPlan:
    """What a joint scoring of two runs evaluates (see the module doc): ``n_resamples`` paired
    Poisson resamples and ``n_permutations`` swaps (``paired``) or permutations within strata
    (unpaired), all fixed by ``random_state`` and the probe ids."""

    n_resamples: int = 1000
    n_permutations: int = 1000
    random_state: int = 0
    paired: bool = True
    def __post_init__(self) -> None:
        if self.n_resamples < 2 or self.n_permutations < 1:
            raise ValueError(f"a joint plan needs at least 2 resamples and 1 permutation, got {self.n_resamples} "
                             f"and {self.n_permutations}")

    def interval(self, statistic: Callable[[np.ndarray], float], n: int, strata: Sequence | None, keys: Sequence,
                 confidence_level: float = 0.95) -> ConfidenceInterval:
        """The draws of ``statistic`` (a :class:`JointDraws` in ``resamples``); the interval itself
        is the comparison's to make."""
        draws = JointDraws(self, statistic, n, strata, keys)
        return ConfidenceInterval(float("nan"), float("nan"), confidence_level, self.n_resamples,
                                  "joint draws of two runs", resamples=draws, design=draws.design)


class JointDraws:
    """One statistic evaluated on two runs' rows of the joint table: ``value`` (A, B), ``boot``
    (each run's paired resamples, ``n_resamples`` x 2), ``perm`` (A', B' on each swap or
    permutation, grows with :meth:`extend`), ``design`` (each run's strata and strata holding
    one probe). Not a dataclass: ``ConfidenceInterval.to_dict`` would turn it into a dict."""

    def __init__(self, plan: JointPlan, statistic: Callable[[np.ndarray], float], n: int, strata: Sequence | None,
                 keys: Sequence):
        self.plan, self.statistic, self.n, self.strata, self.keys = plan, statistic, n, strata, keys
        if len(self.keys) != self.n:
            raise ValueError(f"keys has {len(self.keys)} entries for {self.n} rows")
        probes, self.side = split_tags(self.keys)
        uniq, self.unit = np.unique(probes.astype(str), return_inverse=True)
        self.unit = self.unit.reshape(-1)
        self.unit_hash = ResamplePlan(2, self.plan.random_state).probe_hashes(uniq)
        labels = np.zeros(self.n, np.int64) if self.strata is None else \
            np.unique(np.asarray(self.strata), return_inverse=True)[1].reshape(-1)
        self.stratum = labels
        self.rows = tuple(np.flatnonzero((self.side == s) | (self.side == _NO_SIDE)) for s in (0, 1))
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.value = np.array([_evaluate(self.statistic, r) for r in self.rows])
            self.boot = np.column_stack([self._resampled(r) for r in self.rows])
        resampler = ResamplePlan(2, self.plan.random_state)
        self.design = {side: resampler.design(probes[r], labels[r]) if len(r) else {"strata": 0, "single": 0}
                       for side, r in zip(SIDES, self.rows)}
        self.units = int(len(uniq))
        self._unit_strata = self._probe_strata() if not self.plan.paired else None
        self.perm = np.empty((0, 2))
        self.extend(self.plan.n_permutations)

    def __deepcopy__(self, memo):  # ConfidenceInterval.to_dict copies its fields: the draws are shared
        return self

    def _resampled(self, rows: np.ndarray) -> np.ndarray:
        """The statistic on the plan's paired resamples of one run's rows."""
        plan = ResamplePlan(self.plan.n_resamples, self.plan.random_state)
        out = np.full(self.plan.n_resamples, np.nan)
        if not len(rows):
            return out
        keys = np.asarray(split_tags(np.asarray(self.keys, dtype=object)[rows])[0])
        strata = self.stratum[rows]
        for start in range(0, self.plan.n_resamples, CHUNK):
            chunk = np.arange(start, min(start + CHUNK, self.plan.n_resamples))
            for b, w in zip(chunk, plan.row_weights(keys, strata, chunk)):
                out[b] = _evaluate(self.statistic, np.repeat(rows, w))
        return out

    def _probe_strata(self) -> np.ndarray:
        """Unpaired: each probe's stratum (the set of strata its rows are in), as a code."""
        pairs = np.unique(np.column_stack([self.unit, self.stratum]), axis=0)  # sorted by unit
        bounds = np.flatnonzero(np.diff(pairs[:, 0])) + 1
        seen: dict[tuple, int] = {}
        out = np.zeros(self.units, np.int64)
        for group in np.split(pairs, bounds):
            out[group[0, 0]] = seen.setdefault(tuple(group[:, 1]), len(seen))
        return out

    def _bits(self, first: int, count: int) -> np.ndarray:
        """(count x units) random 64-bit draws of swaps ``first``..``first + count - 1``."""
        j = np.arange(first, first + count, dtype=np.uint64)
        with np.errstate(over="ignore"):
            base = mix_hash(np.uint64(self.plan.random_state) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(_SWAP_SALT))
            return mix_hash(self.unit_hash[None, :] ^ mix_hash(base + j * np.uint64(0x9E3779B97F4A7C15))[:, None])

    def _sides(self, draws: np.ndarray) -> np.ndarray:
        """Per draw and unit: 1 where the unit's runs are exchanged (paired) or where the unit
        goes to B' (unpaired: a permutation of the units' run labels within their strata)."""
        if self.plan.paired:
            return (draws >> np.uint64(63)).astype(np.int8)
        side_of_unit = np.zeros(self.units, np.int8)
        side_of_unit[self.unit[self.side == 1]] = 1
        out = np.empty(draws.shape, np.int8)
        for s in np.unique(self._unit_strata):
            members = np.flatnonzero(self._unit_strata == s)
            n_b = int(side_of_unit[members].sum())
            order = np.argsort(draws[:, members], axis=1, kind="stable")
            assigned = np.zeros((draws.shape[0], len(members)), np.int8)
            np.put_along_axis(assigned, order[:, :n_b], 1, axis=1)
            out[:, members] = assigned
        return out

    def extend(self, total: int) -> None:
        """Evaluate swaps (or permutations) until ``total`` have been made."""
        done = len(self.perm)
        if total <= done:
            return
        more = np.full((total - done, 2), np.nan)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for start in range(done, total, CHUNK):
                count = min(CHUNK, total - start)
                sides = self._sides(self._bits(start, count))
                for i, row_side in enumerate(sides[:, self.unit]):
                    own = self.side if self.plan.paired else np.zeros_like(self.side)
                    to_b = (own ^ row_side).astype(bool) if self.plan.paired else row_side.astype(bool)
                    shared = self.side == _NO_SIDE
                    a_rows = np.flatnonzero(~to_b | shared)
                    b_rows = np.flatnonzero(to_b | shared)
                    more[start - done + i] = (_evaluate(self.statistic, a_rows), _evaluate(self.statistic, b_rows))
        self.perm = np.vstack([self.perm, more])


def copy_tag(probe_ids: Sequence, copy: int) -> list[str]:
    """The probe ids of copy ``copy`` of an audit in a table of many (:class:`CopyPlan`)."""
    # as an object array first: pandas' Arrow strings iterate one Python call per element (8x slower)
    return [f"{p}{RUN_TAG}{copy}" for p in np.asarray(probe_ids, dtype=object)]


@dataclass
class CopyPlan:
    """Many audits (``copies``) of one design scored in one pass: their rows stacked in one table,
    each probe id tagged with its copy (:func:`copy_tag`). Under the plan a statistic is
    evaluated on each copy's rows alone: the interval carries the ``copies`` values (NaN where a
    copy has no row), so one scoring of the table gives every copy's scores (the plan's
    simulations, :mod:`benchmark.runner.simulate`)."""

    copies: int

    def interval(self, statistic: Callable[[np.ndarray], float], n: int, strata: Sequence | None, keys: Sequence,
                 confidence_level: float = 0.95) -> ConfidenceInterval:
        copy = np.asarray([int(str(k).rpartition(RUN_TAG)[2] or -1) if RUN_TAG in str(k) else -1 for k in keys])
        order = np.argsort(copy, kind="stable")
        bounds = np.searchsorted(copy[order], np.arange(self.copies + 1))
        values = np.full(self.copies, np.nan)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for c in range(self.copies):
                rows = np.sort(order[bounds[c]:bounds[c + 1]])
                if len(rows):
                    values[c] = _evaluate(statistic, rows)
        return ConfidenceInterval(float("nan"), float("nan"), confidence_level, self.copies, "copies of an audit",
                                  resamples=values)


class PairDraws:
    """The :class:`JointDraws` of one statistic in each of many pairs of runs (:class:`PairsPlan`)."""

    def __init__(self, draws: list):
        self.draws = draws

    def __deepcopy__(self, memo):
        return self


def pair_tag(probe_ids: Sequence, pair: int, side: str) -> list[str]:
    """The probe ids of run ``side`` ("a" or "b") of pair ``pair`` in a table of many pairs."""
    return [f"{p}{RUN_TAG}{pair}{side}" for p in probe_ids]


@dataclass
class PairsPlan:
    """Many pairs of runs (``pairs``) scored together in one pass: every row's probe id tagged with
    its pair and run (:func:`pair_tag`); each statistic gets, per pair, the :class:`JointDraws` of
    ``joint`` on that pair's rows alone (a :class:`PairDraws`). The calibration's simulations
    compare hundreds of pairs of audits this way (:mod:`benchmark.calibration`)."""

    pairs: int
    joint: JointPlan

    def interval(self, statistic: Callable[[np.ndarray], float], n: int, strata: Sequence | None, keys: Sequence,
                 confidence_level: float = 0.95) -> ConfidenceInterval:
        heads, tails = [], []
        for k in keys:
            head, sep, tail = str(k).rpartition(RUN_TAG)
            heads.append(head if sep else str(k))
            tails.append(tail if sep else "")
        pair = np.asarray([int(t[:-1]) if t[:-1].isdigit() and t[-1:] in SIDES else -1 for t in tails])
        retagged = np.asarray([f"{h}{RUN_TAG}{t[-1]}" if p >= 0 else h for h, t, p in zip(heads, tails, pair)],
                              dtype=object)
        labels = None if strata is None else np.asarray(strata)
        out = []
        for r in range(self.pairs):
            rows = np.flatnonzero((pair == r) | (pair == -1))
            plan = JointPlan(self.joint.n_resamples, self.joint.n_permutations, self.joint.random_state + r,
                             self.joint.paired)  # each pair its own swaps
            out.append(JointDraws(plan, lambda idx, rows=rows: statistic(rows[idx]), len(rows),
                                  None if labels is None else labels[rows], retagged[rows]))
        return ConfidenceInterval(float("nan"), float("nan"), confidence_level, self.joint.n_resamples,
                                  "joint draws of many pairs of runs", resamples=PairDraws(out))
