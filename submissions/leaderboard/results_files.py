"""Reading and checking results files: which files of a folder are results
(:func:`list_results`), each read and checked once (:func:`parsed_file`, cached), a whole
folder as a :class:`~submissions.leaderboard.board_index.Board` (:func:`load_folder`), and a Hub
results dataset downloaded to a folder (:func:`download_results`).

Rules (also in ``docs/leaderboard.md``):

- Files: every ``*.json`` under the folder, recursively; inside a run folder (one with
  ``run_config.json``) only its ``results.json``. Hidden folders (``.cache`` of a Hub
  download) are left out. A link is followed only when it leads inside the folder (for a Hub
  download: inside its cache folder); a link that leaves it (to ``/etc/passwd``), a link to a
  folder and anything that is not a regular file (a FIFO, a device) are not read, and are
  listed as skipped. Each file is read with the package's one results reader
  (:func:`benchmark.contract.results.load_results_file`: size, depth, big-integer, duplicate-key
  and NaN limits) and checked like ``t2ibench validate``; a file that fails is skipped and
  listed with its first problem, never raised.
- Each file is parsed and checked once: the result is cached by (path, size, mtime_ns),
  so "Reload results" reads only new or changed files.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huggingface_hub import snapshot_download

from benchmark.hub.access import NO_CONNECTION, hub_failures
from benchmark.contract.results import MAX_RESULTS_BYTES, RESULTS_FILE, UnreadableResults, load_results_file
from benchmark.contract.run_folder import CONFIG_FILE
from submissions.leaderboard.board_index import Board, BoardIndex
from submissions.leaderboard.board_model import Skipped, Submission, is_dataset_id
from submissions.validate import check_results

#: files larger than this are refused from their size, unread (a results document is tens of kB)
MAX_FILE_BYTES = MAX_RESULTS_BYTES


def check_document(doc: Any) -> list[str]:
    """Problems of one results document (one line each; [] when it can be shown): the checks
    of ``t2ibench validate`` with built-in tiny models allowed (shown as demo)."""
    return list(check_results(doc, allow_demo=True))


@dataclass(frozen=True)
class Listed:
    """A results file found under the folder: its path (``where``, as listed), its path relative
    to the folder (``rel``, POSIX), and its size and modification time (ns) from the listing."""

    where: str
    rel: str
    size: int
    mtime_ns: int

    @property
    def path(self) -> Path:
        return Path(self.where)

    @property
    def signature(self) -> tuple[int, int]:
        return self.size, self.mtime_ns


@dataclass
class Listing:
    """What :func:`list_results` found: the results files, and the entries it would not read
    (``refused``: (relative path, why)): links that leave the folder, anything not a regular file."""

    files: list[Listed] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)


LEAVES_FOLDER = "a link that leaves the results folder: not followed"
NOT_A_FILE = "not a regular file: not read"
LINKED_FOLDER = "a link to a folder: not followed"


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _listed(entry: os.DirEntry, rel: str, within: str, listing: Listing) -> None:
    """Add the file ``entry`` to ``listing`` (or to its refused entries)."""
    try:
        if entry.is_symlink() and not _inside(os.path.realpath(entry.path), within):
            listing.refused.append((rel, LEAVES_FOLDER))
            return
        st = entry.stat()  # follows a link that stays inside
    except OSError:
        listing.refused.append((rel, NOT_A_FILE))
        return
    if not stat.S_ISREG(st.st_mode):
        listing.refused.append((rel, NOT_A_FILE))
        return
    listing.files.append(Listed(entry.path, rel, st.st_size, st.st_mtime_ns))


def _walk(folder: str, rel: str, within: str, in_run: bool, listing: Listing) -> None:
    try:
        entries = list(os.scandir(folder))  # (the listing is sorted once, at the end)
    except OSError:
        return
    run = any(e.name == CONFIG_FILE for e in entries)
    for entry in entries:
        path = f"{rel}{entry.name}"
        if entry.is_dir(follow_symlinks=False):
            if not entry.name.startswith("."):  # hidden folders: the .cache of a Hub download
                _walk(entry.path, path + "/", within, in_run or run, listing)
        elif entry.is_symlink() and entry.is_dir():
            listing.refused.append((path, LINKED_FOLDER))
        elif entry.name.endswith(".json") and (entry.name == RESULTS_FILE if run else not in_run):
            _listed(entry, path, within, listing)


def list_results(root: str | Path, within: str | Path | None = None) -> Listing:
    """The results files to read under ``root`` (see the module docstring), with their sizes and
    modification times, in path order. A link is followed only when it leads inside ``within``
    (default: ``root``; a Hub download's files link into its cache folder); links that leave it
    and anything that is not a regular file (a FIFO, a device) are refused and listed."""
    root = Path(root)
    listing = Listing()
    _walk(str(root), "", os.path.realpath(within if within is not None else root), False, listing)
    listing.files.sort(key=lambda f: f.rel)
    listing.refused.sort()
    return listing


@dataclass(frozen=True)
class _Parsed:
    """One file as read and checked: the document (None when it could not be read) and its problems."""

    signature: tuple[int, int]  # (size, mtime_ns) when it was read
    doc: dict | None
    problems: tuple[str, ...]


# Parsed files by resolved path, shared by every Board (the app builds a new Board per reload).
_PARSED: dict[Path, _Parsed] = {}
_PARSED_LOCK = threading.Lock()
FUTURE = "is in the future"  # the one check that time can change


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
        if cached.doc is None or not any(FUTURE in p for p in cached.problems):
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


def refused_files(listing: Listing) -> list[Skipped]:
    """The entries a listing would not read, as skipped files (the warnings list them)."""
    return [Skipped(rel, why, 1) for rel, why in listing.refused]


def load_folder(root: str | Path, source: str | None = None, *, within: str | Path | None = None,
                listing: Listing | None = None) -> Board:
    """Read every results file under ``root``; invalid ones go to ``Board.skipped``, and so do
    links that leave ``within`` (default ``root``) and entries that are not regular files.

    Files unchanged since an earlier call (same size and mtime) are not read again. ``listing``:
    the folder's listing when the caller has just made it (not made again).
    """
    root = Path(root)
    board = Board(source=source or str(root))
    if not root.is_dir():
        board.errors.append(f"{board.source} is not a folder")
        return board
    listing = listing if listing is not None else list_results(root, within)
    seen: set[Path] = set()
    subs = []
    for f in listing.files:
        parsed = parsed_file(f.path)
        seen.add(f.path.resolve())
        if parsed.problems or parsed.doc is None:
            problems = parsed.problems or ("not read",)
            board.skipped.append(Skipped(f.rel, problems[0], len(problems)))
            continue
        run_dir = f.path.parent if f.path.name == RESULTS_FILE and (f.path.parent / CONFIG_FILE).is_file() else None
        subs.append(Submission(doc=parsed.doc, source=f.rel, path=f.path, run_dir=run_dir))
    board.skipped += refused_files(listing)
    board.index = BoardIndex.of_submissions(subs)
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


def hub_cache_folder(snapshot: Path) -> Path:
    """The cache folder of the Hub dataset whose snapshot is ``snapshot``
    (``.../datasets--ORG--NAME/snapshots/REV``): its files are links into its ``blobs``, which
    :func:`load_folder` follows there and nowhere else."""
    return snapshot.parent.parent
