"""Refusals that need no model weights and none of the heavy libraries (torch, diffusers,
transformers), made from ``model_index.json``, the model's card and its LoRAs' cards alone:

* a folder whose class is not text-to-image by its name (image-to-image, inpainting, ControlNet,
  refiner, upscaler, prior, video, audio: pipeline_classes.class_name_refusal) or is refused
  outright (DeepFloyd IF's stage I);
* a card that cannot be read (card_front_matter.py), a loop of ``base_model`` links, a folder whose
  class contradicts the base its card names (base_model.check_declared_base);
* a LoRA whose card names a base of another architecture (lora_card.judge_base), and
  ``--lora-trigger`` with no card naming a trigger.

A local folder and a Hub model in the local cache are checked; a Hub model not cached is left to
the full check (which may reach the Hub). ``t2ibench run`` / ``generate`` make these checks before
the task folders and the heavy libraries load (benchmark.commands.model_precheck: a refusal in
about a second instead of a minute on a loaded machine), and
:func:`benchmark.models.text_to_image.check_spec` makes them before it imports torch. The full
checks there repeat each (one implementation), so nothing is refused here that they would accept.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from .base_model import CardIdentity, card_identity, check_declared_base
from .errors import MalformedSpecError
from .lora import parse_lora_specs
from .lora_card import choose_trigger, judge_base, lora_label, read_lora_card
from .pipeline_classes import REFUSED, class_name_refusal

__all__ = ["MAX_INDEX_BYTES", "light_index", "check_without_weights"]

#: the largest model_index.json read (real ones are under 2 KiB)
MAX_INDEX_BYTES = 1024 * 1024


def light_index(kind: str, value: str, revision: str | None = None) -> dict | None:
    """``model_index.json`` of a local folder, or of a Hub model from the local cache; None when it
    cannot be had without the network (or the spec is no diffusers folder). A local folder without
    one, or one that is no JSON object, is refused in one line."""
    if kind == "local":
        path = Path(value) / "model_index.json"
        if not path.is_file():
            raise MalformedSpecError(f"local folder {value} has no model_index.json: it is not a diffusers pipeline")
    elif kind == "hub":
        from huggingface_hub import try_to_load_from_cache

        try:
            hit = try_to_load_from_cache(value, "model_index.json", revision=revision)
        except Exception:  # noqa: BLE001 - a malformed ID or a broken cache entry: the full check says which
            return None
        if not isinstance(hit, str):
            return None
        path = Path(hit)
    else:
        return None
    try:
        if path.stat().st_size > MAX_INDEX_BYTES:
            raise MalformedSpecError(f"{path} is {path.stat().st_size:,} bytes: not a model_index.json (they are "
                                     "under 2 KiB)")
        index = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise MalformedSpecError(f"{path} cannot be read as JSON ({type(err).__name__})") from None
    if not isinstance(index, dict):
        raise MalformedSpecError(f"{path} is not a JSON object: not a diffusers model_index.json")
    return index


def _check_loras(spec: str, declared: str, audited: list[str], loras: Sequence[str], lora_trigger) -> None:
    """The LoRAs' cards that can be read without the network: another architecture's base refused,
    ``--lora-trigger`` with no trigger in any card refused."""
    refs = parse_lora_specs(list(loras))
    cards, complete = [], True
    for ref in refs:
        card = read_lora_card(ref, None, local_only=True)
        if card is None and ref.repo:
            complete = False  # a Hub LoRA's card not cached: the full check reads it
        if card is not None:
            judge_base(card, lora_label(ref, card), audited, declared, spec)
        cards.append(card)
    if lora_trigger is True and complete and not any(c is not None and c.trigger for c in cards):
        choose_trigger([_NoCard(ref) for ref in refs], True)  # the one line of the full check


class _NoCard:
    """A LoRA whose card names no trigger, as choose_trigger reads an adapter."""

    card = None

    def __init__(self, ref) -> None:
        self.card_id = ref.name


def check_without_weights(spec: str, kind: str, value: str, *, revision: str | None = None, token=None,
                          loras: Sequence[str] = (), lora_trigger: bool | str | None = None) -> CardIdentity | None:
    """Every refusal of the module docstring that ``spec`` (parsed as ``kind``, ``value``) can get
    from the disk and the cache alone; returns the card identity read (None when there was nothing
    to read). One-line ``MalformedSpecError`` on the first problem."""
    index = light_index(kind, value, revision)
    if index is None:
        return None
    declared = str(index.get("_class_name") or "")
    if declared in REFUSED:
        raise MalformedSpecError(f"{spec}: {declared} {REFUSED[declared]}")
    why = class_name_refusal(declared)
    if why is not None:
        raise MalformedSpecError(f"{spec}: {declared} is {why}; the benchmark audits text-to-image models")
    identity = card_identity(kind, value, revision=revision, token=token, local_only=True)
    if declared:
        check_declared_base(spec, declared, identity)
        if loras:
            audited = [value if kind == "hub" else None, identity.own, *identity.bases]
            _check_loras(spec, declared, [a for a in audited if a], loras, lora_trigger)
    return identity
