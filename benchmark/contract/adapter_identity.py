"""Which model a results file's adapters make, as the leaderboard's row key: two files whose
images were made by the same weights and prompts are one row, whatever order their LoRAs were
named in or however their files are called.

* an adapter is known by its weights file's sha256 and its scale (never by its name or path:
  every diffusers LoRA file is ``pytorch_lora_weights.safetensors``);
* LoRAs are fused into the base weights (benchmark.models.lora): ``W + s1 B1 A1 + s2 B2 A2``, a sum,
  so the same LoRAs fused in either order give the same model (peft adds each delta in place, in
  order: the weights agree up to float rounding, tests/test_lora_card.py measures it), and the key
  lists them sorted. A DoRA (``dora: true`` in its record) rescales the weight it is fused into by
  that weight's norm, so its place in the order changes the result: with one, the order is kept;
* a plain LoRA at scale 0 adds nothing (the base's images exactly, tests/test_lora.py): it is
  left out, and the base with it is the base model's row;
* component checkpoints replace a component before any LoRA is fused: first, in their order;
* a trigger put before every prompt (``settings["lora_trigger"]``) changes the images: part of the key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from benchmark.contract.digest import sha256_hex

__all__ = ["adapters_key"]


def _part(record: Mapping) -> str:
    scale = record.get("scale")
    return (f"+{record.get('kind')}={str(record.get('sha256'))[:16]}"
            + (f"x{scale:g}" if isinstance(scale, (int, float)) and not isinstance(scale, bool) else ""))


def _adds_nothing(record: Mapping) -> bool:
    scale = record.get("scale")
    return (record.get("kind") == "lora" and not record.get("dora") and isinstance(scale, (int, float))
            and not isinstance(scale, bool) and scale == 0)


def adapters_key(adapters: Sequence[Mapping], *, trigger: str | None = None) -> str:
    """The part of a row key the adapters (results.json ``model.adapters``) and the LoRA trigger
    make ('' for a base model audited as published): module docstring."""
    components = [a for a in adapters if a.get("kind") != "lora"]
    loras = [a for a in adapters if a.get("kind") == "lora" and not _adds_nothing(a)]
    parts = [_part(a) for a in loras]
    if not any(a.get("dora") for a in loras):
        parts.sort()
    key = "".join(_part(a) for a in components) + "".join(parts)
    if isinstance(trigger, str) and trigger:
        key += f"+trigger={sha256_hex(trigger.encode('utf-8'))[:12]}"
    return key
