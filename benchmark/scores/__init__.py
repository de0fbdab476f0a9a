"""What the papers' formulas share, as plain functions over arrays and tables: bootstrap
intervals (``bootstrap``), input checks (``validation``), the score-metadata registry
(``metadata``), agreement statistics (``agreement``), the CLIP existence estimators the
annotators use (``existence``) and the Monk Skin Tone swatches (``skin_tone``).

Each paper's own formulas live in its folder, ``benchmark/tasks/<paper>/scores.py``. Each
function validates its inputs and raises ``ValueError`` with what is wrong. ``metrics/``
copies them into ``evaluate`` modules; the task scorers call them directly.
"""

from benchmark.scores.bootstrap import ConfidenceInterval, bootstrap_ci
from benchmark.scores.metadata import SCORE_METADATA, ScoreMetadata, get_metadata

__all__ = ["ConfidenceInterval", "SCORE_METADATA", "ScoreMetadata", "bootstrap_ci", "get_metadata"]
