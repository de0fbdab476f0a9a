"""The heavy libraries imported with the cyclic garbage collector paused, then frozen.

Importing torch, diffusers, transformers, open_clip and matplotlib makes millions of objects that
live as long as the process (modules, classes, functions). While they load, CPython's collector
runs a full collection each time the heap grows by a quarter and scans all of them again: about
3 s of a tiny audit's 11 s (``bench/startup_time.py`` measures it). So the command line imports
each of these top-level packages with the collector off and then moves everything alive to the
permanent generation (:func:`gc.freeze`), which later collections skip. What a command makes
afterwards (tensors, images, tables) is collected exactly as before.

The cost: garbage those imports leave in cycles is frozen with them instead of freed, about
50 MB of a tiny audit's 1.3 GB peak. Installed by ``t2ibench`` only (:func:`install`); importing
:mod:`benchmark` as a library leaves the user's collector alone, and ``T2IBENCH_NO_FROZEN_IMPORTS=1``
turns it off.
"""

from __future__ import annotations

import gc
import os
import sys
from contextlib import contextmanager
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from typing import Iterator

#: Top-level packages whose import is worth a paused collector (each makes 10^5-10^6 objects).
HEAVY_PACKAGES = frozenset({
    "torch", "torchvision", "diffusers", "transformers", "open_clip", "timm", "accelerate", "peft",
    "matplotlib", "sklearn", "scipy", "pandas", "datasets", "pyarrow", "gradio", "evaluate",
})

#: set to 1: heavy packages import with the collector as it is (bench/startup_time.py's baseline)
OPT_OUT = "T2IBENCH_NO_FROZEN_IMPORTS"


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector off for the block, then the survivors frozen; a no-op when it was already
    off (an outer heavy import, or a caller that turned it off)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.enable()


class _PausedLoader:
    """Wraps a heavy package's loader for the one call that runs its code. The module gets its
    real loader back before any of its code runs, so nothing can see this wrapper."""

    def __init__(self, loader) -> None:
        self.loader = loader

    def __getattr__(self, name: str):  # a caller that only found the spec (is_package, get_filename...)
        return getattr(self.loader, name)

    def create_module(self, spec: ModuleSpec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        module.__spec__.loader = module.__loader__ = self.loader
        with collector_paused():
            self.loader.exec_module(module)


class FrozenImportFinder(MetaPathFinder):
    """First on ``sys.meta_path``: finds nothing itself; for a heavy top-level package it asks the
    other finders and wraps the loader they return."""

    def find_spec(self, name: str, path=None, target=None) -> ModuleSpec | None:
        if path is not None or name not in HEAVY_PACKAGES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if hasattr(spec.loader, "exec_module"):
                    spec.loader = _PausedLoader(spec.loader)
                return spec
        return None


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once; not with ``T2IBENCH_NO_FROZEN_IMPORTS=1``)."""
    if os.environ.get(OPT_OUT) == "1":
        return
    if not any(isinstance(f, FrozenImportFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, FrozenImportFinder())
