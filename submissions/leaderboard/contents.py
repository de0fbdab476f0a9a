"""The ``contents`` table: every results file of a results folder as one flat, typed row of one
parquet file (``DIR/contents/contents.parquet``; its columns: :mod:`contents_schema`), which the
leaderboard reads in one read and the Hub's dataset viewer sorts and filters (the Open LLM
Leaderboard's "contents" dataset does the same). The per-model JSON files stay the source of
truth: the table is rebuilt from them (``t2ibench leaderboard build-contents DIR``, and by the
worker after each result it posts to a folder), **incrementally**: a file whose size and
modification time are those of its row is not opened; one whose bytes have the sha256 of its
row (touched, not changed) is hashed but not parsed; only new and changed files, and files
checked by another package version, are read and checked.

``datasets.load_dataset("parquet", data_files="DIR/contents/contents.parquet", split="train")``
loads it too; ``DIR/contents/README.md`` is its card (the columns, described).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import benchmark
from benchmark.contract.atomic import atomic_path
from benchmark.contract.results import RESULTS_FILE
from benchmark.contract.run_folder import CONFIG_FILE
from benchmark.present.progress import progress_bar
from submissions.leaderboard import contents_schema as cs
from submissions.leaderboard.accepted import CONTENTS_FILE, contents_path, file_sha256  # noqa: F401 (re-exported)
from submissions.leaderboard import board_model, results_files

CARD_FILE = "contents/README.md"


@dataclass(frozen=True)
class ContentsRow:
    """One row of the table as the board uses it (the typed columns stay in the parquet file)."""

    source: str
    signature: tuple[int, int]
    sha256: str
    document: dict | None  # the ``board`` column: slim for a valid file, whole otherwise
    problems: tuple[str, ...]
    run_folder: bool
    checked_with: str
    cells: dict | None = None  # the typed columns, for a row made by this process (written as is)


@dataclass
class BuildStats:
    """What a rebuild did: files kept without opening, hashed (touched) and read (parsed)."""

    kept: int = 0
    hashed: int = 0
    read: int = 0
    dropped: int = 0


def _signature(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def _is_run_results(path: Path) -> bool:
    return path.name == RESULTS_FILE and (path.parent / CONFIG_FILE).is_file()


def _uncached(path: Path):
    return results_files.read_and_check(path, _signature(path))


def _row_of_file(root: Path, path: Path, sha: str | None = None, reader=_uncached) -> ContentsRow:
    """``path`` read and checked by ``reader`` (the package's one results reader; the app's
    reader keeps what it read, a rebuild's does not), as a row."""
    signature = _signature(path)
    sha = sha or file_sha256(path)
    parsed = reader(path)
    problems = tuple(parsed.problems) or (() if parsed.doc is not None else ("not read",))
    rel = path.relative_to(root).as_posix()
    run_folder = _is_run_results(path)
    cells: dict[str, Any] = {}
    if parsed.doc is not None and not problems:
        sub = board_model.Submission(doc=parsed.doc, source=rel, path=path, run_dir=None)
        cells = {**cs.row_cells(sub), **cs.score_cells(parsed.doc)}
    board = cs.board_json(parsed.doc, valid=not problems)
    document = None if board is None else json.loads(board)
    return ContentsRow(rel, signature, sha, document, problems, run_folder, benchmark.__version__, cells)


def _current(row: ContentsRow) -> bool:
    return row.checked_with == benchmark.__version__


def updated_rows(root: Path, old: dict[str, ContentsRow], stats: BuildStats | None = None, *,
                 progress: bool = False, reader=_uncached) -> list[ContentsRow]:
    """The rows of the files under ``root`` now: ``old`` rows whose file did not change (same size
    and mtime: not opened; same sha256: not parsed), the others read again (a progress bar on
    stderr with ``progress``)."""
    stats = stats if stats is not None else BuildStats()
    out = []
    files = results_files.candidate_files(root)
    with progress_bar(len(files), "contents table", unit="file", enabled=progress) as bar:
        for path in files:
            out.append(_updated_row(root, path, old.get(path.relative_to(root).as_posix()), stats, reader))
            bar.update(1)
    stats.dropped = len(set(old) - {r.source for r in out})
    return out


def _updated_row(root: Path, path: Path, row: ContentsRow | None, stats: BuildStats, reader) -> ContentsRow:
    if row is not None and _current(row) and row.signature == _signature(path):
        stats.kept += 1
        return row
    sha = file_sha256(path)
    if row is not None and _current(row) and row.sha256 == sha:
        stats.hashed += 1  # touched, not changed
        return replace(row, signature=_signature(path))
    stats.read += 1
    return _row_of_file(root, path, sha, reader)


def build_contents(root: str | Path, stats: BuildStats | None = None, *, progress: bool = False) -> tuple[Path, int]:
    """Bring the table of ``root`` up to date with its files (incrementally, see the module
    docstring) and write it, with its card, atomically (readers see the old table or the new
    one). Returns (its path, rows)."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root} is not a folder of results files")
    out = contents_path(root)
    try:
        old = read_contents(out) if out.is_file() else {}
    except OldTable:  # rebuilt from the files
        old = {}
    rows = updated_rows(root, old, stats, progress=progress)
    table = _arrow_table(out, rows)
    with atomic_path(out) as tmp:
        pq.write_table(table, tmp)
    card = root / CARD_FILE
    with atomic_path(card) as tmp:
        Path(tmp).write_text(cs.card_text(), encoding="utf-8")
    return out, len(rows)


def _arrow_table(path: Path, rows: list[ContentsRow]) -> pa.Table:
    """The table of ``rows``: rows read from the old table keep their typed cells (taken from it
    in one read), new rows bring theirs."""
    schema = cs.schema()
    kept = {r.source for r in rows if r.cells is None}
    old_cells: dict[str, dict] = {}
    if kept:
        old = pq.read_table(path).to_pylist()
        old_cells = {rec["source"]: rec for rec in old if rec["source"] in kept}
    columns: dict[str, list] = {name: [] for name in schema.names}
    for r in rows:
        cells = r.cells if r.cells is not None else old_cells.get(r.source, {})
        rec = {**{k: cells.get(k) for k in schema.names}, **_file_cells(r)}
        for name in schema.names:
            columns[name].append(rec.get(name))
    return pa.Table.from_pydict(columns, schema=schema)


def _file_cells(r: ContentsRow) -> dict[str, Any]:
    return {"source": r.source, "sha256": r.sha256, "size": r.signature[0], "mtime_ns": r.signature[1],
            "problems": list(r.problems), "checked_with": r.checked_with, "run_folder": r.run_folder,
            "board": None if r.document is None else json.dumps(r.document, allow_nan=False)}


READ_COLUMNS = ["source", "sha256", "size", "mtime_ns", "problems", "run_folder", "checked_with", "board"]


class OldTable(ValueError):
    """A contents table without the columns this version reads (written by an older version)."""


def read_contents(path: str | Path) -> dict[str, ContentsRow]:
    """The table at ``path`` in one read (the columns the board needs), by source path;
    :class:`OldTable` when it lacks them."""
    missing = set(READ_COLUMNS) - set(pq.read_schema(path).names)
    if missing:
        raise OldTable(f"{path}: a contents table of an older version (no {', '.join(sorted(missing))})")
    table = pq.read_table(path, columns=READ_COLUMNS).to_pydict()
    out = {}
    for i, source in enumerate(table["source"]):
        doc = table["board"][i]
        out[source] = ContentsRow(source, (table["size"][i], table["mtime_ns"][i]), table["sha256"][i] or "",
                                  None if doc is None else json.loads(doc), tuple(table["problems"][i] or ()),
                                  bool(table["run_folder"][i]), table["checked_with"][i])
    return out


def _checked(row: ContentsRow) -> tuple[str, ...]:
    """The row's problems, checked again where they may have changed (a time "in the future"
    passes; invalid rows are few and hold their whole document)."""
    if row.document is None:
        return row.problems or ("not read",)
    if row.problems:
        return tuple(results_files.check_document(row.document))
    return ()


def _add(board: board_model.Board, root: Path, row: ContentsRow) -> None:
    problems = _checked(row)
    if problems or row.document is None:
        problems = problems or ("not read",)
        board.skipped.append(board_model.Skipped(row.source, problems[0], len(problems)))
        return
    path = root / row.source
    doc = row.document if row.document.get("slim") else cs.board_document(row.document)
    board.submissions.append(board_model.Submission(doc=doc, source=row.source, path=path,
                                             run_dir=path.parent if row.run_folder else None))


def load_board(root: str | Path, source: str | None = None, *, files_present: bool = True) -> board_model.Board:
    """The board of ``root`` from its contents table (one read), or from the files when it has none.

    With ``files_present`` (a local folder) the files are listed, never read, unless one is
    not in the table or differs from its row (size and modification time, then sha256): that
    one is read and checked. Without it (the table alone, downloaded from a Hub results
    dataset) the rows are the board. A table of an older version is not used (the files are
    read; from a Hub dataset :class:`OldTable` is raised). Submissions made from the table hold the slim document
    (``doc["slim"]``): :func:`full_document` reads the whole file for the detail view.
    """
    root = Path(root)
    table_path = contents_path(root)
    if not table_path.is_file():
        return results_files.load_folder(root, source)
    try:
        rows = read_contents(table_path)
    except OldTable:
        if not files_present:
            raise  # a Hub dataset: its JSON files are downloaded instead
        return results_files.load_folder(root, source)
    board = board_model.Board(source=source or str(root))
    # a file changed since the table is read once per change, not at each reload (results_files.parsed_file)
    for row in (updated_rows(root, rows, reader=results_files.parsed_file) if files_present else rows.values()):
        _add(board, root, row)
    return board


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

