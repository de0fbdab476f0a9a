"""The answer events of the annotation app: their fields and checks, and one line of the answers file.

``RUN_DIR/human_labels/answers.jsonl`` (:mod:`benchmark.human.answers_file`) holds one JSON
event per line::

    {"event": "answer" | "skip" | "undo", "item_id", "probe_id", "suite", "question_type",
     "question_key", "question", "answer", "annotator", "time", "qualification", "session"
     [, "image_sha256"]}

``image_sha256`` (optional: files written before it existed lack it) is the sha256 of the image
the annotator was shown, as the run's manifest recorded it then: an answer about an image that
has since been regenerated is refused for correction (:mod:`benchmark.human.correction_labels`).

Reading never trusts the file: a line longer than ``MAX_LINE_BYTES`` is skipped before it
is parsed, JSON nested too deeply, duplicate keys, wrong fields, types or values are
skipped too, and every skipped line is counted by reason (:func:`parse_lines`; the
``attrs["skipped_lines"]`` of ``answers_file.read_events`` and ``replay.read_answers``), so
one bad line never stops a reader.
"""

from __future__ import annotations

import json

from benchmark.contract.times import parse_iso_time, utc_iso_ms
from benchmark.human import questions as q
from benchmark.human.question_types import QUESTION_TYPES

EVENTS = ("answer", "skip", "undo")
#: Fields of every event, in the order they are written.
EVENT_FIELDS = ("event", "item_id", "probe_id", "suite", "question_type", "question_key", "question", "answer",
                "annotator", "time", "qualification", "session")
#: Fields an event may carry besides :data:`EVENT_FIELDS` (written after them when present).
OPTIONAL_EVENT_FIELDS = ("image_sha256",)
MAX_NAME_LENGTH = 100
#: Longest line read from (or written to) the answers file; an event is well under 8 KiB.
MAX_LINE_BYTES = 64 * 1024
#: Reasons a line of the answers file is skipped (keys of ``attrs["skipped_lines"]``).
SKIP_REASONS = ("too long", "not UTF-8", "not JSON", "nested too deeply", "duplicate keys", "not an event",
                "unknown item")

_STR_FIELDS = ("item_id", "probe_id", "suite", "question_type", "question_key", "question", "annotator", "time",
               "session")


def check_annotator(name) -> str:
    """The annotator name stripped; a one-line ``ValueError`` if it is empty, too long or has control characters."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError("the annotator name must be a non-empty string")
    name = name.strip()
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"the annotator name must be at most {MAX_NAME_LENGTH} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise ValueError("the annotator name must not contain control characters")
    return name


def validate_event(event: dict) -> dict:
    """The event with defaults filled (time, qualification, session); one-line ``ValueError`` if malformed."""
    if not isinstance(event, dict):
        raise ValueError(f"an event must be a dict, got {type(event).__name__}")
    unknown = set(event) - set(EVENT_FIELDS) - set(OPTIONAL_EVENT_FIELDS)
    if unknown:
        raise ValueError(f"unknown event fields {sorted(unknown)}; expected {list(EVENT_FIELDS)}")
    ev = {"time": utc_iso_ms(), "qualification": False, "session": "", "answer": None, **event}
    missing = [f for f in EVENT_FIELDS if f not in ev]
    if missing:
        raise ValueError(f"event lacks {missing}")
    if ev["event"] not in EVENTS:
        raise ValueError(f"event must be one of {list(EVENTS)}, got {ev['event']!r}")
    for f in _STR_FIELDS:
        if not isinstance(ev[f], str):
            raise ValueError(f"event field {f!r} must be a string, got {ev[f]!r}")
    if not ev["item_id"]:
        raise ValueError("event field 'item_id' must not be empty")
    ev["annotator"] = check_annotator(ev["annotator"])
    if ev["question_type"] not in QUESTION_TYPES:
        raise ValueError(f"question_type must be one of {list(QUESTION_TYPES)}, got {ev['question_type']!r}")
    if not isinstance(ev["qualification"], bool):
        raise ValueError(f"event field 'qualification' must be true or false, got {ev['qualification']!r}")
    if ev["event"] == "answer":
        allowed = q.OPTION_VALUES[ev["question_type"]]
        if ev["answer"] not in allowed:
            raise ValueError(f"answer {ev['answer']!r} is not valid for a {ev['question_type']} question; "
                             f"expected one of {list(allowed)}")
    elif ev["answer"] is not None:
        raise ValueError(f"a {ev['event']} event carries no answer, got {ev['answer']!r}")
    try:
        parse_iso_time(ev["time"])
    except ValueError:
        raise ValueError(f"event field 'time' must be an ISO 8601 time, got {ev['time']!r}") from None
    sha = ev.get("image_sha256")
    if sha is not None and not (isinstance(sha, str) and len(sha) == 64 and all(c in "0123456789abcdef" for c in sha)):
        raise ValueError(f"event field 'image_sha256' must be a lower-case sha256 hex digest, got {sha!r}")
    out = {f: ev[f] for f in EVENT_FIELDS}
    if sha is not None:
        out["image_sha256"] = sha
    return out


def encode_event(event: dict) -> bytes:
    return (json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _DuplicateKey("duplicate keys")
    return out


def parse_line(line: bytes) -> tuple[dict | None, str | None]:
    """One line of the answers file as ``(event, None)``, or ``(None, reason)`` if it is skipped."""
    if len(line) > MAX_LINE_BYTES:
        return None, "too long"  # checked before decoding: a huge line costs no parsing
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8"
    try:
        raw_event = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey:
        return None, "duplicate keys"
    except RecursionError:
        return None, "nested too deeply"
    except ValueError:  # JSONDecodeError, or an integer over Python's digit limit
        return None, "not JSON"
    try:
        if not isinstance(raw_event, dict) or not set(EVENT_FIELDS) <= set(raw_event) <= set(EVENT_FIELDS) | set(
                OPTIONAL_EVENT_FIELDS):
            raise ValueError("not a complete event")
        return validate_event(raw_event), None
    except (ValueError, TypeError):
        return None, "not an event"


def parse_lines(raw: bytes) -> tuple[list[dict], dict[str, int]]:
    """The valid events of the file's bytes and the number of skipped lines by reason."""
    events, skipped = [], {}
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        event, reason = parse_line(line)
        if event is None:
            skipped[reason] = skipped.get(reason, 0) + 1
        else:
            events.append(event)
    return events, skipped
