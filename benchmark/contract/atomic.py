"""Atomic file writes: write beside the target, fsync, then ``os.replace``.

A crash (or ``kill -9``) at any moment leaves either the old file or the new one,
never a truncated one. Every stage that writes into a run folder uses these.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` (fsynced). The
    temporary name holds the process and thread, so two writers of one file (two workers'
    threads rebuilding the leaderboard contents) never rename each other's half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def fsync_dir(path: str | Path) -> None:
    """fsync a directory, so that a rename or a new file in it survives a power loss
    (best effort: some file systems refuse to open or fsync directories)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        Path(tmp).write_bytes(data)
    return Path(path)
