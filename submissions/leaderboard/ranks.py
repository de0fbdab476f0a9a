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


def rank_ranges(intervals: Iterable[tuple[Hashable, tuple[float, float]]]) -> dict[Hashable, RankRange]:
    """Key -> rank range, from (key, badness interval) pairs of the models ranked together."""
    items = list(intervals)
    if not items:
        return {}
    lows = np.array([lo for _, (lo, _) in items], dtype=float)
    highs = np.array([hi for _, (_, hi) in items], dtype=float)
    sorted_lows, sorted_highs = np.sort(lows), np.sort(highs)
    better = np.searchsorted(sorted_highs, lows, side="left")  # others' worst end < my best end
    not_worse = np.searchsorted(sorted_lows, highs, side="right")  # others' best end <= my worst end
    return {key: RankRange(int(b) + 1, int(w)) for (key, _), b, w in zip(items, better, not_worse)}


def bound_ranks(worse_ends) -> np.ndarray:
    """The bound rank of each model ranked together, from the worse ends of their badness
    intervals: 1 + the number of models whose worse end is smaller (ties share a rank)."""
    worse_ends = np.asarray(worse_ends, dtype=float)
    return np.searchsorted(np.sort(worse_ends), worse_ends, side="left") + 1


def leader_group(ranges: Mapping[Hashable, RankRange]) -> list[Hashable]:
    """The models tied with the leader: those whose rank range starts at 1."""
    return [key for key, r in ranges.items() if r.best == 1]
