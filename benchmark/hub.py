"""Hub I/O through huggingface_hub, with one clear line for every way it can fail
before any upload starts (no token, offline, no network, no permission)."""

from __future__ import annotations

import os
from pathlib import Path

from huggingface_hub import HfApi, get_token
from huggingface_hub.errors import HfHubHTTPError, HFValidationError, OfflineModeIsEnabled


class HubError(RuntimeError):
    """A Hub operation that cannot be done; the message is one line for the user."""


def _connection_error(exc: BaseException) -> bool:
    # huggingface_hub's HTTP backend (httpx or its fork httpx2) raises TransportError
    # subclasses for DNS / connection failures; name-based so it holds for either.
    names = {cls.__name__ for cls in type(exc).__mro__}
    return isinstance(exc, OSError) or bool(names & {"TransportError", "ConnectError", "NetworkError", "TimeoutException"})


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
    if "/" not in repo_id:
        raise HubError(f"repo id must look like ORG/NAME, got {repo_id!r}")
    token = token or get_token()
    if os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes"):
        raise HubError(f"cannot push to {repo_id}: HF_HUB_OFFLINE is set")
    if not token:
        raise HubError(f"cannot push to {repo_id}: no Hugging Face token (run `hf auth login` or set HF_TOKEN)")
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, repo_type=repo_type, exist_ok=True)
        info = api.upload_folder(repo_id=repo_id, folder_path=str(folder), repo_type=repo_type,
                                 commit_message=commit_message, create_pr=create_pr)
    except OfflineModeIsEnabled:
        raise HubError(f"cannot push to {repo_id}: Hugging Face Hub offline mode is enabled") from None
    except HFValidationError as exc:
        raise HubError(f"cannot push to {repo_id}: {exc}") from None
    except HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", "?")
        raise HubError(f"cannot push to {repo_id}: the Hub answered HTTP {status} ({str(exc).splitlines()[0]})") from None
    except Exception as exc:  # network failures surface as several exception types
        if _connection_error(exc):
            raise HubError(f"cannot push to {repo_id}: no connection to the Hugging Face Hub ({type(exc).__name__})") from None
        raise
    return str(getattr(info, "pr_url", None) or getattr(info, "commit_url", info))
