"""Metadata of every score: the report, the results schema and the leaderboard read it from
:data:`SCORE_METADATA` (as HELM's MetricMetadata, but a score never needs it to run).

Each paper's scores are declared in its task folder (``benchmark/tasks/<paper>/metadata.py``)
and registered from its ``task.py``'s ``REGISTRATIONS`` (a plugin's with
:func:`benchmark.registries.register_score`). :data:`SCORE_METADATA` is the registry of
:mod:`benchmark.registries` (re-exported here): its first lookup loads the task folders.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from benchmark.papers import paper_label
from benchmark.registries import SCORE_METADATA

__all__ = ["ScoreMetadata", "SCORE_METADATA", "column_group", "get_metadata"]


@dataclass(frozen=True, kw_only=True)
class ScoreMetadata:
    """What the report, the results schema and the leaderboard say about a score (keywords only)."""

    name: str
    display_name: str
    description: str
    paper: str  # key in benchmark.papers.PAPERS
    min_value: float
    max_value: float
    # True: lower is better; False: higher is better; None: closer to ``ideal`` is better.
    lower_is_better: bool | None
    ideal: float | None = None
    unit: str = ""
    headline: bool = False  # shown as a leaderboard column
    # Categories a score is defined over when its definition fixes them (PST's STS is binary by
    # definition: a perceived gender matches the stereotype or not); None when the probe
    # config's groups decide (GEP, DALL-Eval MAD).
    categories: tuple[str, ...] | None = None
    # Its estimate is an absolute value (or a mean of absolute values): near 0 the percentile
    # bootstrap is biased upward, so its interval may miss the estimate (with a ci_note saying so).
    absolute_value: bool = False
    # Other suites whose images its ``n`` may count (MCAS pairs target and attribute images).
    spans: tuple[str, ...] = ()
    # The leaderboard's column group (and the terminal table's section); "" = the paper's short name.
    column_group: str = ""

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("min_value", "max_value"):
            if math.isinf(d[k]):
                d[k] = None  # JSON has no infinity
        return d

    def in_range(self, value: float) -> bool:
        return self.min_value - 1e-9 <= value <= self.max_value + 1e-9

    @property
    def distance_from_ideal(self) -> bool:
        """Whether it is judged by its distance from its ideal value (closer to it is better, and
        moving past it is no improvement): its badness folds at the ideal."""
        return self.lower_is_better is None and self.ideal is not None

    def badness(self, value: float) -> float:
        """Sort key: smaller is better, whatever the direction of the score."""
        if self.lower_is_better is True:
            return value
        if self.lower_is_better is False:
            return -value
        return abs(value - (self.ideal or 0.0))


def column_group(name: str, paper: str = "") -> str:
    """The column group of score ``name`` on the leaderboard (and its section of the terminal
    table): its ``column_group``, else its paper's short name; ``paper``'s for an unknown score."""
    meta = SCORE_METADATA.get(str(name))
    return (meta.column_group or paper_label(meta.paper)) if meta else (paper_label(paper) if paper else "Other")


def get_metadata(name: str) -> ScoreMetadata:
    if name not in SCORE_METADATA:
        raise ValueError(f"no metadata for score {name!r}; known: {', '.join(SCORE_METADATA)}")
    return SCORE_METADATA[name]
