"""Ranks from the bootstrap intervals: the rank each model can claim for sure (its *bound
rank*), the ranks its interval allows (its *rank range*, as Chatbot Arena shows ranks) and the
models tied with the leader. Pure functions; the leaderboard (:mod:`board_table`) says which
models are ranked together (not demo rows; scores made against another reference apart).

For one score, each model's interval is turned into an interval of *badness*
(:meth:`benchmark.scores.metadata.ScoreMetadata.badness`: the value for lower-is-better scores,
minus it for higher-is-better ones, the distance to the ideal for "closest to x" scores; an
interval holding the ideal starts at 0). A value without an interval counts as a zero-width one.
Among the N models ranked together:

- **bound rank** (:func:`bound_ranks`) = 1 + the number of models whose *worse* end is better than
  this model's worse end: models ordered by how bad they can plausibly be (the upper bound of a
  lower-is-better score, the lower bound of a higher-is-better one: "rank by the lower bound").
  It tells every model apart, leaders included, and it never lets a model lead on a lucky but
  uncertain value: a wide interval ranks by its worse end. Equal ends share a rank.
- **rank range** (:func:`rank_ranges`): best = 1 + the number of models whose interval is entirely
  better; worst = the number of models whose interval is not entirely worse (this one included).
  When every interval holds its model's true value, every model's true rank lies in its range.
- **tied with the leader** (:func:`leader_group`): the models whose range starts at 1 (no model is
  surely better): the group the audit cannot tell from the best.
- **tier** (:func:`tiers`): tier 1 is the group tied with the leader; tier k holds the models that
  only models of tiers 1 to k-1 are surely better than (their interval entirely better), i.e. the
  longest chain of surely-better models above a model is k-1 long. When every interval holds its
  model's true value, a model of tier k has at least k-1 models truly better than it. Tiers read
  at any size: at 10,000 models the range of the leader spans hundreds of ranks, its tier is "1".
- **value rank** (:func:`value_ranks`) and **conservative rank** (:func:`conservative_ranks`): the
  position by the value, and by the worse end (ties of the worse end, e.g. intervals clipped at a
  score's limit, broken by the value); equal keys share a rank.

What these claim is checked by simulation where the truth is known
(``tests/test_leaderboard_ranks.py``; ``docs/leaderboard.md`` gives the figures).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Iterable, Mapping

import numpy as np

from benchmark.scores.metadata import ScoreMetadata

TIE_MARK = "≈"


@dataclass(frozen=True)
class RankRange:
    best: int
    worst: int

    @property
    def tied(self) -> bool:
        return self.worst > self.best

    def text(self) -> str:
        """``"3"``, or ``"3–7 ≈"`` for a model tied with others (ranks 3 to 7)."""
        return f"{self.best}–{self.worst} {TIE_MARK}" if self.tied else str(self.best)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def badness_intervals(meta: ScoreMetadata, values, lows=None, highs=None) -> tuple[np.ndarray, np.ndarray]:
    """The intervals of badness (smaller is better) of ``values`` and their intervals (arrays; a
    missing or non-finite bound counts as the value)."""
    values = np.asarray(values, dtype=float)
    lows = values if lows is None else np.where(np.isfinite(np.asarray(lows, dtype=float)), lows, values)
    highs = values if highs is None else np.where(np.isfinite(np.asarray(highs, dtype=float)), highs, values)
    lows, highs = np.minimum(lows, values), np.maximum(highs, values)
    a, b = meta.badness(lows), meta.badness(highs)
    best, worse = np.minimum(a, b), np.maximum(a, b)
    if meta.lower_is_better is None:  # an interval holding the ideal value starts at 0
        ideal = meta.ideal or 0.0
        best = np.where((lows <= ideal) & (ideal <= highs), 0.0, best)
    return best, worse


def badness_interval(meta: ScoreMetadata, value: float, low=None, high=None) -> tuple[float, float]:
    """The interval of badness (smaller is better) of one value and its interval."""
    best, worse = badness_intervals(meta, [value], [low if _finite(low) else np.nan],
                                    [high if _finite(high) else np.nan])
    return float(best[0]), float(worse[0])


def rank_range_arrays(best_ends, worse_ends) -> tuple[np.ndarray, np.ndarray]:
    """(best, worst) rank of each model ranked together, from their badness intervals (arrays)."""
    lows, highs = np.asarray(best_ends, dtype=float), np.asarray(worse_ends, dtype=float)
    better = np.searchsorted(np.sort(highs), lows, side="left")  # others' worst end < my best end
    not_worse = np.searchsorted(np.sort(lows), highs, side="right")  # others' best end <= my worst end
    return better + 1, not_worse


def rank_ranges(intervals: Iterable[tuple[Hashable, tuple[float, float]]]) -> dict[Hashable, RankRange]:
    """Key -> rank range, from (key, badness interval) pairs of the models ranked together."""
    items = list(intervals)
    if not items:
        return {}
    best, worst = rank_range_arrays([lo for _, (lo, _) in items], [hi for _, (_, hi) in items])
    return {key: RankRange(int(b), int(w)) for (key, _), b, w in zip(items, best, worst)}


def bound_ranks(worse_ends) -> np.ndarray:
    """The bound rank of each model ranked together, from the worse ends of their badness
    intervals: 1 + the number of models whose worse end is smaller (ties share a rank)."""
    worse_ends = np.asarray(worse_ends, dtype=float)
    return np.searchsorted(np.sort(worse_ends), worse_ends, side="left") + 1


def value_ranks(badness) -> np.ndarray:
    """1 + the number of models whose badness (of the value) is smaller: ties share a rank."""
    badness = np.asarray(badness, dtype=float)
    return np.searchsorted(np.sort(badness), badness, side="left") + 1


def conservative_ranks(worse_ends, badness) -> np.ndarray:
    """1 + the number of models better by (worse end, then value): the bound rank with its ties
    broken by the value (many intervals clipped at a score's limit share a worse end); models
    equal in both share a rank."""
    worse_ends, badness = np.asarray(worse_ends, dtype=float), np.asarray(badness, dtype=float)
    order = np.lexsort((badness, worse_ends))
    w, b = worse_ends[order], badness[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (w[1:] != w[:-1]) | (b[1:] != b[:-1])
    first = np.maximum.accumulate(np.where(new, np.arange(len(order)), 0))  # first position of each tie
    out = np.empty(len(order), dtype=int)
    out[order] = first + 1
    return out


def tiers(best_ends, worse_ends) -> np.ndarray:
    """The tier of each model ranked together, from its badness interval (best end, worse end):
    1 + the length of the longest chain of models each surely better than the next (a model is
    surely better than another when its worse end is better than the other's best end) above it.
    Tier 1: no model is surely better (tied with the leader). O(n log n)."""
    best_ends, worse_ends = np.asarray(best_ends, dtype=float), np.asarray(worse_ends, dtype=float)
    order = np.argsort(worse_ends, kind="stable")
    # models surely better than model i: those whose worse end is below i's best end, a prefix of ``order``
    above = np.searchsorted(worse_ends[order], best_ends[order], side="left")
    out = np.zeros(len(order), dtype=int)
    best_so_far = np.zeros(len(order) + 1, dtype=int)  # the highest tier among the first k of ``order``
    for p, (i, k) in enumerate(zip(order.tolist(), above.tolist())):  # k <= p: they come before it
        out[i] = best_so_far[k] + 1
        best_so_far[p + 1] = max(best_so_far[p], out[i])
    return out


def leader_group(ranges: Mapping[Hashable, RankRange]) -> list[Hashable]:
    """The models tied with the leader: those whose rank range starts at 1."""
    return [key for key, r in ranges.items() if r.best == 1]
