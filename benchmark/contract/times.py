"""Reading an ISO 8601 time: the one parser of the results' ``created``, the requests' times and
the labelling events' ``time``."""

from __future__ import annotations

import datetime as _dt
from typing import Any

__all__ = ["parse_iso_time", "utc_time_or_none"]


def parse_iso_time(value: Any) -> _dt.datetime:
    """``value`` as a datetime (aware when it has an offset; a trailing ``Z`` is UTC); ValueError
    when it is not an ISO 8601 time (a number, None or a dict included)."""
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not an ISO 8601 time")
    return _dt.datetime.fromisoformat(value)


def utc_time_or_none(value: Any) -> _dt.datetime | None:
    """:func:`parse_iso_time` made aware (a time without an offset is read as UTC), or None when
    ``value`` is not an ISO 8601 time: for sorting and tables, where an unreadable time is not fatal."""
    try:
        t = parse_iso_time(value)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)
