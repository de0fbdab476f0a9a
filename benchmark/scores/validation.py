"""Input checks shared by every score: one clear ``ValueError`` per problem."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np


def as_float_array(name: str, values: Any, *, ndim: int = 1, allow_nan: bool = False) -> np.ndarray:
    """``values`` as a float64 array of ``ndim`` dimensions, non-empty, finite unless ``allow_nan``."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numbers: {exc}") from None
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not allow_nan and not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr.reshape(-1)))[0])
        raise ValueError(f"{name} contains NaN or infinite values (first at flat index {bad})")
    return arr


def as_str_array(name: str, values: Any) -> np.ndarray:
    """``values`` as a 1-D object array of str, non-empty, no None / NaN."""
    if isinstance(values, str):
        raise ValueError(f"{name} must be a list of strings, not one string")
    # a pandas column converts in one call; iterating pandas' Arrow strings (pandas 3's default)
    # costs a Python call per element
    to_numpy = getattr(values, "to_numpy", None)
    arr = to_numpy(dtype=object) if callable(to_numpy) else np.asarray(list(values), dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a flat list of strings")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if not set(map(type, arr)) <= {str}:  # the types in C; the loop below only for what is not plain str
        for i, v in enumerate(arr):
            if not isinstance(v, str):
                raise ValueError(f"{name}[{i}] is {v!r}; expected a string")
    return arr


def check_same_length(**arrays: Sequence) -> int:
    """All arrays have one length; returns it."""
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k}={n}" for k, n in lengths.items())
        raise ValueError(f"inputs must have the same length, got {desc}")
    return next(iter(lengths.values()))


def check_in(name: str, values: Iterable[str], allowed: Iterable[str]) -> None:
    """Every value is one of ``allowed``."""
    allowed = list(allowed)
    allowed_set = set(allowed)
    for i, v in enumerate(values):
        if v not in allowed_set:
            raise ValueError(f"{name}[{i}] is {v!r}; expected one of {allowed}")


def check_binary_or_probability(name: str, arr: np.ndarray) -> None:
    """Values in [0, 1] (0/1 labels or probabilities)."""
    if np.any((arr < 0) | (arr > 1)):
        bad = arr[(arr < 0) | (arr > 1)][0]
        raise ValueError(f"{name} must lie in [0, 1] (labels 0/1 or probabilities), got {bad}")
