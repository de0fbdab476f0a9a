"""What the results contract reads from a model spec: whether it names a built-in tiny
random-weight model (``builtin:...``), whose outputs are meaningless and are flagged as such in
run_config.json, results.json, the report and the leaderboard."""

from __future__ import annotations

from collections.abc import Mapping

#: specs of the built-in tiny random-weight models start with this
BUILTIN_PREFIX = "builtin:"


def is_builtin(model) -> bool:
    """True for a built-in tiny random-weight model, whose outputs are meaningless.

    ``model`` is a spec (``"builtin:tiny-sd"``), a loaded model with ``is_builtin``, or a
    model block of ``run_config.json`` / ``results.json`` (``spec``, ``model_id`` / ``id``,
    ``builtin``).
    """
    if model is None:
        return False
    if isinstance(model, str):
        return model.strip().startswith(BUILTIN_PREFIX)
    if isinstance(model, Mapping):
        return bool(model.get("builtin")) or any(is_builtin(model.get(k)) for k in ("spec", "model_id", "id"))
    return bool(getattr(model, "is_builtin", False)) or is_builtin(getattr(model, "name", None))

