"""``--lora-unet-only``: a LoRA whose text-encoder layers cannot be loaded here (transformers loads
them only with a newer peft than the package index has) applied to the denoiser alone, and the
layers left out recorded in its identity record, so a partial load is never silent.

* :func:`skipped_layers`: which components' layers are skipped, and how many of each (a LoRA of
  text encoders alone is refused: the flag would apply nothing of it);
* :func:`load_denoiser_layers`: the LoRA read as ``load_lora_weights`` reads it (state dict, alphas,
  metadata) and loaded through the pipeline's own ``load_lora_into_unet`` /
  ``load_lora_into_transformer``: the denoiser's layers as diffusers places them, nothing else.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path

from .errors import MalformedSpecError

__all__ = ["skipped_layers", "load_denoiser_layers"]


def skipped_layers(card_id: str, layers: Sequence, components: Mapping, unet_only: bool) -> tuple:
    """(component, number of adapted modules) of each text encoder (a transformers component)
    the LoRA adapts, when ``unet_only``; () otherwise. ``layers``: ((component, _, module path),
    part, shape) of each LoRA tensor."""
    if not unet_only:
        return ()
    targets = list(dict.fromkeys(component for (component, _, _), _, _ in layers))
    skipped = tuple((c, len({path for (comp, _, path), _, _ in layers if comp == c})) for c in targets
                    if components[c][0] == "transformers")
    if len(skipped) == len(targets):
        raise MalformedSpecError(f"LoRA {card_id} adapts only text encoders ({', '.join(targets)}): "
                                 "--lora-unet-only would apply nothing of it")
    return skipped


def load_denoiser_layers(pipe, file: str | Path, name: str) -> None:
    """The LoRA in ``file`` loaded as adapter ``name`` into ``pipe``'s denoiser alone (module
    docstring)."""
    read = pipe.lora_state_dict
    wants = inspect.signature(read).parameters
    options = {k: True for k in ("return_alphas", "return_lora_metadata") if k in wants}
    out = read(str(file), **options)
    parts = list(out) if isinstance(out, tuple) else [out]
    state, alphas, metadata = parts[0], None, None
    if options.get("return_lora_metadata") and len(parts) > 1:
        metadata = parts.pop()
    if len(parts) > 1:
        alphas = parts[1]
    component = "unet" if getattr(pipe, "unet", None) is not None else "transformer"
    load = getattr(pipe, f"load_lora_into_{component}")
    given = {"network_alphas": alphas, component: getattr(pipe, component), "adapter_name": name,
             "metadata": metadata, "_pipeline": pipe}
    takes = inspect.signature(load).parameters
    load(state, **{k: v for k, v in given.items() if k in takes})
