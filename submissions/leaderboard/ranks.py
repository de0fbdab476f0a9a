"""Rank ranges that respect the bootstrap intervals (as Chatbot Arena shows ranks).

For one score, each model's interval is turned into an interval of *badness*
(:meth:`benchmark.scores.metadata.ScoreMetadata.badness`: the value for lower-is-better
scores, minus it for higher-is-better ones, the distance to the ideal for "closest to x"
scores; an interval holding the ideal starts at 0). Then, among the models ranked together:

- **best rank** = 1 + the number of models whose interval is entirely better (its worst end is
  better than this model's best end);
- **worst rank** = the number of models whose interval is not entirely worse (this one included).

A model whose best and worst ranks differ is **tied** with some other model: their intervals
overlap, so the audit cannot order them. A value without an interval counts as a zero-width
interval. Pure functions: the leaderboard (:mod:`submissions.leaderboard.board_table`) says which
models are ranked together (not demo rows; scores made against another reference apart).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Iterable

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


def badness_interval(meta: ScoreMetadata, value: float, low=None, high=None) -> tuple[float, float]:
    """The interval of badness (smaller is better) of a value and its interval."""
    low = low if _finite(low) else value
    high = high if _finite(high) else value
    low, high = min(low, value), max(high, value)
    ends = sorted((meta.badness(float(low)), meta.badness(float(high))))
    if meta.lower_is_better is None and low <= (meta.ideal or 0.0) <= high:
        ends[0] = 0.0  # the interval holds the ideal value
    return ends[0], ends[1]


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
