"""Built-in tiny models with random weights, for tests and the offline demo.

Each is built from configs with a fixed torch seed by the builder beside its loader,
saved with ``save_pretrained`` (or open_clip's own folder layout) to a cache folder on
first use (``builtin_cache.py``), and from then on loaded back through the same public
loading path a real model takes:

* ``builtin:tiny-sd``   -> ``diffusers.AutoPipelineForText2Image.from_pretrained(folder)``
  (built by :func:`benchmark.models.tiny_sd.build_tiny_sd`)
* ``builtin:tiny-clip`` -> ``open_clip.create_model_and_transforms("local-dir:" + folder)``
  (:func:`benchmark.models.encoders.build_tiny_clip`)
* ``builtin:tiny-vqa``  -> ``transformers`` ``Blip2ForConditionalGeneration`` /
  ``Blip2Processor.from_pretrained(folder)`` (:func:`benchmark.models.vqa_blip2.build_tiny_vqa`)
* ``builtin:tiny-detr`` -> ``DetrForObjectDetection.from_pretrained(folder)``
  (:func:`benchmark.models.detector.build_tiny_detr`)

Their outputs are meaningless (random weights): they exist to exercise the code.

This module gathers the builders for callers that know only a name
(:func:`ensure_builtin`); the loaders use ``builtin_cache`` directly and never import it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .builtin_cache import (
    BUILDER_VERSION,
    BUILTIN_KINDS,
    MARKER,
    build_builtin,
    builtin_path,
    cache_root,
    check_builtin_name,
)
from .detector import build_tiny_detr
from .encoders import TINY_CLIP_CONFIG, build_tiny_clip
from .tiny_sd import TINY_SD_SETTINGS, build_tiny_sd
from .vqa_blip2 import build_tiny_vqa

__all__ = [
    "BUILDER_VERSION",
    "BUILTIN_MODELS",
    "MARKER",
    "TINY_CLIP_CONFIG",
    "TINY_SD_SETTINGS",
    "builtin_path",
    "cache_root",
    "check_builtin_name",
    "ensure_builtin",
]

_BUILDERS: dict[str, Callable[[Path], None]] = {
    "tiny-sd": build_tiny_sd,
    "tiny-clip": build_tiny_clip,
    "tiny-vqa": build_tiny_vqa,
    "tiny-detr": build_tiny_detr,
}

#: name -> (kind of loader that serves it, builder writing its folder)
BUILTIN_MODELS: dict[str, tuple[str, Callable[[Path], None]]] = {
    name: (kind, _BUILDERS[name]) for name, kind in BUILTIN_KINDS.items()
}


def ensure_builtin(name: str, *, kind: str | None = None) -> Path:
    """Folder of built-in model ``name``, built (atomically) on first use."""
    check_builtin_name(name, kind)
    return build_builtin(name, BUILTIN_MODELS[name][1], kind=kind)
