"""Where a results folder's contents table lives, and whether it already accepted a file:
``t2ibench validate`` (:func:`submissions.validate.already_accepted`) skips a file whose bytes a
table accepted with this package version's checks. Imports nothing of the leaderboard's (the
validator is below it)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

import benchmark
from benchmark.contract.digest import file_sha256

CONTENTS_FILE = "contents/contents.parquet"


def contents_path(root: str | Path) -> Path:
    return Path(root) / CONTENTS_FILE




_ACCEPTED: dict[tuple[str, int], dict[str, tuple]] = {}


def _accepted_rows(table: Path) -> dict[str, tuple]:
    """source -> (sha256, checked_with, problems, demo) of the table, read once per table version."""
    key = (str(table), table.stat().st_mtime_ns)
    if key not in _ACCEPTED:
        cols = pq.read_table(table, columns=["source", "sha256", "checked_with", "problems", "demo"]).to_pydict()
        _ACCEPTED.clear()
        _ACCEPTED[key] = {s: (cols["sha256"][i], cols["checked_with"][i], cols["problems"][i], cols["demo"][i])
                          for i, s in enumerate(cols["source"])}
    return _ACCEPTED[key]


def accepted_row(path: str | Path) -> tuple[Path, bool] | None:
    """(the table, demo) when a contents table of a folder above ``path`` holds ``path`` with its
    sha256, checked by this package version and without problems: the file need not be checked
    again. None otherwise (no table, no row, another file, other checks, problems)."""
    path = Path(path).resolve()
    if not path.is_file():
        return None
    for root in path.parents:
        table = contents_path(root)
        if not table.is_file():
            continue
        try:
            row = _accepted_rows(table).get(path.relative_to(root).as_posix())
        except Exception:  # an old or broken table: check the file
            return None
        if row is None:
            return None
        sha, checked_with, problems, demo = row
        if problems or checked_with != benchmark.__version__ or sha != file_sha256(path):
            return None
        return table, bool(demo)
    return None
