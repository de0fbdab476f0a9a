"""Where the built-in tiny models live on disk and how a folder is built once, atomically.

Each loader module holds the builder of its own tiny model (``builtin:tiny-sd`` in
``tiny_sd.py``, ``builtin:tiny-clip`` in ``encoders.py``, ``builtin:tiny-vqa`` in
``vqa_blip2.py``, ``builtin:tiny-detr`` in ``detector.py``) and hands it to
:func:`build_builtin`; ``tiny.py`` gathers them for callers that only know a name. This
module imports no loader, so the loaders and ``tiny.py`` never import each other.

Cache folder: ``$T2IBENCH_CACHE/builtin/<name>`` or ``~/.cache/t2ibench/builtin/<name>``.
A folder is built in a temporary sibling folder and renamed into place, so a crash or
two processes building at once never leave a half-written model behind.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmark.extras import require

from .errors import UnknownBuiltinError

__all__ = ["BUILDER_VERSION", "BUILTIN_KINDS", "BUILTIN_SEED", "MARKER", "build_builtin", "builtin_path",
           "cache_root", "check_builtin_name"]

#: bump when a builder changes, so stale cached folders are rebuilt
BUILDER_VERSION = 1
MARKER = "t2ibench_builtin.json"
#: torch seed every builder sets before drawing random weights
BUILTIN_SEED = 0

#: built-in model name -> the kind of loader that serves it
BUILTIN_KINDS = {"tiny-sd": "text-to-image", "tiny-clip": "encoder", "tiny-vqa": "vqa", "tiny-detr": "detector"}


def cache_root() -> Path:
    """``$T2IBENCH_CACHE`` or ``~/.cache/t2ibench``."""
    env = os.environ.get("T2IBENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "t2ibench"


def builtin_path(name: str) -> Path:
    return cache_root() / "builtin" / name


def check_builtin_name(name: str, kind: str | None) -> None:
    if name not in BUILTIN_KINDS or (kind is not None and BUILTIN_KINDS[name] != kind):
        names = sorted(n for n, k in BUILTIN_KINDS.items() if kind is None or k == kind)
        what = f"{kind} " if kind else ""
        raise UnknownBuiltinError(
            f"unknown built-in {what}model 'builtin:{name}': known are "
            + ", ".join(f"builtin:{n}" for n in names)
        )


def _is_complete(folder: Path) -> bool:
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return marker.get("version") == BUILDER_VERSION


def build_builtin(name: str, build: Callable[[Path], None], *, kind: str | None = None) -> Path:
    """Folder of built-in model ``name``, written by ``build(folder)`` (atomically) on first use."""
    check_builtin_name(name, kind)
    target = builtin_path(name)
    if _is_complete(target):
        return target
    require("torch", "diffusers", "transformers", "open_clip", "safetensors", extra="audit",
            purpose="build the built-in tiny models")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        build(tmp)
        (tmp / MARKER).write_text(
            json.dumps(
                {
                    "name": f"builtin:{name}",
                    "version": BUILDER_VERSION,
                    "note": "random weights: outputs are meaningless, for tests and the offline demo only",
                }
            ),
            encoding="utf-8",
        )
        _replace_stale(target)
        try:
            os.rename(tmp, target)
        except OSError:
            if not _is_complete(target):  # pragma: no cover - unexpected failure
                raise
            # another process finished first: use its folder
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _replace_stale(target: Path) -> None:
    """Move a stale (older builder) or broken folder aside, then drop it."""
    if not target.exists() or _is_complete(target):
        return
    stale = Path(tempfile.mkdtemp(prefix=f".{target.name}-stale-", dir=target.parent))
    try:
        os.replace(target, stale / target.name)
    except FileNotFoundError:  # another process moved it first
        pass
    shutil.rmtree(stale, ignore_errors=True)
