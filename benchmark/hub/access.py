"""Hub I/O through huggingface_hub, with one clear line for every way it can fail
before any upload starts (no token, offline, no network, no permission).

``push_folder`` uploads a whole folder (probe datasets); ``commit_files`` sends an exact
list of files in one commit, optionally as a pull request (result submissions, images
datasets, metric Spaces), so that a dry run can list byte for byte what would be sent.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from huggingface_hub import CommitOperationAdd, HfApi, get_token
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    HFValidationError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from benchmark.contract.digest import file_sha256, sha256_hex

REPO_TYPES = ("dataset", "model", "space")


class HubError(RuntimeError):
    """A Hub operation that cannot be done; the message is one line for the user."""


@dataclass(frozen=True)
class HubFile:
    """One file of a commit: its path in the repo and its content (bytes, or a local file)."""

    path_in_repo: str
    source: bytes | Path

    def data(self) -> bytes:
        return self.source if isinstance(self.source, bytes) else Path(self.source).read_bytes()

    @property
    def size(self) -> int:
        return len(self.source) if isinstance(self.source, bytes) else Path(self.source).stat().st_size

    @property
    def sha256(self) -> str:
        return sha256_hex(self.source) if isinstance(self.source, bytes) else file_sha256(self.source)

    def operation(self) -> CommitOperationAdd:
        content = self.source if isinstance(self.source, bytes) else str(self.source)
        return CommitOperationAdd(path_in_repo=self.path_in_repo, path_or_fileobj=content)


def is_connection_error(exc: BaseException) -> bool:
    # huggingface_hub's HTTP backend (httpx or its fork httpx2) raises TransportError
    # subclasses for DNS / connection failures; name-based so it holds for either.
    # Local file errors are OSErrors too, but no connection problem.
    local = (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError)
    names = {cls.__name__ for cls in type(exc).__mro__}
    return (isinstance(exc, OSError) and not isinstance(exc, local)) \
        or bool(names & {"TransportError", "ConnectError", "NetworkError", "TimeoutException"})


def require_hub(repo_id: str, token: str | None = None, *, action: str = "push to") -> str:
    """The token to use for ``repo_id``; HubError (one line) when the Hub cannot be used.

    Checked before anything is sent: the repo id's shape, ``HF_HUB_OFFLINE``, a token.
    """
    if not isinstance(repo_id, str) or repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise HubError(f"repo id must look like ORG/NAME, got {repo_id!r}")
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes", "on"):
        raise HubError(f"cannot {action} {repo_id}: HF_HUB_OFFLINE is set")
    token = token or get_token()
    if not token:
        raise HubError(f"cannot {action} {repo_id}: no Hugging Face token (run `hf auth login` or set HF_TOKEN)")
    return token


#: the Hub failures :func:`hub_failures` tells apart, most specific first (a GatedRepoError is
#: also a RepositoryNotFoundError, which is also an HfHubHTTPError); "connection" comes last
FAILURE_KINDS = (
    ("offline", (OfflineModeIsEnabled,)),
    ("not_cached", (LocalEntryNotFoundError,)),
    ("invalid", (HFValidationError,)),
    ("revision", (RevisionNotFoundError,)),
    ("gated", (GatedRepoError,)),
    ("not_found", (RepositoryNotFoundError,)),
    ("http", (HfHubHTTPError,)),
)
NO_CONNECTION = "{where}: no connection to the Hugging Face Hub ({exc_type})"
#: messages of an operation on a named repo (``where`` = "cannot ACTION REPO")
REPO_MESSAGES = {
    "offline": "{where}: Hugging Face Hub offline mode is enabled",
    "invalid": "{where}: {detail}",
    "not_found": "{where}: no such repository on the Hub, or the token cannot see it",
    "http": "{where}: the Hub answered HTTP {status} ({detail})",
    "connection": NO_CONNECTION,
}


def failure_kind(exc: BaseException, kinds: Collection[str]) -> str | None:
    """The first of ``kinds`` (see :data:`FAILURE_KINDS`, then "connection", then "other": any
    other exception) that ``exc`` is."""
    for kind, classes in FAILURE_KINDS:
        if kind in kinds and isinstance(exc, classes):
            return kind
    if "connection" in kinds and is_connection_error(exc):
        return "connection"
    return "other" if "other" in kinds else None


@contextmanager
def hub_failures(messages: Mapping[str, str], *, error: type[Exception] | Mapping[str, type[Exception]] = HubError,
                 **fields: Any) -> Iterator[None]:
    """The one path from huggingface_hub's and the network's exceptions to a one-line error.

    ``messages`` maps a failure kind (:data:`FAILURE_KINDS`, "connection", "other") to a
    ``str.format`` template; a failure of a kind it lists raises ``error`` (or ``error[kind]``
    when ``error`` maps kinds to exception classes) with that line, anything else propagates.
    Templates see ``status`` (HTTP status or "?"), ``detail`` (the first line of the
    exception), ``exc_type`` and the caller's ``fields`` (values from the user go in as
    fields, never into a template).
    """
    try:
        yield
    except Exception as exc:
        kind = failure_kind(exc, messages)
        if kind is None:
            raise
        status = getattr(getattr(exc, "response", None), "status_code", "?")
        detail = (str(exc).splitlines() or [""])[0]
        cls = error[kind] if isinstance(error, Mapping) else error
        raise cls(messages[kind].format(status=status, detail=detail, exc_type=type(exc).__name__,
                                        **fields)) from None


def hub_errors(repo_id: str, action: str = "push to") -> AbstractContextManager[None]:
    """Turn huggingface_hub's and the network's exceptions into one-line HubErrors."""
    return hub_failures(REPO_MESSAGES, where=f"cannot {action} {repo_id}")


def check_access(repo_id: str, token: str, *, action: str = "push to") -> str:
    """Ask the Hub who the token belongs to (no upload): proves network and token; returns the user name."""
    with hub_errors(repo_id, action):
        return str(HfApi(token=token).whoami().get("name", "?"))


def _url(info) -> str:
    return str(getattr(info, "pr_url", None) or getattr(info, "commit_url", info))


def push_folder(
    folder: str | Path,
    repo_id: str,
    *,
    repo_type: str = "dataset",
    create_pr: bool = False,
    commit_message: str = "Upload with t2i-bias-benchmark",
    token: str | None = None,
) -> str:
    """Upload ``folder`` to ``repo_id`` (created if absent); returns the commit or PR URL."""
    folder = Path(folder)
    if not folder.is_dir():
        raise HubError(f"nothing to push: {folder} is not a folder")
    token = require_hub(repo_id, token)
    api = HfApi(token=token)
    with hub_errors(repo_id):
        api.create_repo(repo_id, repo_type=repo_type, exist_ok=True)
        info = api.upload_folder(repo_id=repo_id, folder_path=str(folder), repo_type=repo_type,
                                 commit_message=commit_message, create_pr=create_pr)
    return _url(info)


def commit_files(
    repo_id: str,
    files: Sequence[HubFile],
    *,
    repo_type: str = "dataset",
    create_pr: bool = False,
    commit_message: str,
    commit_description: str | None = None,
    token: str | None = None,
    create_repo: bool = False,
    space_sdk: str | None = None,
) -> str:
    """Send exactly ``files`` to ``repo_id`` in one commit (a pull request with ``create_pr``).

    ``create_repo`` creates the repo when absent (one's own images dataset or Space); a PR
    on someone else's results dataset never creates it. Returns the commit or PR URL.
    """
    if repo_type not in REPO_TYPES:
        raise ValueError(f"repo type must be one of {', '.join(REPO_TYPES)}, got {repo_type!r}")
    if not files:
        raise HubError(f"nothing to push to {repo_id}: no files")
    token = require_hub(repo_id, token)
    api = HfApi(token=token)
    with hub_errors(repo_id):
        if create_repo:
            api.create_repo(repo_id, repo_type=repo_type, exist_ok=True, space_sdk=space_sdk)
        info = api.create_commit(repo_id, [f.operation() for f in files], commit_message=commit_message,
                                 commit_description=commit_description, repo_type=repo_type, create_pr=create_pr)
    return _url(info)
