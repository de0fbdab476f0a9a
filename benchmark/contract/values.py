"""Plain Python values from numpy / pandas ones, for JSON files and fingerprints."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["plain_value"]


def plain_value(value: Any) -> Any:
    """A JSON-ready Python value: numpy scalars/arrays unwrapped, NaN/NA -> None."""
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return [plain_value(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain_value(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is pd.NA or value is pd.NaT:
        return None
    return value
