"""One-line errors raised before any heavy work (no weights loaded, no GPU touched).

Every error subclasses :class:`ModelSpecError` (a ``ValueError``), so the command
line can catch one class and print ``str(err)``: its message is always one line.
"""

from __future__ import annotations

__all__ = [
    "ModelSpecError",
    "MalformedSpecError",
    "UnknownBuiltinError",
    "ModelNotFoundError",
    "ModelNotAvailableError",
    "GatedModelError",
    "DeviceUnavailableError",
]


class ModelSpecError(ValueError):
    """A model spec cannot be used. The message is one line, meant for the user."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


class MalformedSpecError(ModelSpecError):
    """The spec string does not parse (unknown scheme, empty name, bad repo id)."""


class UnknownBuiltinError(ModelSpecError):
    """``builtin:NAME`` where NAME is not a built-in model."""


class ModelNotFoundError(ModelSpecError):
    """The Hub answered that the repository, revision or file does not exist."""


class ModelNotAvailableError(ModelSpecError):
    """Not in the local Hugging Face cache, and the Hub cannot be reached."""


class GatedModelError(ModelSpecError):
    """The Hub repository is gated and no (accepted) token was given."""


class DeviceUnavailableError(ModelSpecError):
    """A device (e.g. ``cuda``) was asked for but is not present."""
