"""Plain Python values from numpy / pandas ones, for JSON files and fingerprints."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["flag_array", "plain_value"]


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


def flag_array(column: pd.Series) -> np.ndarray:
    """A flag column (bools, 0/1, with gaps) as a bool array, a missing flag False. The same on
    pandas 2 and 3: ``fillna(False)`` on an object column warns on pandas 2 that it will stop
    downcasting."""
    present = column.notna().to_numpy()
    out = np.zeros(len(column), dtype=bool)
    out[present] = column[present].astype(bool).to_numpy()
    return out
