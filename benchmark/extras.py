"""Optional dependencies: a missing extra is one line, never an ImportError traceback.

The base install (``pip install t2i-bias-benchmark``) holds what the probes, the scores,
the ``evaluate`` modules, validation and the results schema need. Generating and labelling
images needs ``[audit]`` (torch, diffusers, transformers, open_clip, OpenCV, Pillow,
matplotlib); the Gradio apps need ``[app]``. Code that needs an extra calls :func:`require`
before importing it, so the command line prints ``t2ibench: error: install
t2i-bias-benchmark[audit] to generate images`` (a ``ValueError``: exit status 2).
"""

from __future__ import annotations

import importlib.util
import os

DISTRIBUTION = "t2i-bias-benchmark"

# Import name -> the extra that installs it.
EXTRA_OF = {
    "torch": "audit",
    "torchvision": "audit",
    "diffusers": "audit",
    "transformers": "audit",
    "open_clip": "audit",
    "accelerate": "audit",
    "cv2": "audit",
    "safetensors": "audit",
    "PIL": "audit",
    "matplotlib": "audit",
    "gradio": "app",
    "ppi_py": "human",
}

# Import name -> distribution name, where they differ (what the message names).
DISTRIBUTION_OF = {"PIL": "pillow", "cv2": "opencv-python-headless", "open_clip": "open_clip_torch",
                   "ppi_py": "ppi-python"}

__all__ = ["MissingExtraError", "require", "require_gradio", "missing", "EXTRA_OF", "DISTRIBUTION_OF",
           "GRADIO_ENVIRONMENT"]

#: What every Gradio app of the project sets before Gradio is imported: no analytics, no version
#: check (nothing leaves the machine unasked). Each app's ``gr.Blocks`` also passes
#: ``analytics_enabled=False``.
GRADIO_ENVIRONMENT = {"GRADIO_ANALYTICS_ENABLED": "False"}


class MissingExtraError(ValueError):
    """An optional dependency is not installed; ``str()`` is the one line to print."""

    def __init__(self, extra: str, purpose: str, modules: list[str]):
        self.extra = extra
        self.purpose = purpose
        self.modules = modules
        names = ", ".join(DISTRIBUTION_OF.get(m, m) for m in modules)
        super().__init__(f"install {DISTRIBUTION}[{extra}] to {purpose} "
                         f"({names} {'is' if len(modules) == 1 else 'are'} not installed)")


def missing(*modules: str) -> list[str]:
    """The import names among ``modules`` that cannot be found (nothing is imported)."""
    absent = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a parent package missing, or a broken __spec__
            found = False
        if not found:
            absent.append(name)
    return absent


def require(*modules: str, extra: str | None = None, purpose: str) -> None:
    """Raise :class:`MissingExtraError` unless every import name in ``modules`` is installed.

    ``extra`` defaults to the extra that installs the first missing module (``EXTRA_OF``);
    ``purpose`` completes "install t2i-bias-benchmark[EXTRA] to ...".
    """
    if not modules:
        raise ValueError("require() needs at least one module name")
    absent = missing(*modules)
    if absent:
        raise MissingExtraError(extra or EXTRA_OF.get(absent[0], "all"), purpose, absent)


def require_gradio(*modules: str, purpose: str) -> None:
    """:func:`require` Gradio (and ``modules``) from the ``app`` extra, then switch Gradio's
    analytics off (:data:`GRADIO_ENVIRONMENT`) before it is imported: the one way every app of the
    project starts Gradio."""
    require("gradio", *modules, extra="app", purpose=purpose)
    os.environ.update(GRADIO_ENVIRONMENT)
