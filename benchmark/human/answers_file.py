"""The answers file of a run folder, ``RUN_DIR/human_labels/answers.jsonl``: appending an
event and reading every valid one (the events: :mod:`benchmark.human.events`).

Why an event log: every click is one append, so nothing already answered can be lost by a
crash, a closed browser or a killed server, and two annotators never rewrite each other's
lines. Each append is one ``os.write`` of the whole line on a file opened with
``O_APPEND``, under an exclusive lock (``filelock`` on ``answers.jsonl.lock``: an flock the
kernel releases when a process dies), then ``fsync``. A torn last line (power
loss mid-write) is ignored on read and the next append starts on a fresh line.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from benchmark.contract.atomic import fsync_dir
from benchmark.contract.run_folder import HUMAN_LABELS_DIR
from benchmark.human.events import EVENT_FIELDS, MAX_LINE_BYTES, encode_event, parse_lines, validate_event

LABELS_DIR = HUMAN_LABELS_DIR
ANSWERS_FILE = "answers.jsonl"


def labels_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / LABELS_DIR


def answers_path(run_dir: str | Path) -> Path:
    return labels_dir(run_dir) / ANSWERS_FILE


def answers_lock(path: Path):
    """The lock writers and readers of an answers file take (``filelock``: an flock on a file
    beside it, released by the kernel when a process dies)."""
    from filelock import FileLock

    return FileLock(path.with_name(path.name + ".lock"))


def _open_for_append(run_dir: str | Path) -> int:
    """The answers file opened for appending (created with its folder if needed); hold
    :func:`answers_lock` while writing."""
    path = answers_path(run_dir)
    new_dir = not path.parent.is_dir()
    path.parent.mkdir(parents=True, exist_ok=True)
    if new_dir:
        fsync_dir(path.parent.parent)
    return os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)  # read: to check the last byte


def write_line(fd: int, data: bytes) -> None:
    """Append ``data`` (the lock is held) so that it starts on a line of its own, then fsync."""
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        data = b"\n" + data  # a torn line was left by a killed writer: keep it on its own (ignored) line
    written = os.write(fd, data)
    while written < len(data):  # only on an unusual file system; the lock keeps it contiguous
        written += os.write(fd, data[written:])
    os.fsync(fd)


def read_lines(fd_path: Path) -> tuple[list[dict], dict[str, int]]:
    """Parsed valid events of the file and the number of lines skipped by reason (torn or malformed)."""
    if not fd_path.is_file():
        return [], {}
    with answers_lock(fd_path), open(fd_path, "rb") as fh:
        raw = fh.read()
    return parse_lines(raw)


@contextmanager
def locked_for_append(run_dir: str | Path) -> Iterator[int]:
    """The answers file opened for appending, under :func:`answers_lock` (closed on leaving)."""
    with answers_lock(answers_path(run_dir)):
        fd = _open_for_append(run_dir)
        try:
            yield fd
        finally:
            os.close(fd)


def skipped_text(skipped: dict[str, int]) -> str:
    """``"3 lines skipped (2 not JSON, 1 too long)"``, or "" when none were."""
    total = sum(skipped.values())
    if not total:
        return ""
    why = ", ".join(f"{n} {reason}" for reason, n in sorted(skipped.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{total} line{'s' if total != 1 else ''} of {ANSWERS_FILE} skipped ({why})"


def append_event(run_dir: str | Path, event: dict) -> dict:
    """Validate ``event`` and append it to RUN_DIR's answers file at once (locked, fsynced); returns it."""
    ev = validate_event(event)
    data = encode_event(ev)
    if len(data) > MAX_LINE_BYTES:  # never write a line that readers would skip
        raise ValueError(f"an event must encode to at most {MAX_LINE_BYTES} bytes, got {len(data)}")
    with locked_for_append(run_dir) as fd:
        write_line(fd, data)
    return ev


def read_events(run_dir: str | Path) -> pd.DataFrame:
    """Every valid event in file order (columns ``EVENT_FIELDS``).

    ``attrs["skipped_lines"]`` counts the other lines by reason (:data:`SKIP_REASONS`),
    ``attrs["ignored_lines"]`` is their total.
    """
    events, skipped = read_lines(answers_path(run_dir))
    df = pd.DataFrame(events, columns=list(EVENT_FIELDS))
    df.attrs["skipped_lines"] = skipped
    df.attrs["ignored_lines"] = sum(skipped.values())
    return df


def event_records(run_dir) -> list[dict]:
    return read_lines(answers_path(run_dir))[0]
