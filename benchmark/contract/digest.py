"""The sha256 of a file or of bytes, as hex: the one way the run folder, the label files, the
Hub uploads and the request store compute it (``hashlib.file_digest`` for a file, which reads
it in chunks)."""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["file_sha256", "sha256_hex"]


def file_sha256(path: str | Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
