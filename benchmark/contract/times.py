"""Times: the one "now" of the package and its one parser. Every time the package writes is
aware UTC, in one of three forms, one function each:

* :func:`utc_iso`: ISO 8601 to the second, ``2026-11-24T09:30:00Z``, for documents (results.json's
  ``created``, run_config.json's ``created``, a submission's ``submitted_at``);
* :func:`utc_iso_ms`: ISO 8601 to the millisecond, ``2026-11-24T09:30:00.125Z``, for records whose
  order within a second matters (a labelling event's ``time``, a request's heartbeat);
* :func:`utc_compact`: ``20261124T093000Z``, for file names (a results file's name, a damaged
  label file set aside).

:func:`parse_iso_time` reads any ISO 8601 time back, so files written before these forms were
fixed (``+00:00`` or ``+0100`` offsets, local times with an offset) still read.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

__all__ = ["utc_now", "utc_iso", "utc_iso_ms", "utc_compact", "parse_iso_time", "utc_time_or_none"]


def utc_now() -> _dt.datetime:
    """Now, aware, in UTC."""
    return _dt.datetime.now(_dt.timezone.utc)


def _utc(when: _dt.datetime | None) -> _dt.datetime:
    """``when`` (now when None) in UTC; ValueError for a naive time, whose zone is unknown."""
    if when is None:
        return utc_now()
    if when.tzinfo is None:
        raise ValueError(f"{when.isoformat()} has no UTC offset")
    return when.astimezone(_dt.timezone.utc)


def utc_iso(when: _dt.datetime | None = None) -> str:
    """``when`` (now) as ISO 8601 UTC to the second, e.g. ``2026-11-24T09:30:00Z``: for documents."""
    return _utc(when).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_iso_ms(when: _dt.datetime | None = None) -> str:
    """``when`` (now) as ISO 8601 UTC to the millisecond, e.g. ``2026-11-24T09:30:00.125Z``: for
    records ordered within a second (events, heartbeats)."""
    t = _utc(when)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def utc_compact(when: _dt.datetime | None = None) -> str:
    """``when`` (now) as ``20261124T093000Z``: for file names."""
    return _utc(when).strftime("%Y%m%dT%H%M%SZ")


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
