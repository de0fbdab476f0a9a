"""Each model's recommended generation settings, as its makers publish them, and where every
setting of a run comes from.

A bias audit of a model at settings its makers do not use measures another model: SDXL-Turbo
at 50 steps and guidance 5 is not SDXL-Turbo. So the call arguments of a diffusers pipeline
are chosen in this order, and the source of each is recorded (``run_config.json``
``setting_sources``) and printed in the plan:

1. ``--set KEY=VALUE`` (``"--set"``);
2. :data:`MODEL_CARD_SETTINGS`, keyed by Hub model ID: the settings of the model card's own
   example, each row citing its card (``"model card (URL)"``);
3. a structural hint read from a component's config where the architecture says it, e.g. a
   FLUX transformer without guidance embeddings is timestep-distilled like FLUX.1 [schnell]
   (``"config: ..."``);
4. the pipeline's own call defaults (``"pipeline default"``); the resolution is then the
   one the pipeline computes from its config (``sample_size x vae_scale_factor``).

Adding a model is one row below and one line in tests/test_model_cards.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ModelCardRow",
    "MODEL_CARD_SETTINGS",
    "SOURCE_SET",
    "SOURCE_PIPELINE",
    "SOURCE_BUILTIN",
    "card_row",
    "structural_hint",
    "choose_call_settings",
]

SOURCE_SET = "--set"
SOURCE_PIPELINE = "pipeline default"
SOURCE_BUILTIN = "built-in model"
CARD = "https://huggingface.co/"


@dataclass(frozen=True)
class ModelCardRow:
    """One model (``ids``: its Hub IDs, old names included), the settings of its card's example
    and the card (``source``)."""

    name: str
    ids: tuple[str, ...]
    settings: Mapping[str, Any]
    source: str
    note: str = ""

    @property
    def source_text(self) -> str:
        return f"model card ({self.source})"


def _row(name: str, ids: str | tuple[str, ...], note: str = "", **settings: Any) -> ModelCardRow:
    ids = (ids,) if isinstance(ids, str) else ids
    return ModelCardRow(name=name, ids=ids, settings=settings, source=CARD + ids[0], note=note)


#: The models people audit, with the settings of their model card's example (the card is the
#: source of every value; a value the card leaves out is the pipeline's default).
MODEL_CARD_SETTINGS: tuple[ModelCardRow, ...] = (
    _row("Stable Diffusion 1.4", "CompVis/stable-diffusion-v1-4", num_inference_steps=50, guidance_scale=7.5,
         height=512, width=512),
    _row("Stable Diffusion 1.5", ("stable-diffusion-v1-5/stable-diffusion-v1-5", "runwayml/stable-diffusion-v1-5"),
         num_inference_steps=50, guidance_scale=7.5, height=512, width=512),
    _row("Stable Diffusion 2 / 2.1 (768-v)", ("stabilityai/stable-diffusion-2-1", "stabilityai/stable-diffusion-2"),
         num_inference_steps=50, guidance_scale=7.5, height=768, width=768),
    _row("Stable Diffusion 2 / 2.1 base", ("stabilityai/stable-diffusion-2-1-base",
                                           "stabilityai/stable-diffusion-2-base"),
         num_inference_steps=50, guidance_scale=7.5, height=512, width=512),
    _row("SDXL base 1.0", "stabilityai/stable-diffusion-xl-base-1.0", num_inference_steps=50, guidance_scale=5.0,
         height=1024, width=1024),
    _row("SDXL-Turbo", "stabilityai/sdxl-turbo", "1 to 4 steps; trained at 512 px; no guidance",
         num_inference_steps=1, guidance_scale=0.0, height=512, width=512),
    _row("SD-Turbo", "stabilityai/sd-turbo", "1 to 4 steps; trained at 512 px; no guidance",
         num_inference_steps=1, guidance_scale=0.0, height=512, width=512),
    _row("LCM Dreamshaper v7", "SimianLuo/LCM_Dreamshaper_v7", "1 to 8 steps",
         num_inference_steps=4, guidance_scale=8.0, height=768, width=768),
    _row("Playground v2.5", "playgroundai/playground-v2.5-1024px-aesthetic", num_inference_steps=50,
         guidance_scale=3.0, height=1024, width=1024),
    _row("SD 3 Medium", "stabilityai/stable-diffusion-3-medium-diffusers", num_inference_steps=28,
         guidance_scale=7.0, height=1024, width=1024),
    _row("SD 3.5 Large", "stabilityai/stable-diffusion-3.5-large", num_inference_steps=28, guidance_scale=3.5,
         height=1024, width=1024),
    _row("SD 3.5 Large Turbo", "stabilityai/stable-diffusion-3.5-large-turbo", "timestep-distilled: no guidance",
         num_inference_steps=4, guidance_scale=0.0, height=1024, width=1024),
    _row("SD 3.5 Medium", "stabilityai/stable-diffusion-3.5-medium", num_inference_steps=40, guidance_scale=4.5,
         height=1024, width=1024),
    _row("FLUX.1 [dev]", "black-forest-labs/FLUX.1-dev", "guidance is a distilled embedding, not CFG",
         num_inference_steps=50, guidance_scale=3.5, height=1024, width=1024, max_sequence_length=512),
    _row("FLUX.1 [schnell]", "black-forest-labs/FLUX.1-schnell", "timestep-distilled: 1 to 4 steps, no guidance",
         num_inference_steps=4, guidance_scale=0.0, max_sequence_length=256),
    _row("PixArt-Alpha 1024", "PixArt-alpha/PixArt-XL-2-1024-MS", num_inference_steps=20, guidance_scale=4.5,
         height=1024, width=1024),
    _row("PixArt-Sigma 1024", "PixArt-alpha/PixArt-Sigma-XL-2-1024-MS", num_inference_steps=20,
         guidance_scale=4.5, height=1024, width=1024),
    _row("Sana 1600M 1024", "Efficient-Large-Model/Sana_1600M_1024px_diffusers", num_inference_steps=20,
         guidance_scale=4.5, height=1024, width=1024),
    _row("Kandinsky 2.2", "kandinsky-community/kandinsky-2-2-decoder", "the combined prior + decoder pipeline",
         prior_guidance_scale=1.0, height=768, width=768),
    _row("Kandinsky 3", "kandinsky-community/kandinsky-3", num_inference_steps=25),
    _row("Stable Cascade", "stabilityai/stable-cascade", "the combined prior + decoder pipeline",
         prior_num_inference_steps=20, prior_guidance_scale=4.0, num_inference_steps=10, decoder_guidance_scale=0.0,
         height=1024, width=1024),
    _row("Würstchen v2", "warp-ai/wuerstchen", prior_guidance_scale=4.0, height=1024, width=1024),
    _row("Karlo v1 alpha (unCLIP)", "kakaobrain/karlo-v1-alpha", "the card calls the pipeline with its defaults"),
)


def card_row(model_id: str | None) -> ModelCardRow | None:
    """The table's row of a Hub model ID (case-insensitive, as the Hub resolves IDs), or None."""
    if not model_id:
        return None
    wanted = str(model_id).strip().lower()
    for row in MODEL_CARD_SETTINGS:
        if wanted in (i.lower() for i in row.ids):
            return row
    return None


#: (pipeline class prefix, component, config key, value, settings, reason): settings a component's
#: config implies whatever the model is called.
_HINTS: tuple[tuple[str, str, str, Any, Mapping[str, Any], str], ...] = (
    ("Flux", "transformer", "guidance_embeds", False,
     {"num_inference_steps": 4, "guidance_scale": 0.0, "max_sequence_length": 256},
     "config: a FLUX transformer without guidance embeddings is timestep-distilled like FLUX.1 [schnell]"),
)


def structural_hint(pipeline_class: str, read_config: Callable[[str], Mapping | None]) -> tuple[dict, str] | None:
    """Settings a component's config implies (``read_config(component)``: its config dict or
    None), with the reason; None when no hint applies."""
    for prefix, component, key, value, settings, reason in _HINTS:
        if not pipeline_class.startswith(prefix):
            continue
        config = read_config(component)
        if config is not None and key in config and config[key] == value:
            return dict(settings), reason
    return None


def choose_call_settings(params: Mapping[str, Any], *, pipeline_class: str, model_id: str | None,
                         read_config: Callable[[str], Mapping | None], overrides: Mapping[str, Any],
                         builtin: Mapping[str, Any] | None = None) -> tuple[dict, dict]:
    """``(settings, sources)``: the call arguments to set explicitly and where each came from.

    ``params``: the pipeline call's named parameters (``inspect.Parameter`` values): only
    these are set, and a parameter none of the sources sets keeps the pipeline's default
    (recorded as such for the settings every audit compares: steps, guidance, resolution).
    ``builtin``: the settings of a built-in model (they replace the table and the hints)."""
    settings: dict[str, Any] = {}
    sources: dict[str, str] = {}

    def take(values: Mapping[str, Any], source: str) -> None:
        for key, value in values.items():
            if key in params and key not in settings:
                settings[key] = value
                sources[key] = source

    take({k: v for k, v in overrides.items() if k in params}, SOURCE_SET)
    if builtin is not None:
        take(builtin, SOURCE_BUILTIN)
    else:
        row = card_row(model_id)
        if row is not None:
            take(row.settings, row.source_text)
        hint = structural_hint(pipeline_class, read_config)
        if hint is not None:
            take(*hint)
    for key in ("num_inference_steps", "guidance_scale", "height", "width"):
        if key in params and key not in settings:
            sources[key] = SOURCE_PIPELINE
            default = params[key].default
            if default is not None and default is not params[key].empty:
                settings[key] = default
    return settings, sources
