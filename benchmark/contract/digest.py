"""The sha256 of a file, of bytes or of a sequence of records, as hex: the one way the run folder,
the label files, the Hub uploads, the request store and the fingerprints (probes, supplied
images, reference datasets) compute it (``hashlib.file_digest`` for a file, which reads it in
chunks)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

__all__ = ["file_sha256", "sha256_hex", "sha256_hex_chunks"]


def file_sha256(path: str | Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_hex_chunks(chunks: Iterable[bytes]) -> str:
    """The sha256 of ``chunks`` joined end to end (fed one by one: a fingerprint over many records
    never holds them all), as hex; equal to ``sha256_hex(b"".join(chunks))``."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()
