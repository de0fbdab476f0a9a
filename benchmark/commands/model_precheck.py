"""``t2ibench run`` / ``generate`` of a diffusers pipeline: the refusals that need no weights and no
heavy library (benchmark.models.light_checks: an image-to-image, inpainting, ControlNet or refiner
folder, a card that cannot be read, a folder whose class contradicts its card's base_model, a LoRA
whose card names another architecture's base), made before the task folders, torch, diffusers and
transformers load (``benchmark.cli.main`` runs a command's ``prechecks``): such a folder is refused in
about a second, where it took 35 to 65 s on a loaded machine (bench/early_refusals.py measures)."""

from __future__ import annotations

import argparse

from benchmark.models.light_checks import check_without_weights
from benchmark.models.text_to_image import parse_text_to_image_spec

__all__ = ["check_model_first"]


def check_model_first(args: argparse.Namespace) -> None:
    """The light checks of ``--model`` (a local folder, or a Hub model in the local cache) with its
    ``--lora`` and ``--lora-trigger``; nothing to do for images made elsewhere, a callable or an image
    API. A one-line ValueError."""
    model = getattr(args, "model", None)
    if not model or getattr(args, "images", None):
        return
    if getattr(args, "lora_trigger", None) is not None and not args.lora:
        raise ValueError("--lora-trigger goes with --lora (a trigger word activates a LoRA)")
    kind, value = parse_text_to_image_spec(model)
    if kind not in ("local", "hub"):
        return
    check_without_weights(model, kind, value, revision=getattr(args, "revision", None), loras=args.lora or (),
                          lora_trigger=getattr(args, "lora_trigger", None))
