"""Reading an ISO 8601 time: the one parser of the results' ``created``, the requests' times and
the labelling events' ``time``."""

from __future__ import annotations

import datetime as _dt
from typing import Any

__all__ = ["parse_iso_time"]


def parse_iso_time(value: Any) -> _dt.datetime:
    """``value`` as a datetime (aware when it has an offset; a trailing ``Z`` is UTC); ValueError
    when it is not an ISO 8601 time (a number, None or a dict included)."""
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not an ISO 8601 time")
    return _dt.datetime.fromisoformat(value)
