"""Visual question answering annotators behind one interface: loading by spec.

Specs accepted by :func:`load_vqa`:

* a Hub model ID or local folder of a BLIP-2 model (``Salesforce/blip2-opt-2.7b``,
  the family DALL-Eval uses): ``Blip2ForConditionalGeneration`` + ``Blip2Processor``,
  each question wrapped as the paper does: ``"Question: {q} Answer:"``;
* a Hub model ID or local folder of any other image-text-to-text model
  (``AutoModelForImageTextToText`` + ``AutoProcessor``): the question goes through the
  processor's chat template when it has one, else it is sent as is;
* ``builtin:tiny-vqa``: a tiny random BLIP-2 (built by :func:`build_tiny_vqa` in ``vqa_blip2.py``), loaded from its folder
  through the same BLIP-2 path. Its answers are meaningless strings.

``kind="blip2"`` or ``kind="image-text-to-text"`` forces a path; by default the
``model_type`` of the model's ``config.json`` decides.


The model interface (:class:`VQAModel`: ``encode_images``, ``rank_answers``,
``answer_items``, ``answer``) and its records are in ``vqa_base.py``; the two backends in
``vqa_blip2.py`` (:class:`Blip2VQA`) and ``vqa_image_text.py``
(:class:`ImageTextToTextVQA`); turning answers into labels (``gender_label``,
``yes_no_label``, ``label_from_distribution``) in :mod:`benchmark.annotate.vqa_answers`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from benchmark.extras import require

from .builtin_cache import build_builtin, check_builtin_name
from .defaults import DEFAULT_VQA
from .device import resolve_device, resolve_dtype
from .errors import MalformedSpecError
from .hub_access import ensure_hub_model, looks_like_path
from .vqa_base import SCORE_NORMALISATIONS, ClosedItem, ImageFeatures, OpenItem, VQAModel, VQAStats
from .vqa_blip2 import BLIP2_PROMPT, Blip2VQA, build_tiny_vqa
from .vqa_image_text import ImageTextToTextVQA

__all__ = [
    "BLIP2_PROMPT",
    "DEFAULT_VQA",
    "SCORE_NORMALISATIONS",
    "ClosedItem",
    "OpenItem",
    "ImageFeatures",
    "VQAStats",
    "VQAModel",
    "Blip2VQA",
    "ImageTextToTextVQA",
    "check_vqa_spec",
    "load_vqa",
]


def check_vqa_spec(spec: Any, *, kind: str | None = None, revision: str | None = None,
                   token: str | bool | None = None) -> None:
    """One-line errors for a VQA spec before anything is loaded: its syntax, an unknown
    built-in, a missing local folder, a Hub model that is not cached and cannot be reached,
    gated or absent."""
    if not isinstance(spec, str) or not spec.strip():
        raise MalformedSpecError(f"malformed VQA spec {spec!r}: empty")
    if kind not in (None, "blip2", "image-text-to-text"):
        raise MalformedSpecError(f"unknown VQA kind {kind!r}: use blip2 or image-text-to-text")
    spec = spec.strip()
    if spec.startswith("builtin:"):
        check_builtin_name(spec[len("builtin:") :], "vqa")
    elif Path(os.path.expanduser(spec)).is_dir():
        return
    elif looks_like_path(spec):
        raise MalformedSpecError(f"local VQA model folder {spec!r} does not exist")
    elif ":" in spec:
        raise MalformedSpecError(f"malformed VQA spec {spec!r}: use a Hub model ID, a local folder or builtin:tiny-vqa")
    else:
        ensure_hub_model(spec, ["config.json"], revision=revision, token=token, what="VQA model")


#: closed-set (item, answer) sequences per forward pass on a CUDA GPU
CUDA_SCORE_BATCH_SIZE = 256


def load_vqa(
    spec: str = DEFAULT_VQA,
    *,
    kind: str | None = None,
    revision: str | None = None,
    device=None,
    dtype=None,
    batch_size: int = 16,
    max_new_tokens: int = 10,
    token: str | bool | None = None,
    score_batch_size: int | None = None,
    score_normalisation: str = "sum",
) -> VQAModel:
    """Load a VQA annotator (see module docstring); one-line errors before loading.

    ``batch_size``: images per vision pass and items per ``generate`` call;
    ``score_batch_size``: (item, answer) sequences per closed-set forward pass (None: 64, or
    :data:`CUDA_SCORE_BATCH_SIZE` on a CUDA GPU, where one forward of a few sequences leaves
    most of the GPU idle; a choice, not yet measured);
    ``score_normalisation``: ``"sum"`` or ``"mean"`` of the answer-token log-probabilities.
    """
    require("torch", "transformers", "PIL", extra="audit", purpose="label images with a VQA model")
    import torch

    if score_normalisation not in SCORE_NORMALISATIONS:
        raise MalformedSpecError(f"unknown VQA score normalisation {score_normalisation!r}: use sum or mean")
    check_vqa_spec(spec, kind=kind, revision=revision, token=token)
    opts = {"batch_size": batch_size, "max_new_tokens": max_new_tokens, "score_batch_size": score_batch_size,
            "score_normalisation": score_normalisation}
    spec = spec.strip()
    is_builtin = spec.startswith("builtin:")

    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev) if dev.type != "cpu" else torch.float32
    if score_batch_size is None:
        opts["score_batch_size"] = CUDA_SCORE_BATCH_SIZE if dev.type == "cuda" else 64

    if is_builtin:
        source = str(build_builtin(spec[len("builtin:") :], build_tiny_vqa, kind="vqa"))
        revision = None
    elif Path(os.path.expanduser(spec)).is_dir():
        source = str(Path(os.path.expanduser(spec)).resolve())
        revision = None
    else:
        source = spec

    from transformers import AutoConfig

    load_kwargs: dict[str, Any] = {"token": token}
    if revision:
        load_kwargs["revision"] = revision
    if kind is None:
        model_type = getattr(AutoConfig.from_pretrained(source, **load_kwargs), "model_type", "")
        kind = "blip2" if model_type == "blip-2" else "image-text-to-text"
    if kind == "blip2":
        from transformers import Blip2ForConditionalGeneration, Blip2Processor

        model = Blip2ForConditionalGeneration.from_pretrained(source, dtype=dt, **load_kwargs).to(dev)
        processor = Blip2Processor.from_pretrained(source, **load_kwargs)
        return Blip2VQA(model, processor, name=spec, device=dev, dtype=dt, is_builtin=is_builtin, **opts)
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(source, dtype=dt, **load_kwargs).to(dev)
    processor = AutoProcessor.from_pretrained(source, **load_kwargs)
    vqa = ImageTextToTextVQA(model, processor, name=spec, device=dev, dtype=dt, **opts)
    vqa.is_builtin = is_builtin
    return vqa

