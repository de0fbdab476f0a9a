"""Loading models by spec string: text-to-image pipelines, CLIP encoders, VQA annotators.

* :func:`load_text_to_image` (``text_to_image.py``): ``builtin:tiny-sd``, a Hub model
  ID, a local diffusers folder, ``python:module:function`` or a callable; with LoRAs
  (``lora.py``, ``weights_ref.py``) and component checkpoints (``component_weights.py``);
  :func:`plan_settings`: every setting with its value and source before any weights load
  (``model_cards.py``, ``base_model.py``); guidance recorded and checked (``guidance.py``).
* :func:`load_encoder` (``encoders.py``): ``open_clip:ARCH:PRETRAINED``, ``hf:MODEL_ID``,
  ``builtin:tiny-clip``.
* :func:`load_vqa` (``vqa.py``): a BLIP-2 or image-text-to-text model ID / folder,
  ``builtin:tiny-vqa``; the answers' labels are read by :mod:`benchmark.annotate.vqa_answers`.
* :func:`load_detector` (``detector.py``): a DETR by Hub ID / folder, ``builtin:tiny-detr``.
* Built-in tiny models with random weights, each built beside its loader and cached by
  ``builtin_cache.py`` (``tiny.py`` lists them by name), the offline CLIP tokenizer
  (``clip_tokenizer.py``), device choice (``device.py``), Hub checks (``hub_access.py``).

Every bad spec raises :class:`ModelSpecError` (one line) before any heavy work.
Names are imported lazily, so ``import benchmark.models`` does not import torch.
"""

from __future__ import annotations

import importlib

from . import errors
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
    "plan_settings": "text_to_image",
    "SettingsPlan": "text_to_image",
    "parse_lora_specs": "lora",
    "TextToImageModel": "text_to_image_base",
    "GenerationOutput": "text_to_image",
    "MODEL_CARD_SETTINGS": "model_cards",
    "load_encoder": "encoders",
    "ImageTextEncoder": "encoders",
    "DEFAULT_ENCODER": "encoders",
    "load_vqa": "vqa",
    "VQAModel": "vqa",
    "BLIP2_PROMPT": "vqa",
    "DEFAULT_VQA": "vqa",
    "BUILTIN_MODELS": "tiny",
    "ensure_builtin": "tiny",
    "resolve_device": "device",
}

__all__ = [*errors.__all__, *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
