"""Strict, bounded reading of JSON written by others (results files, queue requests): nesting
depth scanned before parsing (linear, no recursion), UTF-8, integers of bounded digits, no NaN
or infinity, no duplicate keys; a refused value is named by its JSON path.

Light on purpose (numpy only): the queue's readers run in the command line's light paths.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

__all__ = ["MAX_INT_DIGITS", "MAX_NUMBER_CHARS", "RefusedJson", "json_depth", "load_bounded_json"]

MAX_INT_DIGITS = 20  # every count, seed and size fits in 64 bits
MAX_NUMBER_CHARS = 64  # a float Python writes is at most ~25 characters


class _Rejected:
    """What a parse hook returns for a value it refuses; located afterwards by :func:`_first_rejected`."""

    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason


class _DuplicateKeys(dict):
    """An object that had a key twice (the last value kept, as json does, until refused)."""

    key: str = ""


_JSON_ESCAPE = re.compile(rb"\\.", re.DOTALL)  # a backslash and the character it escapes
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_QUOTE = ord('"')
_BRACKET_STEP = np.zeros(256, dtype=np.int8)
_BRACKET_STEP[list(b"[{")] = 1
_BRACKET_STEP[list(b"]}")] = -1
_DEPTH_CHUNK = 1 << 22


def json_depth(data: bytes) -> int:
    """Deepest nesting of arrays / objects in JSON text, in linear time and without recursion.

    Escapes are dropped, then everything but quotes and brackets; a bracket nests only
    outside a string (after an even number of quotes). Vectorised: 46 MB take about a second.
    """
    skeleton = (_JSON_ESCAPE.sub(b"", data) if b"\\" in data else data).translate(None, _NOT_STRUCTURE)
    depth = deepest = quotes = 0
    for start in range(0, len(skeleton), _DEPTH_CHUNK):
        chunk = np.frombuffer(skeleton, dtype=np.uint8, count=min(_DEPTH_CHUNK, len(skeleton) - start), offset=start)
        is_quote = chunk == _QUOTE
        outside = ((np.cumsum(is_quote, dtype=np.int64) + quotes) & 1) == 0
        quotes += int(is_quote.sum())
        steps = _BRACKET_STEP[chunk[outside & ~is_quote]]
        if len(steps):
            running = np.cumsum(steps, dtype=np.int64) + depth
            deepest, depth = max(deepest, int(running.max())), int(running[-1])
    return deepest


class _StrictHooks:
    """json.loads hooks for one read: refused values become markers (so that their JSON path
    can be named afterwards) and ``seen`` says whether the document needs that search."""

    def __init__(self) -> None:
        self.seen = False

    def _reject(self, reason: str) -> _Rejected:
        self.seen = True
        return _Rejected(reason)

    def parse_int(self, text: str) -> int | _Rejected:
        digits = len(text.lstrip("-"))
        if digits > MAX_INT_DIGITS:  # int() of 5,000 digits would raise; of 4,000 it would be slow
            return self._reject(f"an integer of {digits} digits (at most {MAX_INT_DIGITS})")
        return int(text)

    def parse_float(self, text: str) -> float | _Rejected:
        if len(text) > MAX_NUMBER_CHARS:
            return self._reject(f"a number written with {len(text)} characters (at most {MAX_NUMBER_CHARS})")
        value = float(text)
        if not math.isfinite(value):
            return self._reject(f"{text} overflows to infinity")
        return value

    def parse_constant(self, text: str) -> _Rejected:
        return self._reject(f"{text} is not valid JSON (use null)")

    def object_pairs(self, pairs: list) -> dict:
        out = dict(pairs)
        if len(out) != len(pairs):
            self.seen = True
            seen: set = set()
            dup = next(k for k, _ in pairs if k in seen or seen.add(k))
            out = _DuplicateKeys(out)
            out.key = dup
        return out


def _shown_key(key: str) -> str:
    """A key as printable ASCII (JSON escapes for anything else: no control or direction character)."""
    return key if key.isascii() and key.isprintable() else json.dumps(key)[1:-1]


def _first_rejected(doc: Any) -> tuple[str, str] | None:
    """(JSON path, reason) of the first refused value in document order, or None."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, _Rejected):
            return where or "(top level)", node.reason
        if isinstance(node, _DuplicateKeys):
            return where or "(top level)", f"the key '{_shown_key(node.key)}' appears twice in one object"
        if isinstance(node, dict):
            children = [(f"{where}/{_shown_key(k)}" if where else _shown_key(k), v) for k, v in node.items()]
        elif isinstance(node, list):
            children = [(f"{where}/{i}" if where else str(i), v) for i, v in enumerate(node)]
        else:
            continue
        stack.extend(reversed(children))
    return None


class RefusedJson(ValueError):
    """Why JSON bytes were not read (one line); ``refused``: over a limit or a value the strict
    reader refuses, not merely broken text."""

    def __init__(self, reason: str, refused: bool = True) -> None:
        super().__init__(reason)
        self.reason, self.refused = reason, refused


def load_bounded_json(data: bytes, max_depth: int) -> Any:
    """The JSON document in ``data``, read by the strict rules every reader of files written by
    others shares (results, requests): nesting depth scanned before parsing, UTF-8, integers
    of bounded digits, no NaN or infinity, no duplicate keys. Anything else is RefusedJson."""
    depth = json_depth(data)
    if depth > max_depth:
        raise RefusedJson(f"nested {depth} levels deep (at most {max_depth})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RefusedJson(f"not UTF-8 text ({exc.reason} at byte {exc.start})", refused=False) from None
    hooks = _StrictHooks()
    try:
        doc = json.loads(text, object_pairs_hook=hooks.object_pairs, parse_int=hooks.parse_int,
                         parse_float=hooks.parse_float, parse_constant=hooks.parse_constant)
    except json.JSONDecodeError as exc:
        raise RefusedJson(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", refused=False) from None
    except (RecursionError, MemoryError, ValueError) as exc:  # the depth scan should have stopped it first
        raise RefusedJson(f"cannot be parsed ({type(exc).__name__})") from None
    if hooks.seen:
        where, reason = _first_rejected(doc) or ("(top level)", "refused")
        raise RefusedJson(f"{where}: {reason}")
    return doc
