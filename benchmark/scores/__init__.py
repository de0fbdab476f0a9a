"""Every formula of the five papers as plain functions over arrays and tables.

Each function validates its inputs and raises ``ValueError`` with what is wrong.
``metrics/`` wraps these as ``evaluate`` modules; ``runner`` calls them directly.
"""

from benchmark.scores.bootstrap import ConfidenceInterval, bootstrap_ci
from benchmark.scores.metadata import SCORE_METADATA, ScoreMetadata, get_metadata

__all__ = ["ConfidenceInterval", "SCORE_METADATA", "ScoreMetadata", "bootstrap_ci", "get_metadata"]
