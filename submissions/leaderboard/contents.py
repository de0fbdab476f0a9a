"""The ``contents`` table: every results file of a results folder, read and checked once, in
one parquet file the leaderboard reads in one read (the Open LLM Leaderboard's "contents"
dataset does the same). The per-model JSON files stay the source of truth: the table is
rebuilt from them (``t2ibench leaderboard build-contents DIR``, and by the worker after each
result it posts to a folder), and a file whose size or modification time differs from its
row is read again instead of trusted.

Layout: ``DIR/contents/contents.parquet`` (``datasets.load_dataset("parquet",
data_files="DIR/contents/contents.parquet", split="train")`` loads it too), one row per file
under ``DIR`` that :func:`data.candidate_files` picks:

- ``source``: the path relative to ``DIR``; ``size``, ``mtime_ns``: the file when it was read;
- ``document``: the results document as JSON text (null when the file could not be read);
- ``problems``: what ``t2ibench validate`` found (empty: shown on the board);
- ``run_folder``: the file is a run folder's ``results.json``;
- ``checked_with``: the package version whose checks made ``problems``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import benchmark
from benchmark.contract.atomic import atomic_path
from benchmark.contract.results import RESULTS_FILE
from benchmark.contract.run_folder import CONFIG_FILE
from submissions.leaderboard import data

CONTENTS_FILE = "contents/contents.parquet"
SCHEMA = pa.schema([("source", pa.string()), ("size", pa.int64()), ("mtime_ns", pa.int64()),
                    ("document", pa.string()), ("problems", pa.list_(pa.string())), ("run_folder", pa.bool_()),
                    ("checked_with", pa.string())])


@dataclass(frozen=True)
class ContentsRow:
    source: str
    signature: tuple[int, int]
    document: dict | None
    problems: tuple[str, ...]
    run_folder: bool
    checked_with: str


def contents_path(root: str | Path) -> Path:
    return Path(root) / CONTENTS_FILE


def _signature(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def build_contents(root: str | Path) -> tuple[Path, int]:
    """Read and check every results file under ``root`` and write the table (atomically:
    readers see the old table or the new one). Returns (its path, rows)."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root} is not a folder of results files")
    rows = {name: [] for name in SCHEMA.names}
    for path in data.candidate_files(root):
        parsed = data.parsed_file(path)
        rows["source"].append(path.relative_to(root).as_posix())
        rows["size"].append(parsed.signature[0])
        rows["mtime_ns"].append(parsed.signature[1])
        rows["document"].append(None if parsed.doc is None else json.dumps(parsed.doc, allow_nan=False))
        rows["problems"].append(list(parsed.problems) or ([] if parsed.doc is not None else ["not read"]))
        rows["run_folder"].append(path.name == RESULTS_FILE and (path.parent / CONFIG_FILE).is_file())
        rows["checked_with"].append(benchmark.__version__)
    out = contents_path(root)
    with atomic_path(out) as tmp:
        pq.write_table(pa.Table.from_pydict(rows, schema=SCHEMA), tmp)
    return out, len(rows["source"])


def read_contents(path: str | Path) -> dict[str, ContentsRow]:
    """The table at ``path`` in one read, by source path."""
    table = pq.read_table(path, schema=SCHEMA).to_pydict()
    out = {}
    for i, source in enumerate(table["source"]):
        doc = table["document"][i]
        out[source] = ContentsRow(source, (table["size"][i], table["mtime_ns"][i]),
                                  None if doc is None else json.loads(doc), tuple(table["problems"][i] or ()),
                                  bool(table["run_folder"][i]), table["checked_with"][i])
    return out


def _checked(row: ContentsRow) -> tuple[str, ...]:
    """The row's problems, checked again where they may have changed: checks of another package
    version, and any problem at all (a time "in the future" passes; invalid rows are few)."""
    if row.document is None:
        return row.problems or ("not read",)
    if row.problems or row.checked_with != benchmark.__version__:
        return tuple(data.check_document(row.document))
    return ()


def _add(board: data.Board, root: Path, source: str, doc: dict | None, problems: tuple[str, ...],
         run_folder: bool) -> None:
    if problems or doc is None:
        problems = problems or ("not read",)
        board.skipped.append(data.Skipped(source, problems[0], len(problems)))
        return
    path = root / source
    board.submissions.append(data.Submission(doc=doc, source=source, path=path,
                                             run_dir=path.parent if run_folder else None))


def load_board(root: str | Path, source: str | None = None, *, files_present: bool = True) -> data.Board:
    """The board of ``root`` from its contents table (one read), or from the files when it has none.

    With ``files_present`` (a local folder) the files are listed, never read, unless one is
    not in the table or differs from its row (size, modification time): that one is read
    and checked as without a table. Without it (the table alone, downloaded from a Hub
    results dataset) the rows are the board.
    """
    root = Path(root)
    table_path = contents_path(root)
    if not table_path.is_file():
        return data.load_folder(root, source)
    board = data.Board(source=source or str(root))
    rows = read_contents(table_path)
    if not files_present:
        for row in rows.values():
            _add(board, root, row.source, row.document, _checked(row), row.run_folder)
        return board
    for path in data.candidate_files(root):
        rel = path.relative_to(root).as_posix()
        row = rows.get(rel)
        if row is not None and row.signature == _signature(path):
            _add(board, root, rel, row.document, _checked(row), row.run_folder)
            continue
        parsed = data.parsed_file(path)
        _add(board, root, rel, parsed.doc, parsed.problems, path.name == RESULTS_FILE
             and (path.parent / CONFIG_FILE).is_file())
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
