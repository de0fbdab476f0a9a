"""Check that a Hub model can be loaded, before any heavy work, with one-line errors.

Order: the local Hugging Face cache first (no network at all), then, unless
``HF_HUB_OFFLINE`` is set, one HEAD request for a small file of the repository with
a short timeout. The HEAD request is what tells a gated repository (no token, or
licence not accepted) from a missing one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from benchmark.hub.access import hub_failures

from .errors import GatedModelError, MalformedSpecError, ModelNotAvailableError, ModelNotFoundError

__all__ = ["ensure_hub_model", "cached_commit", "is_local_folder", "looks_like_path", "HUB_TIMEOUT_S"]

#: seconds to wait for the Hub before saying it cannot be reached ($T2IBENCH_HUB_TIMEOUT)
HUB_TIMEOUT_S = 10.0


def looks_like_path(spec: str) -> bool:
    """True for specs that are meant as file-system paths, not Hub IDs."""
    if spec.startswith(("/", "./", "../", "~", ".\\", "..\\")):
        return True
    return len(spec) > 2 and spec[0].isalpha() and spec[1] == ":" and spec[2] in "/\\"  # C:\ on Windows


def is_local_folder(spec: str) -> bool:
    return Path(os.path.expanduser(spec)).is_dir()


def hub_offline() -> bool:
    from huggingface_hub import constants

    env = os.environ.get("HF_HUB_OFFLINE", "")
    return bool(constants.HF_HUB_OFFLINE) or env.strip().upper() in {"1", "ON", "YES", "TRUE"}


def ensure_hub_model(
    repo_id: str,
    filenames: Sequence[str],
    *,
    revision: str | None = None,
    token: str | bool | None = None,
    what: str = "model",
    timeout: float | None = None,
    endpoint: str | None = None,
) -> str:
    """Return ``"cache"`` or ``"hub"`` if ``repo_id`` can be loaded, else raise one line.

    ``filenames``: small files of which at least one marks the repository as the
    right kind (``model_index.json`` for a diffusers pipeline, ``config.json`` for a
    transformers model, ...). ``endpoint``: a Hub mirror (default: ``HF_ENDPOINT``).
    """
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        raise MalformedSpecError(
            f"{what} {repo_id!r} is neither a Hub model ID (org/name) nor an existing local folder"
        ) from None
    at = f" at revision {revision}" if revision else ""

    for name in filenames:
        try:
            hit = try_to_load_from_cache(repo_id, name, revision=revision)
        except Exception:  # noqa: BLE001 - a broken cache entry is just a miss
            hit = None
        if isinstance(hit, str):
            return "cache"

    if hub_offline():
        raise ModelNotAvailableError(
            f"{what} {repo_id}{at} is not in the local Hugging Face cache and the Hub cannot be reached "
            "(HF_HUB_OFFLINE is set): download it first with `hf download` on a machine with network"
        )

    if timeout is None:
        timeout = float(os.environ.get("T2IBENCH_HUB_TIMEOUT", HUB_TIMEOUT_S))
    missing = []
    for name in filenames:
        if _hub_has_file(repo_id, name, revision=revision, token=token, timeout=timeout, endpoint=endpoint,
                         what=what, at=at):
            return "hub"
        missing.append(name)
    raise ModelNotFoundError(
        f"{what} {repo_id}{at} has none of {', '.join(missing)} on the Hub: it is not a {what} this loader reads"
    )


#: one line per way the Hub can fail a model lookup (``at``: " at revision R" or "")
_NOT_CACHED = "{what} {repo}{at} is not in the local Hugging Face cache and the Hub "
MODEL_LOOKUP_MESSAGES = {
    "offline": _NOT_CACHED + "cannot be reached (offline mode)",
    "revision": "{what} {repo} has no revision {revision!r} on the Hub",
    "gated": "{what} {repo} is gated: accept its licence on the Hub and log in (`hf auth login`) or set HF_TOKEN",
    "not_found": "{what} {repo} was not found on the Hub (if it is private, log in with `hf auth login`)",
    "http": _NOT_CACHED + "answered HTTP {status}",
    "other": _NOT_CACHED + "cannot be reached ({exc_type})",  # connection refused, DNS, timeout
}
MODEL_LOOKUP_ERRORS = {"offline": ModelNotAvailableError, "revision": ModelNotFoundError, "gated": GatedModelError,
                       "not_found": ModelNotFoundError, "http": ModelNotAvailableError,
                       "other": ModelNotAvailableError}


def _hub_has_file(repo_id: str, name: str, *, revision, token, timeout: float, endpoint, what: str, at: str) -> bool:
    """True when the Hub has file ``name`` of ``repo_id``, False when the repo lacks it; one-line
    errors for a gated, absent or unreachable repo, through the Hub's one error path
    (:func:`benchmark.hub.access.hub_failures`)."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import EntryNotFoundError

    with hub_failures(MODEL_LOOKUP_MESSAGES, error=MODEL_LOOKUP_ERRORS, what=what, repo=repo_id, at=at,
                      revision=revision):
        try:
            get_hf_file_metadata(hf_hub_url(repo_id, name, revision=revision, endpoint=endpoint), token=token,
                                 timeout=timeout)
        except EntryNotFoundError:
            return False
    return True


def cached_commit(repo_id: str, filename: str, revision: str | None = None) -> str | None:
    """Commit hash of the cached snapshot holding ``filename`` (for the run manifest)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        path = try_to_load_from_cache(repo_id, filename, revision=revision)
    except Exception:  # noqa: BLE001
        return None
    if not isinstance(path, str):
        return None
    parts = Path(path).parts
    if "snapshots" in parts:
        i = parts.index("snapshots")
        if i + 1 < len(parts):
            return parts[i + 1]
    return None
