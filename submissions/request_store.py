"""Where requests live: a local folder or a Hub dataset, behind one interface.

Every write is conditional (optimistic concurrency): the writer names the version it
read, and the store refuses the write with :class:`Conflict` when the file (local) or
the dataset (Hub) changed since. That is what makes a claim safe: two workers that read
the same PENDING request both try to mark it RUNNING, one write lands, the other gets
Conflict and moves on.

- :class:`LocalRequestStore`: a version is the sha256 of the file's bytes; a write holds
  an exclusive ``flock`` on ``<folder>/.requests.lock`` while it compares and replaces the
  file (written beside it, then ``os.replace``). The kernel drops the lock when its
  process dies, even by ``kill -9``, so no stale lock is left behind. The folder must be
  on a file system with working ``flock`` (local disks; NFS v4).
- :class:`HubRequestStore`: a version is the dataset's head commit; a write is
  ``create_commit(..., parent_commit=<that commit>)``, which the Hub refuses with HTTP
  412 when another commit came first (HTTP 409: the repo is busy committing).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from benchmark.contract.atomic import write_bytes_atomic
from benchmark.contract.digest import sha256_hex
from benchmark.hub.access import HubError, hub_errors, require_hub
from submissions.requests import (
    MAX_RECORD_BYTES,
    REQUESTS_DIR_IN_REPO,
    InvalidRequest,
    RequestRecord,
    one_line,
    record_from_bytes,
)

LOCK_FILE = ".requests.lock"
#: the longest wait for the local folder's lock: a write holds it for a compare and a rename
#: (milliseconds), so a longer wait means a stopped process holds it (SIGSTOP, a hung mount)
LOCK_TIMEOUT_S = 30.0


class Conflict(RuntimeError):
    """The request (local) or the requests dataset (Hub) changed since it was read."""


class StoreBusy(HubError):
    """The requests folder's lock was not had within :data:`LOCK_TIMEOUT_S`: like an unreachable Hub
    (a :class:`HubError`), the looping worker says so and tries again after ``--poll``."""


@dataclass(frozen=True)
class StoredRecord:
    record: RequestRecord
    path: str  # requests/<org>__<model>/<commit>.json
    version: str  # what a write of this path must name as ``expected``


@dataclass
class Snapshot:
    """Every request of a store at one moment, and the files that are not valid requests."""

    records: list[StoredRecord] = field(default_factory=list)
    invalid: list[tuple[str, str]] = field(default_factory=list)  # (path, problem)
    version: str | None = None  # Hub: the head commit read; local: None (per-file versions)

    def get(self, path: str) -> StoredRecord | None:
        return next((s for s in self.records if s.path == path), None)

    def by_status(self, status: str) -> list[StoredRecord]:
        """The requests with ``status``, oldest submission first."""
        found = [s for s in self.records if s.record.status == status]
        return sorted(found, key=lambda s: (s.record.submitted_at, s.path))


class RequestStore(ABC):
    """A requests folder or dataset. Paths are ``requests/...`` relative to its root."""

    #: what the store is, for messages ("folder Q", "Hub dataset org/requests")
    name: str

    @abstractmethod
    def snapshot(self) -> Snapshot:
        """Every request, each with the version a write must name."""

    @abstractmethod
    def read(self, path: str) -> StoredRecord | None:
        """One request as it is now (None: no such file)."""

    @abstractmethod
    def write(self, path: str, record: RequestRecord, *, expected: str | None, message: str) -> StoredRecord:
        """Write ``record`` at ``path`` if the store is still at ``expected`` (local: the file's
        version, None = the file must not exist; Hub: the head commit read); Conflict otherwise."""

    def expected_for(self, snapshot: Snapshot, path: str) -> str | None:
        """The ``expected`` argument of a write of ``path`` based on ``snapshot``."""
        found = snapshot.get(path)
        return found.version if found else None


def _parse(path: str, data: bytes, version: str) -> StoredRecord:
    record = record_from_bytes(data)
    if path not in record.paths:
        raise InvalidRequest(f"the record names {record.path}, not its own path")
    return StoredRecord(record, path, version)


def _collect(files: Iterator[tuple[str, bytes | InvalidRequest, str]]) -> Snapshot:
    snap = Snapshot()
    for path, data, version in files:
        try:
            if isinstance(data, InvalidRequest):  # the file could not even be read
                raise data
            snap.records.append(_parse(path, data, version))
        except InvalidRequest as exc:
            snap.invalid.append((path, str(exc)))
    return snap


def read_bounded(file: Path) -> bytes:
    """A request file's bytes, never more than the size limit (InvalidRequest for a file over
    it, a folder, a FIFO or a device behind the name, or one that cannot be read)."""
    try:
        if not file.is_file():
            raise InvalidRequest("not a regular file")
        with file.open("rb") as fh:
            data = fh.read(MAX_RECORD_BYTES + 1)
    except OSError as exc:
        raise InvalidRequest(f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    if len(data) > MAX_RECORD_BYTES:
        raise InvalidRequest(f"over the limit of {MAX_RECORD_BYTES} bytes for a request")
    return data


def _versioned(file: Path) -> tuple[bytes | InvalidRequest, str]:
    """(bytes or why they cannot be read, version) of a local request file."""
    try:
        data = read_bounded(file)
    except InvalidRequest as exc:
        return exc, ""
    return data, sha256_hex(data)


# --------------------------------------------------------------------------- local folder


class LocalRequestStore(RequestStore):
    def __init__(self, folder: str | Path):
        self.root = Path(folder)
        self.name = f"folder {self.root}"

    def _file(self, path: str) -> Path:
        if not path.startswith(f"{REQUESTS_DIR_IN_REPO}/") or ".." in Path(path).parts:
            raise ValueError(f"{path!r} is not a request path")
        return self.root / path

    def snapshot(self) -> Snapshot:
        folder = self.root / REQUESTS_DIR_IN_REPO

        def files():
            if folder.is_dir():
                for p in sorted(folder.glob("*/*.json")):
                    data, version = _versioned(p)
                    yield p.relative_to(self.root).as_posix(), data, version

        return _collect(files())

    def read(self, path: str) -> StoredRecord | None:
        file = self._file(path)
        if not file.exists() and not file.is_symlink():
            return None
        data = read_bounded(file)
        return _parse(path, data, sha256_hex(data))

    def write(self, path: str, record: RequestRecord, *, expected: str | None, message: str) -> StoredRecord:
        from filelock import FileLock, Timeout

        target = self._file(path)
        data = record.dumps()
        self.root.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.root / LOCK_FILE, timeout=LOCK_TIMEOUT_S)  # an flock: the kernel drops it if its process dies
        try:
            lock.acquire()
        except Timeout:
            raise StoreBusy(f"{self.root / LOCK_FILE} was held by another process for {LOCK_TIMEOUT_S:g} s (a stopped "
                            "worker or a hung mount?); nothing was written") from None
        try:
            if target.exists() or target.is_symlink():
                current = _versioned(target)[1] or "unreadable"  # an unreadable file matches no version
            else:
                current = None
            if current != expected:
                raise Conflict(f"{path} changed since it was read")
            write_bytes_atomic(target, data)
        finally:
            lock.release()
        return StoredRecord(record, path, sha256_hex(data))


# --------------------------------------------------------------------------- Hub dataset

CONFLICT_STATUSES = (409, 412)  # 412: parent_commit is not the head any more; 409: a commit is in progress


def is_conflict(exc: BaseException) -> bool:
    from huggingface_hub.errors import HfHubHTTPError

    status = getattr(getattr(exc, "response", None), "status_code", None)
    return isinstance(exc, HfHubHTTPError) and status in CONFLICT_STATUSES


class HubRequestStore(RequestStore):
    """The requests dataset ``repo_id`` on the Hub (branch main).

    Reads go through the local Hugging Face cache (``snapshot_download`` at the head
    commit fetches only files that changed). The head is read with ``repo_info``, which
    the Hub may serve a moment late; a write based on a late head is refused with 412 like
    any other conflict, and the caller reads again.
    """

    def __init__(self, repo_id: str, token: str | None = None, *, write: bool = True):
        from huggingface_hub import HfApi

        if write:
            token = require_hub(repo_id, token, action="write requests to")
        elif repo_id.count("/") != 1 or not all(repo_id.split("/")):
            raise ValueError(f"requests dataset must look like ORG/NAME, got {repo_id!r}")
        self.repo_id, self.token = repo_id, token
        self.name = f"Hub dataset {repo_id}"
        self.api = HfApi(token=token)

    def head(self) -> str:
        with hub_errors(self.repo_id, "read requests from"):
            return str(self.api.repo_info(self.repo_id, repo_type="dataset").sha)

    def snapshot(self) -> Snapshot:
        head = self.head()
        with hub_errors(self.repo_id, "read requests from"):
            folder = Path(self.api.snapshot_download(self.repo_id, repo_type="dataset", revision=head,
                                                     allow_patterns=[f"{REQUESTS_DIR_IN_REPO}/*/*.json"]))
        paths = sorted((folder / REQUESTS_DIR_IN_REPO).glob("*/*.json"))
        snap = _collect((p.relative_to(folder).as_posix(), _versioned(p)[0], head) for p in paths)
        snap.version = head
        return snap

    def read(self, path: str) -> StoredRecord | None:
        from huggingface_hub.errors import EntryNotFoundError

        head = self.head()
        with hub_errors(self.repo_id, "read requests from"):
            try:
                local = self.api.hf_hub_download(self.repo_id, path, repo_type="dataset", revision=head)
            except EntryNotFoundError:  # before hub_errors turns the remote one into a HubError
                return None
        return _parse(path, read_bounded(Path(local)), head)

    def expected_for(self, snapshot: Snapshot, path: str) -> str | None:
        return snapshot.version

    def write(self, path: str, record: RequestRecord, *, expected: str | None, message: str) -> StoredRecord:
        from huggingface_hub import CommitOperationAdd

        if not expected:
            raise ValueError("a write to the Hub requests dataset names the head commit it read")
        op = CommitOperationAdd(path_in_repo=path, path_or_fileobj=record.dumps())
        with hub_errors(self.repo_id, "write requests to"):
            try:
                info = self.api.create_commit(self.repo_id, [op], commit_message=message, repo_type="dataset",
                                              parent_commit=expected)
            except Exception as exc:
                if is_conflict(exc):  # before hub_errors turns it into a HubError
                    raise Conflict(f"{self.repo_id} moved on from {expected[:8]} ({one_line(exc)})") from None
                raise
        return StoredRecord(record, path, str(info.oid))


# --------------------------------------------------------------------------- opening one


def open_store(folder: str | Path | None = None, repo: str | None = None, *, token: str | None = None,
               write: bool = True) -> RequestStore:
    """The local folder or the Hub dataset (exactly one)."""
    if (folder is None) == (repo is None):
        raise ValueError("give exactly one of a requests folder or a Hub requests dataset")
    return LocalRequestStore(folder) if folder is not None else HubRequestStore(repo, token, write=write)


def retry_delays(attempts: int = 6, first: float = 0.5) -> Iterator[float]:
    """Back-off pauses between retries after a Conflict (a late head needs a moment)."""
    delay = first
    for _ in range(attempts):
        yield delay
        delay = min(delay * 2, 8.0)


def sleep(seconds: float) -> None:  # patched in tests
    time.sleep(seconds)
