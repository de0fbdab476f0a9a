"""Loading models by spec string: text-to-image pipelines, CLIP encoders, VQA annotators.

* :func:`load_text_to_image` (``text_to_image.py``): ``builtin:tiny-sd``, a Hub model
  ID, a local diffusers folder, ``python:module:function`` or a callable.
* :func:`load_encoder` (``encoders.py``): ``open_clip:ARCH:PRETRAINED``, ``hf:MODEL_ID``,
  ``builtin:tiny-clip``.
* :func:`load_vqa` (``vqa.py``): a BLIP-2 or image-text-to-text model ID / folder,
  ``builtin:tiny-vqa``; :func:`gender_label`, :func:`yes_no_label`.
* Built-in tiny models with random weights (``tiny.py``), the offline CLIP tokenizer
  (``clip_tokenizer.py``), device choice (``device.py``), Hub checks (``hub_access.py``).

Every bad spec raises :class:`ModelSpecError` (one line) before any heavy work.
Names are imported lazily, so ``import benchmark.models`` does not import torch.
"""

from __future__ import annotations

import importlib

from .errors import (
    DeviceUnavailableError,
    GatedModelError,
    MalformedSpecError,
    ModelNotAvailableError,
    ModelNotFoundError,
    ModelSpecError,
    UnknownBuiltinError,
)

_LAZY = {
    "load_text_to_image": "text_to_image",
    "TextToImageModel": "text_to_image",
    "GenerationOutput": "text_to_image",
    "FAMILY_DEFAULTS": "text_to_image",
    "load_encoder": "encoders",
    "ImageTextEncoder": "encoders",
    "DEFAULT_ENCODER": "encoders",
    "GENERATED_BIAS_ENCODERS": "encoders",
    "load_vqa": "vqa",
    "VQAModel": "vqa",
    "BLIP2_PROMPT": "vqa",
    "DEFAULT_VQA": "vqa",
    "gender_label": "vqa",
    "yes_no_label": "vqa",
    "answer_to_label": "vqa",
    "BUILTIN_MODELS": "tiny",
    "ensure_builtin": "tiny",
    "resolve_device": "device",
}

__all__ = [
    "ModelSpecError",
    "MalformedSpecError",
    "UnknownBuiltinError",
    "ModelNotFoundError",
    "ModelNotAvailableError",
    "GatedModelError",
    "DeviceUnavailableError",
    *_LAZY,
]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
