"""Hub I/O through huggingface_hub, with one clear line for every way it can fail
before any upload starts (no token, offline, no network, no permission).

``push_folder`` uploads a whole folder (probe datasets); ``commit_files`` sends an exact
list of files in one commit, optionally as a pull request (result submissions, images
datasets, metric Spaces), so that a dry run can list byte for byte what would be sent.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import CommitOperationAdd, HfApi, get_token
from huggingface_hub.errors import (
    HfHubHTTPError,
    HFValidationError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
)

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
        return hashlib.sha256(self.data()).hexdigest()

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


@contextmanager
def hub_errors(repo_id: str, action: str = "push to") -> Iterator[None]:
    """Turn huggingface_hub's and the network's exceptions into one-line HubErrors."""
    try:
        yield
    except OfflineModeIsEnabled:
        raise HubError(f"cannot {action} {repo_id}: Hugging Face Hub offline mode is enabled") from None
    except HFValidationError as exc:
        raise HubError(f"cannot {action} {repo_id}: {str(exc).splitlines()[0]}") from None
    except RepositoryNotFoundError:
        raise HubError(f"cannot {action} {repo_id}: no such repository on the Hub, or the token cannot see it") from None
    except HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", "?")
        raise HubError(f"cannot {action} {repo_id}: the Hub answered HTTP {status} ({str(exc).splitlines()[0]})") from None
    except Exception as exc:  # network failures surface as several exception types
        if is_connection_error(exc):
            raise HubError(f"cannot {action} {repo_id}: no connection to the Hugging Face Hub ({type(exc).__name__})") from None
        raise


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
