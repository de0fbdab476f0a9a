"""The ``contents`` table: every results file of a results folder as one flat, typed row of one
parquet file (``DIR/contents/contents.parquet``; its columns: :mod:`contents_schema`), which the
leaderboard reads in one read, with nothing to parse, and the Hub's dataset viewer sorts and
filters (the Open LLM Leaderboard's "contents" dataset does the same). The per-model JSON files
stay the source of truth: the table is rebuilt from them (``t2ibench leaderboard build-contents
DIR``, and by the worker after each result it posts to a folder), **incrementally**: a file whose
size and modification time are those of its row is not opened; one whose bytes have the sha256
of its row (touched, not changed) is hashed but not parsed; only new and changed files, and
files checked by another package version, are read and checked. The rows kept are taken from the
old table as they are (arrow columns, never made into Python objects), so adding one file to
10,000 costs listing the folder, one read and check, and writing the table.

``datasets.load_dataset("parquet", data_files="DIR/contents/contents.parquet", split="train")``
loads it too; ``DIR/contents/README.md`` is its card (the columns, described, and why demo rows
are filtered out).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import benchmark
from benchmark.contract.atomic import atomic_path
from benchmark.contract.results import RESULTS_FILE
from benchmark.contract.run_folder import CONFIG_FILE
from benchmark.present.progress import progress_bar
from submissions.leaderboard import board_model, contents_schema as cs, results_files
from submissions.leaderboard.accepted import CONTENTS_FILE, contents_path, file_sha256  # noqa: F401 (re-exported)
from submissions.leaderboard.board_index import Board, BoardIndex, concat, table_of

CARD_FILE = "contents/README.md"


@dataclass
class BuildStats:
    """What a rebuild did: files kept without opening, hashed (touched), read (parsed), rows
    dropped (their file is gone), and entries refused (links leaving the folder, not regular
    files: ``refused`` names them); what the table holds: ``rows`` (one per row key among the
    valid files: what the board shows), ``conflicts`` (the other valid files of a key, listed as
    conflicts, never shown) and ``skipped`` (files with problems)."""

    kept: int = 0
    hashed: int = 0
    read: int = 0
    dropped: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)
    rows: int = 0
    conflicts: int = 0
    skipped: int = 0


class OldTable(ValueError):
    """A contents table without the columns this version reads (written by an older version)."""


def read_table(path: str | Path) -> pa.Table:
    """The table at ``path`` in one read; :class:`OldTable` when it lacks a column this version reads."""
    table = pq.read_table(path)
    missing = set(cs.READ_COLUMNS) - set(table.schema.names)
    if missing:
        raise OldTable(f"{path}: a contents table of an older version (no {', '.join(sorted(missing))})")
    changed = sorted(n for n, kind in cs.READ_TYPES.items() if table.schema.field(n).type != kind)
    if changed:  # a column whose type this version changed (a struct with another field): rebuilt
        raise OldTable(f"{path}: a contents table of an older version ({', '.join(changed)} of another type)")
    return table


def _is_run_results(path: Path) -> bool:
    return path.name == RESULTS_FILE and (path.parent / CONFIG_FILE).is_file()


def _record(f: results_files.Listed, sha: str, reader: Callable) -> tuple[dict[str, Any], Any]:
    """(the row of file ``f``, its submission or None) read and checked by ``reader`` (the
    package's one results reader; the app's keeps what it read, a rebuild's does not)."""
    parsed = reader(f.path)
    problems = tuple(parsed.problems) or (() if parsed.doc is not None else ("not read",))
    run_folder = _is_run_results(f.path)
    rec: dict[str, Any] = {"source": f.rel, "sha256": sha, "size": f.size, "mtime_ns": f.mtime_ns,
                           "problems": list(problems), "checked_with": benchmark.__version__,
                           "run_folder": run_folder}
    sub = None
    if parsed.doc is not None and not problems:
        sub = board_model.Submission(doc=parsed.doc, source=f.rel, path=f.path,
                                     run_dir=f.path.parent if run_folder else None)
        rec.update(cs.cells(sub))
    return rec, sub


@dataclass
class Update:
    """The rows of a folder now: ``kept`` (positions in the old table), their new signatures where
    only the times changed (``touched``), the rows read again (``records``, and the submissions of
    the valid ones, by position among them)."""

    kept: list[int] = field(default_factory=list)
    touched: dict[int, tuple[int, int]] = field(default_factory=dict)
    records: list[dict] = field(default_factory=list)
    subs: dict[int, Any] = field(default_factory=dict)


def _old_rows(old: pa.Table | None) -> tuple[dict[str, int], list, list, list, list]:
    if old is None:
        return {}, [], [], [], []
    cols = [old.column(c).to_pylist() for c in ("source", "size", "mtime_ns", "sha256", "checked_with")]
    return {s: i for i, s in enumerate(cols[0])}, *cols[1:]


def _uncached(path: Path):
    return results_files.read_and_check(path, (-1, -1))


def updated(old: pa.Table | None, listing: results_files.Listing, stats: BuildStats, *, progress: bool = False,
            reader: Callable = _uncached) -> Update:
    """Compare the files of ``listing`` with the rows of ``old`` (see the module docstring); a
    file to read is read by ``reader`` (:func:`results_files.parsed_file` in the app: cached)."""
    pos, sizes, mtimes, shas, checked = _old_rows(old)
    up = Update()
    with progress_bar(len(listing.files), "contents table", unit="file", enabled=progress) as bar:
        for f in listing.files:
            i = pos.get(f.rel)
            current = i is not None and checked[i] == benchmark.__version__
            if current and (sizes[i], mtimes[i]) == f.signature:
                stats.kept += 1
                up.kept.append(i)
                bar.update(1)
                continue
            sha = file_sha256(f.path)
            if current and shas[i] == sha:
                stats.hashed += 1  # touched, not changed
                up.kept.append(i)
                up.touched[i] = f.signature
            else:
                stats.read += 1
                rec, sub = _record(f, sha, reader)
                if sub is not None:
                    up.subs[len(up.records)] = sub
                up.records.append(rec)
            bar.update(1)
    listed = {f.rel for f in listing.files}
    stats.dropped = sum(1 for s in pos if s not in listed)
    stats.refused = list(listing.refused)
    return up


def _kept_rows(old: pa.Table, up: Update) -> pa.Table:
    kept = old.take(pa.array(up.kept, type=pa.int64()))
    if up.touched:
        where = {i: j for j, i in enumerate(up.kept)}
        for col, part in (("size", 0), ("mtime_ns", 1)):
            values = kept.column(col).to_numpy().copy()
            for i, sig in up.touched.items():
                values[where[i]] = sig[part]
            kept = kept.set_column(kept.schema.get_field_index(col), col, pa.array(values, type=pa.int64()))
    return kept


def _old_table(out: Path) -> pa.Table | None:
    if not out.is_file():
        return None
    try:
        return read_table(out)
    except OldTable:  # rebuilt from the files
        return None


def build_contents(root: str | Path, stats: BuildStats | None = None, *, progress: bool = False) -> tuple[Path, int]:
    """Bring the table of ``root`` up to date with its files (incrementally, see the module
    docstring) and write it, with its card, atomically (readers see the old table or the new
    one). Returns (its path, rows)."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root} is not a folder of results files")
    stats = stats if stats is not None else BuildStats()
    out = contents_path(root)
    old = _old_table(out)
    up = updated(old, results_files.list_results(root), stats, progress=progress)
    table = concat([_kept_rows(old, up) if old is not None else None, table_of(up.records)])
    table = table.take(pc.sort_indices(table, [("source", "ascending")]))
    with atomic_path(out) as tmp:
        pq.write_table(table, tmp)
    card = root / CARD_FILE
    with atomic_path(card) as tmp:
        Path(tmp).write_text(cs.card_text(cs.present_scores(table), cs.present_people(table)), encoding="utf-8")
    problems = pc.list_value_length(table.column("problems")).to_numpy(zero_copy_only=False) if len(table) else []
    stats.skipped = int(np.count_nonzero(problems))
    valid = table.num_rows - stats.skipped
    stats.rows = len(pc.unique(_valid(table).column("key"))) if valid else 0  # files that share a key: one row
    stats.conflicts = valid - stats.rows
    return out, table.num_rows


# --------------------------------------------------------------------------- the board from the table


def _skipped(table: pa.Table) -> list[board_model.Skipped]:
    rows = table.select(["source", "problems"]).to_pylist()
    return [board_model.Skipped(r["source"], (r["problems"] or ["not read"])[0], len(r["problems"] or [1]))
            for r in rows]


def _valid(table: pa.Table) -> pa.Table:
    return table.filter(pc.equal(pc.list_value_length(table.column("problems")), 0))


def _invalid(table: pa.Table) -> pa.Table:
    return table.filter(pc.greater(pc.list_value_length(table.column("problems")), 0))


def _recheck_future(table: pa.Table) -> pa.Table:
    """``table`` with the rows refused only for a time "in the future" marked for reading again
    (time may have made them valid)."""
    flat = pc.list_flatten(table.column("problems"))
    if not len(flat) or not pc.any(pc.match_substring(flat, results_files.FUTURE)).as_py():
        return table
    stale = {int(i) for i in pc.list_parent_indices(table.column("problems")).filter(
        pc.match_substring(flat, results_files.FUTURE)).to_pylist()}
    checked = [None if i in stale else v for i, v in enumerate(table.column("checked_with").to_pylist())]
    return table.set_column(table.schema.get_field_index("checked_with"), "checked_with",
                            pa.array(checked, type=pa.string()))


def _from_files(root: Path, table: pa.Table, board: Board,
                listing: results_files.Listing | None = None) -> tuple[pa.Table, pa.Table, dict]:
    """(valid rows, invalid rows, submissions by position among the valid rows): the table's rows
    brought up to date with the files under ``root`` (a file changed since the table is read with
    the app's cached reader: once per change, not once per reload)."""
    listing = listing if listing is not None else results_files.list_results(root)
    board.skipped += results_files.refused_files(listing)
    up = updated(_recheck_future(table), listing, BuildStats(), reader=results_files.parsed_file)
    kept, fresh = _kept_rows(table, up), table_of(up.records)
    kept_valid = _valid(kept)
    fresh_valid = [j for j, rec in enumerate(up.records) if not rec["problems"]]
    made = {kept_valid.num_rows + k: up.subs[j] for k, j in enumerate(fresh_valid)}
    return concat([kept_valid, _valid(fresh)]), concat([_invalid(kept), _invalid(fresh)]), made


def load_board(root: str | Path, source: str | None = None, *, files_present: bool = True,
               listing: results_files.Listing | None = None) -> Board:
    """The board of ``root`` from its contents table (one read), or from the files when it has none.

    With ``files_present`` (a local folder) the files are listed, never read, unless one is
    not in the table or differs from its row (size and modification time, then sha256): that
    one is read and checked. Without it (the table alone, downloaded from a Hub results
    dataset) the rows are the board. ``listing``: the folder's listing when the caller has just made
    it (:func:`results_files.list_results`: it is not made again). A table of an older version is not used (the files are
    read; from a Hub dataset :class:`OldTable` is raised). Submissions made from the table hold
    the slim document (``doc["slim"]``): :func:`full_document` reads the whole file for the
    detail view.
    """
    root = Path(root)
    table_path = contents_path(root)
    if not table_path.is_file():
        return results_files.load_folder(root, source, listing=listing)
    try:
        table = read_table(table_path)
    except OldTable:
        if not files_present:
            raise  # a Hub dataset: its JSON files are downloaded instead
        return results_files.load_folder(root, source, listing=listing)
    board = Board(source=source or str(root))
    if files_present:
        valid, invalid, made = _from_files(root, table, board, listing)
    else:
        valid, invalid, made = _valid(table), _invalid(table), {}
    board.skipped = _skipped(invalid) + board.skipped
    board.index = BoardIndex(valid, root=root, made=made)
    return board


@dataclass(frozen=True)
class ContentsRow:
    """One row of a table, for a look at it: its file, the problems found, and the slim document
    (None for a file with problems)."""

    source: str
    problems: tuple[str, ...]
    document: dict | None


def read_contents(path: str | Path) -> dict[str, ContentsRow]:
    """The rows of the table at ``path`` by source (all made: a look at a table, not the board)."""
    table = read_table(path)
    names = cs.present_scores(table)
    return {rec["source"]: ContentsRow(rec["source"], tuple(rec["problems"] or ()),
                                       None if rec["problems"] else cs.slim_document(rec, names))
            for rec in table.to_pylist()}


def download_contents(repo: str, revision: str | None = None) -> Path | None:
    """The folder holding the contents table of Hub results dataset ``repo`` (one file
    downloaded), or None when the dataset has no table (then the JSON files are read)."""
    from huggingface_hub import hf_hub_download

    try:
        path = hf_hub_download(repo, CONTENTS_FILE, repo_type="dataset", revision=revision)
    except Exception:  # no table, offline, no such dataset: reading the JSON files says which, in one line
        return None
    return Path(path).parent.parent


def full_document(sub: board_model.Submission, repo: str | None = None,
                  revision: str | None = None) -> board_model.Submission:
    """``sub`` with its whole document (the detail view): itself when it holds it, else its file
    read again (a local folder) or downloaded alone (``hf_hub_download``, a Hub results dataset).
    A file that cannot be had leaves the slim document (the view then shows what it has)."""
    if not sub.doc.get("slim"):
        return sub
    try:
        path = sub.path
        if repo is not None:
            from huggingface_hub import hf_hub_download

            path = Path(hf_hub_download(repo, sub.source, repo_type="dataset", revision=revision))
        doc = results_files.load_results_file(path, max_bytes=results_files.MAX_FILE_BYTES)
    except Exception:  # offline, gone, refused: the slim document is what there is
        return sub
    return replace(sub, doc=doc)
