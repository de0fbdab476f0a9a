"""Reading and checking results files: which files of a folder are results
(:func:`candidate_files`), each read and checked once (:func:`parsed_file`, cached), a whole
folder as a :class:`~submissions.leaderboard.board_model.Board` (:func:`load_folder`), and a Hub
results dataset downloaded to a folder (:func:`download_results`).

Rules (also in ``docs/leaderboard.md``):

- Files: every ``*.json`` under the folder, recursively; inside a run folder (one with
  ``run_config.json``) only its ``results.json``. Hidden folders (``.cache`` of a Hub
  download) are left out. Each file is read with the package's one results reader
  (:func:`benchmark.contract.results.load_results_file`: size, depth, big-integer, duplicate-key
  and NaN limits) and checked like ``t2ibench validate``; a file that fails is skipped and
  listed with its first problem, never raised.
- Each file is parsed and checked once: the result is cached by (path, size, mtime_ns),
  so "Reload results" reads only new or changed files.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huggingface_hub import snapshot_download

from benchmark.hub.access import NO_CONNECTION, hub_failures
from benchmark.contract.results import MAX_RESULTS_BYTES, RESULTS_FILE, UnreadableResults, load_results_file
from benchmark.contract.run_folder import CONFIG_FILE
from submissions.leaderboard.board_model import Board, Skipped, Submission, is_dataset_id
from submissions.validate import check_results

#: files larger than this are refused from their size, unread (a results document is tens of kB)
MAX_FILE_BYTES = MAX_RESULTS_BYTES


def check_document(doc: Any) -> list[str]:
    """Problems of one results document (one line each; [] when it can be shown): the checks
    of ``t2ibench validate`` with built-in tiny models allowed (shown as demo)."""
    return list(check_results(doc, allow_demo=True))


def candidate_files(root: Path) -> list[Path]:
    """The results files to read under ``root`` (see the module docstring)."""
    files = sorted(p for p in root.rglob("*.json") if p.is_file())
    run_dirs = {p.parent for p in files if p.name == CONFIG_FILE}
    out = []
    for p in files:
        rel = p.relative_to(root)
        if any(part.startswith(".") for part in rel.parts[:-1]):
            continue
        inside = [d for d in run_dirs if d == p.parent or d in p.parents]
        if inside and not (p.name == RESULTS_FILE and p.parent in run_dirs):
            continue  # a run folder's own files (run_config, timings, ...), not results
        out.append(p)
    return out


@dataclass(frozen=True)
class _Parsed:
    """One file as read and checked: the document (None when it could not be read) and its problems."""

    signature: tuple[int, int]  # (size, mtime_ns) when it was read
    doc: dict | None
    problems: tuple[str, ...]


# Parsed files by resolved path, shared by every Board (the app builds a new Board per reload).
_PARSED: dict[Path, _Parsed] = {}
_PARSED_LOCK = threading.Lock()
_FUTURE = "is in the future"


def read_and_check(path: Path, signature: tuple[int, int]) -> _Parsed:
    """``path`` read with the package's one results reader and checked (never cached, never raises)."""
    try:
        doc = load_results_file(path, max_bytes=MAX_FILE_BYTES)
    except UnreadableResults as exc:
        return _Parsed(signature, None, (exc.reason,))
    except Exception as exc:  # one broken file never stops the board
        return _Parsed(signature, None, (f"cannot be read ({type(exc).__name__})",))
    try:
        problems = tuple(check_document(doc))
    except Exception as exc:
        problems = (f"cannot be checked ({type(exc).__name__})",)
    return _Parsed(signature, doc, problems)


def parsed_file(path: Path) -> _Parsed:
    """``path`` read and checked, from the cache when its size and mtime are those it was read with."""
    key = path.resolve()
    try:
        st = key.stat()
        signature = (st.st_size, st.st_mtime_ns)
    except OSError:
        signature = (-1, -1)
    with _PARSED_LOCK:
        cached = _PARSED.get(key)
    if cached is not None and cached.signature == signature:
        if cached.doc is None or not any(_FUTURE in p for p in cached.problems):
            return cached
        # "not in the future" is the one check that time can change: check that file again
        cached = _Parsed(signature, cached.doc, tuple(check_document(cached.doc)))
    else:
        cached = read_and_check(key, signature)
    with _PARSED_LOCK:
        _PARSED[key] = cached
    return cached


def clear_cache() -> None:
    """Forget every parsed file (the next load reads everything again)."""
    with _PARSED_LOCK:
        _PARSED.clear()


def _forget_missing(root: Path, seen: set[Path]) -> None:
    """Drop cached files under ``root`` that the last listing no longer has."""
    with _PARSED_LOCK:
        for key in [k for k in _PARSED if k not in seen and root in k.parents]:
            del _PARSED[key]


def load_folder(root: str | Path, source: str | None = None) -> Board:
    """Read every results file under ``root``; invalid ones go to ``Board.skipped``.

    Files unchanged since an earlier call (same size and mtime) are not read again.
    """
    root = Path(root)
    board = Board(source=source or str(root))
    if not root.is_dir():
        board.errors.append(f"{board.source} is not a folder")
        return board
    seen: set[Path] = set()
    for path in candidate_files(root):
        rel = path.relative_to(root).as_posix()
        parsed = parsed_file(path)
        seen.add(path.resolve())
        if parsed.problems or parsed.doc is None:
            problems = parsed.problems or ("not read",)
            board.skipped.append(Skipped(rel, problems[0], len(problems)))
            continue
        run_dir = path.parent if path.name == RESULTS_FILE and (path.parent / CONFIG_FILE).is_file() else None
        board.submissions.append(Submission(doc=parsed.doc, source=rel, path=path, run_dir=run_dir))
    _forget_missing(root.resolve(), seen)
    return board


OFFLINE_NOT_CACHED = ("{where}: the Hub is offline (HF_HUB_OFFLINE) and no copy is cached; "
                      "use --results DIR with a local copy")
#: why a results dataset cannot be read (:func:`benchmark.hub.access.hub_failures`)
DOWNLOAD_MESSAGES = {
    "offline": OFFLINE_NOT_CACHED,
    "not_cached": OFFLINE_NOT_CACHED,
    "not_found": "{where}: no such dataset on the Hub (or it is private: run `hf auth login`)",
    "http": "{where}: the Hub answered HTTP {status}",
    "connection": NO_CONNECTION,
}


def download_results(repo: str, revision: str | None = None) -> Path:
    """A local copy of the JSON files of Hub results dataset ``repo``; ValueError (one line) when
    it cannot be had (offline, no connection, no such dataset)."""
    if not is_dataset_id(repo):
        raise ValueError(f"--repo takes a Hub dataset id ORG/NAME, got {repo!r}")
    with hub_failures(DOWNLOAD_MESSAGES, error=ValueError, where=f"cannot read results dataset {repo}"):
        return Path(snapshot_download(repo, repo_type="dataset", revision=revision, allow_patterns=["*.json"]))
