"""The sha256 a file had when its stage wrote it, kept beside it (``<file>.sha256``).

Label files are what the scores read; a value edited afterwards, or a file written by
something else, would change a score without any other file noticing. Each one is hashed
when it is written; ``t2ibench verify`` and the score stage compare, and the annotate stage
computes a file again when it does not match (never trusts it).

Each batch's ``metadata.jsonl`` has the same kind of record, written by the runner into the
batch before it is renamed into place (``images/<batch>/metadata.sha256``,
:data:`benchmark.contract.run_folder.METADATA_RECORD`): an ``nsfw`` flag or a ``model_id``
edited in ``metadata.jsonl`` and the manifest alike no longer matches it.
"""

from __future__ import annotations

from pathlib import Path

from benchmark.contract.atomic import write_bytes_atomic
from benchmark.contract.digest import file_sha256

__all__ = ["SUFFIX", "sidecar_path", "file_sha256", "record_written", "written_hash_problem"]

SUFFIX = ".sha256"


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + SUFFIX)


def record_written(path: Path) -> str:
    """Record ``path``'s sha256 beside it (after the file itself is in place); returns it."""
    digest = file_sha256(path)
    write_bytes_atomic(sidecar_path(path), (digest + "\n").encode("ascii"))
    return digest


def written_hash_problem(path: Path, record: Path | None = None) -> str | None:
    """Why ``path`` is not the file its stage wrote (None when its sha256 matches the record,
    ``record`` or by default ``<file>.sha256`` beside it)."""
    side = sidecar_path(path) if record is None else record
    try:
        recorded = side.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return f"has no recorded sha256 ({side.name} is missing: written by something else, or the record deleted)"
    except (OSError, UnicodeDecodeError):
        return f"its recorded sha256 ({side.name}) cannot be read"
    try:
        actual = file_sha256(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if actual != recorded:
        return f"bytes do not match the sha256 recorded in {side.name} when it was written: the file was edited"
    return None
