"""Each model's recommended generation settings, as its makers publish them, and where every
setting of a run comes from.

A bias audit of a model at settings its makers do not use measures another model: SDXL-Turbo
at 50 steps and guidance 5 is not SDXL-Turbo. So the call arguments of a diffusers pipeline
are chosen in this order, and the source of each is recorded (``run_config.json``
``setting_sources``) and printed in the plan:

1. ``--set KEY=VALUE`` (``"--set"``);
2. :data:`MODEL_CARD_SETTINGS`, keyed by Hub model ID (adapters and component checkpoints by
   ``ORG/NAME/FILE``): the settings of the model card's own example, each row citing its card
   (``"model card (URL)"``): first each LoRA's row (SDXL-Lightning's steps and scheduler win over
   SDXL's), then the model's own (a local copy matched to its Hub ID: base_model.py), then the
   row of the nearest ``base_model`` its model card names (``"model card of base_model ID (URL)"``);
3. a structural hint read from a component's config where the architecture says it, e.g. a
   FLUX transformer without guidance embeddings is timestep-distilled like FLUX.1 [schnell]
   (``"config: ..."``);
4. the pipeline's own call defaults (``"pipeline default"``); the resolution is then the
   one the pipeline computes from its config (``sample_size x vae_scale_factor``).

Adding a model is one row below and one line in tests/test_model_cards.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmark.present.text import markdown_table

from .call_settings import SCHEDULER_SETTINGS

__all__ = [
    "ModelCardRow",
    "MODEL_CARD_SETTINGS",
    "SOURCE_SET",
    "SOURCE_PIPELINE",
    "SOURCE_BUILTIN",
    "COMPARED_SETTINGS",
    "CardSource",
    "card_row",
    "card_sources",
    "card_table_markdown",
    "structural_hint",
    "choose_call_settings",
    "on_pipeline_defaults",
    "settings_warning",
]

SOURCE_SET = "--set"
SOURCE_PIPELINE = "pipeline default"
SOURCE_BUILTIN = "built-in model"
CARD = "https://huggingface.co/"
#: the settings every audit compares: recorded with their source even when the pipeline's default
COMPARED_SETTINGS = ("num_inference_steps", "guidance_scale", "true_cfg_scale", "height", "width")


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
    """A row citing the card of its first ID's repo (``ORG/NAME``, also for ``ORG/NAME/FILE`` keys)."""
    ids = (ids,) if isinstance(ids, str) else ids
    return ModelCardRow(name=name, ids=ids, settings=settings, source=CARD + "/".join(ids[0].split("/")[:2]),
                        note=note)


#: DEFAULT_STAGE_C_TIMESTEPS of diffusers' Würstchen pipeline, which warp-ai/wuerstchen's card passes as
#: ``prior_timesteps``: 20 steps from 1 to 2/3, then 10 more to 0 (tests/test_model_cards.py compares)
WUERSTCHEN_PRIOR_TIMESTEPS = tuple([1.0 + (2 / 3 - 1.0) * i / 19 for i in range(20)]
                                   + [2 / 3 - 2 / 3 * i / 10 for i in range(1, 11)])
#: the scheduler and spacing few-step LoRAs / UNets are distilled for (each card swaps the scheduler so)
_TRAILING_EULER = {"scheduler": "EulerDiscreteScheduler", "timestep_spacing": "trailing"}
_TRAILING_DDIM = {"scheduler": "DDIMScheduler", "timestep_spacing": "trailing"}


def _lightning(kind: str, steps: int, **extra: Any) -> ModelCardRow:
    """SDXL-Lightning's LoRA / UNet for ``steps`` steps: https://huggingface.co/ByteDance/SDXL-Lightning
    ("Please always use the correct checkpoint for the corresponding inference steps"; Euler with
    trailing timesteps, guidance 0; the 1-step UNet predicts the sample)."""
    what = "UNet checkpoint (run it with unet=)" if kind == "unet" else "LoRA on SDXL base 1.0"
    return _row(f"SDXL-Lightning {steps}-step {'UNet' if kind == 'unet' else 'LoRA'}",
                f"ByteDance/SDXL-Lightning/sdxl_lightning_{steps}step_{kind}.safetensors", what,
                num_inference_steps=steps, guidance_scale=0.0, **_TRAILING_EULER, **extra)


def _hyper(base: str, steps: int) -> ModelCardRow:
    """Hyper-SD's N-step LoRA: https://huggingface.co/ByteDance/Hyper-SD (DDIM with trailing
    timesteps, guidance 0, fused at scale 1)."""
    name = "SDXL" if base == "sdxl" else "SD15"
    return _row(f"Hyper-{name} {steps}-step LoRA", f"ByteDance/Hyper-SD/Hyper-{name}-{steps}steps-lora.safetensors",
                f"LoRA on {'SDXL base 1.0' if base == 'sdxl' else 'SD 1.5'}", num_inference_steps=steps,
                guidance_scale=0.0, **_TRAILING_DDIM)


#: The models people audit, with the settings of their model card's example (the card is the
#: source of every value; a value the card leaves out is the pipeline's default). Adapters (LoRAs)
#: and component checkpoints are keyed ``ORG/NAME/FILE`` (their card is the repo's).
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
    _row("Playground v2", "playgroundai/playground-v2-1024px-aesthetic", guidance_scale=3.0, height=1024,
         width=1024),
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
    _row("FLUX.1 Krea [dev]", "black-forest-labs/FLUX.1-Krea-dev", "the card leaves the steps at the pipeline's 28",
         guidance_scale=4.5, height=1024, width=1024),
    _row("PixArt-Alpha 1024", "PixArt-alpha/PixArt-XL-2-1024-MS", num_inference_steps=20, guidance_scale=4.5,
         height=1024, width=1024),
    _row("PixArt-Sigma 1024", "PixArt-alpha/PixArt-Sigma-XL-2-1024-MS", num_inference_steps=20,
         guidance_scale=4.5, height=1024, width=1024),
    _row("PixArt-LCM 1024", "PixArt-alpha/PixArt-LCM-XL-2-1024-MS", "latent consistency: no guidance",
         num_inference_steps=4, guidance_scale=0.0, height=1024, width=1024),
    _row("Sana 1600M 1024", ("Efficient-Large-Model/Sana_1600M_1024px_diffusers",
                             "Efficient-Large-Model/Sana_1600M_1024px_BF16_diffusers"),
         "4.5 as the card's and NVlabs' inference script's (the 600M models' examples use 5.0)",
         num_inference_steps=20, guidance_scale=4.5, height=1024, width=1024),
    # Sana 512 and 2K: UNVERIFIED. Neither card's diffusers example could be read (only their front matter and
    # sample tables); NVlabs' model zoo (https://github.com/NVlabs/Sana/blob/main/asset/docs/model_zoo.md) gives
    # 20 steps and guidance 5.0 for its 1024 fp16 and 4K examples, 4.5 for its int4 one, and none for 512 or 2K
    _row("Sana 1600M 512", "Efficient-Large-Model/Sana_1600M_512px_diffusers",
         "steps and guidance unverified (the card's example could not be read)", num_inference_steps=20,
         guidance_scale=4.5, height=512, width=512),
    _row("Sana 1600M 2K", "Efficient-Large-Model/Sana_1600M_2Kpx_BF16_diffusers",
         "steps and guidance unverified (the card's example could not be read)", num_inference_steps=20,
         guidance_scale=4.5, height=2048, width=2048),
    _row("Sana 1600M 4K", "Efficient-Large-Model/Sana_1600M_4Kpx_BF16_diffusers",
         "the card decodes 4K with VAE tiling", num_inference_steps=20, guidance_scale=5.0, height=4096,
         width=4096),
    _row("Sana 600M 1024", "Efficient-Large-Model/Sana_600M_1024px_diffusers", num_inference_steps=20,
         guidance_scale=5.0, height=1024, width=1024),
    _row("Sana 600M 512", "Efficient-Large-Model/Sana_600M_512px_diffusers", num_inference_steps=20,
         guidance_scale=5.0, height=512, width=512),
    # checked against diffusers' Kandinsky 2.1 AutoPipelineForText2Image example (the same prompt, negative prompt,
    # prior guidance 1.0, guidance 4.0, 768 px): https://huggingface.co/docs/diffusers/api/pipelines/kandinsky
    # (the Hub card's own text could not be read here)
    _row("Kandinsky 2.1", "kandinsky-community/kandinsky-2-1", "the combined prior + decoder pipeline",
         prior_guidance_scale=1.0, guidance_scale=4.0, negative_prompt="low quality, bad quality", height=768,
         width=768),
    _row("Kandinsky 2.2", "kandinsky-community/kandinsky-2-2-decoder", "the combined prior + decoder pipeline",
         prior_guidance_scale=1.0, height=768, width=768),
    _row("Kandinsky 3", "kandinsky-community/kandinsky-3", num_inference_steps=25),
    _row("Stable Cascade", "stabilityai/stable-cascade", "the combined prior + decoder pipeline",
         prior_num_inference_steps=20, prior_guidance_scale=4.0, num_inference_steps=10, decoder_guidance_scale=0.0,
         height=1024, width=1024),
    _row("Würstchen v2", "warp-ai/wuerstchen", "the prior's 30 timesteps are diffusers' DEFAULT_STAGE_C_TIMESTEPS",
         prior_timesteps=list(WUERSTCHEN_PRIOR_TIMESTEPS), prior_guidance_scale=4.0, height=1024, width=1536),
    _row("Karlo v1 alpha (unCLIP)", "kakaobrain/karlo-v1-alpha", "the card calls the pipeline with its defaults"),
    _row("Qwen-Image", "Qwen/Qwen-Image", "the card's negative prompt ' ' turns true CFG on (without one diffusers "
         "runs unguided); its prompt suffix is not added", num_inference_steps=50, true_cfg_scale=4.0,
         negative_prompt=" ", height=1328, width=1328),
    _row("Z-Image-Turbo", "Tongyi-MAI/Z-Image-Turbo", "distilled: guidance 0 (9 steps = 8 forward passes)",
         num_inference_steps=9, guidance_scale=0.0, height=1024, width=1024),
    _row("HiDream-I1 Full", "HiDream-ai/HiDream-I1-Full", num_inference_steps=50, guidance_scale=5.0, height=1024,
         width=1024),
    _row("HiDream-I1 Dev", "HiDream-ai/HiDream-I1-Dev", "guidance-distilled: no guidance", num_inference_steps=28,
         guidance_scale=0.0, height=1024, width=1024),
    _row("HiDream-I1 Fast", "HiDream-ai/HiDream-I1-Fast", "guidance-distilled: no guidance", num_inference_steps=16,
         guidance_scale=0.0, height=1024, width=1024),
    _row("CogView3-Plus", "THUDM/CogView3-Plus-3B", num_inference_steps=50, guidance_scale=7.0, height=1024,
         width=1024),
    _row("CogView4", "THUDM/CogView4-6B", num_inference_steps=50, guidance_scale=3.5, height=1024, width=1024),
    _row("Lumina-Image 2.0", "Alpha-VLLM/Lumina-Image-2.0", "its model_index.json names Lumina2Text2ImgPipeline, "
         "diffusers' Lumina2Pipeline", num_inference_steps=50, guidance_scale=4.0, cfg_trunc_ratio=0.25,
         cfg_normalization=True, height=1024, width=1024),
    # checked: the makers' diffusers example and notes (EulerDiscreteScheduler, "guidance scale=5.0 and
    # num_inference_steps=50", negative_prompt=""): https://github.com/Kwai-Kolors/Kolors#using-with-diffusers
    _row("Kolors", "Kwai-Kolors/Kolors-diffusers", "needs the sentencepiece package", num_inference_steps=50,
         guidance_scale=5.0, negative_prompt=""),
    # checked: the v0.3 card's example is 1536 x 768, 50 steps, guidance 3.5: its README commit
    # https://huggingface.co/fal/AuraFlow-v0.3/commit/f11fd0216114872df4a1e7eed9c4c3f749ba3d5f removed v0.2's
    # height=1024, width=1024, and copies of the v0.3 card (https://huggingface.co/terminusresearch/auraflow-v0.3)
    # show width=1536, height=768
    _row("AuraFlow v0.3", "fal/AuraFlow-v0.3", "the card's example is landscape (v0.3 supports sides up to 1536)",
         num_inference_steps=50, guidance_scale=3.5, height=768, width=1536),
    # checked: num_inference_steps=2 in the diffusers example; guidance 4.5 (embedded, not CFG) and 1024 px in the
    # repo's own example, both the pipeline's defaults: https://github.com/NVlabs/Sana/blob/main/asset/docs/sana_sprint.md
    _row("SANA-Sprint 1.6B", "Efficient-Large-Model/Sana_Sprint_1.6B_1024px_diffusers",
         "2 steps; guidance is an input of the transformer, not CFG", num_inference_steps=2, guidance_scale=4.5,
         height=1024, width=1024),
    # few-step LoRAs and UNets: keyed ORG/NAME/FILE, they come before their base's row
    _lightning("lora", 2), _lightning("lora", 4), _lightning("lora", 8),
    _lightning("unet", 1, prediction_type="sample"), _lightning("unet", 2), _lightning("unet", 4),
    _lightning("unet", 8),
    # checked: the card's "Text-to-Image Usage", SDXL and SD1.5 "2-Steps, 4-Steps, 8-steps LoRA" (DDIMScheduler with
    # timestep_spacing="trailing", guidance_scale=0, fuse_lora()): https://huggingface.co/ByteDance/Hyper-SD; the file
    # names Hyper-SDXL-/Hyper-SD15-{2,4,8}steps-lora.safetensors: https://huggingface.co/ByteDance/Hyper-SD/tree/main
    _hyper("sdxl", 2), _hyper("sdxl", 4), _hyper("sdxl", 8), _hyper("sd15", 2), _hyper("sd15", 4), _hyper("sd15", 8),
    _row("LCM-LoRA SD 1.5", ("latent-consistency/lcm-lora-sdv1-5/pytorch_lora_weights.safetensors",
                             "latent-consistency/lcm-lora-sdv1-5"), "LoRA on SD 1.5: LCM scheduler, no guidance",
         num_inference_steps=4, guidance_scale=0.0, scheduler="LCMScheduler"),
    _row("LCM-LoRA SDXL", ("latent-consistency/lcm-lora-sdxl/pytorch_lora_weights.safetensors",
                           "latent-consistency/lcm-lora-sdxl"), "LoRA on SDXL base 1.0: LCM scheduler, no guidance",
         num_inference_steps=4, guidance_scale=0.0, scheduler="LCMScheduler"),
    # checked: TCDScheduler, 4 steps, guidance 0, eta 0.3 ("A value of 0.3 often yields good results"), in the makers'
    # SDXL example https://github.com/jabir-zheng/TCD#text-to-image-generation and the SD 1.5 card
    # https://huggingface.co/h1t/TCD-SD15-LoRA; the weight file: https://huggingface.co/h1t/TCD-SDXL-LoRA/tree/main
    _row("TCD SDXL LoRA", ("h1t/TCD-SDXL-LoRA/pytorch_lora_weights.safetensors", "h1t/TCD-SDXL-LoRA"),
         "LoRA on SDXL base 1.0: TCD scheduler, gamma (eta) 0.3", num_inference_steps=4, guidance_scale=0.0,
         eta=0.3, scheduler="TCDScheduler"),
    _row("TCD SD 1.5 LoRA", ("h1t/TCD-SD15-LoRA/pytorch_lora_weights.safetensors", "h1t/TCD-SD15-LoRA"),
         "LoRA on SD 1.5: TCD scheduler, gamma (eta) 0.3", num_inference_steps=4, guidance_scale=0.0, eta=0.3,
         scheduler="TCDScheduler"),
)


def _setting_text(key: str, value: Any) -> str:
    if isinstance(value, (list, tuple)) and len(value) > 4:
        return f"`{key}=[{len(value)} values]`"
    return f"`{key}={value!r}`" if isinstance(value, str) else f"`{key}={value}`"


def card_table_markdown() -> str:
    """The table as docs/models.md shows it (tests/test_model_cards.py checks the page holds it)."""
    rows = [(row.name, f"[`{row.ids[0]}`]({row.source})",
             ", ".join(_setting_text(k, v) for k, v in row.settings.items()) or "the pipeline's defaults", row.note)
            for row in MODEL_CARD_SETTINGS]
    return markdown_table(["model", "Hub ID (adapters: ORG/NAME/FILE)", "settings (the card's example)", "note"], rows)


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


@dataclass(frozen=True)
class CardSource:
    """Settings from one model card and the source text recorded for each of them."""

    settings: Mapping[str, Any]
    source: str


def card_sources(*, own: str | None = None, adapters: Sequence[str] = (), bases: Sequence[str] = (),
                 how: str | None = None) -> list[CardSource]:
    """The card rows that apply, in order: each adapter's (by its ``ORG/NAME/FILE`` or path), the
    model's own (``own``: its Hub ID, or what a local copy was matched to, ``how``), then the
    nearest ``base_model`` with a row (base_model.py)."""
    found: list[CardSource] = []
    for adapter in adapters:
        row = card_row(adapter)
        if row is not None:
            found.append(CardSource(row.settings, f"{row.source_text} for {adapter}"))
    row = card_row(own)
    if row is not None:
        found.append(CardSource(row.settings, row.source_text + (f"; matched by {how}" if how else "")))
    for base in bases:
        row = card_row(base)
        if row is not None:
            found.append(CardSource(row.settings, f"model card of base_model {base} ({row.source})"))
            break
    return found


def choose_call_settings(params: Mapping[str, Any], *, pipeline_class: str, model_id: str | None = None,
                         read_config: Callable[[str], Mapping | None], overrides: Mapping[str, Any],
                         builtin: Mapping[str, Any] | None = None,
                         cards: Sequence[CardSource] | None = None) -> tuple[dict, dict]:
    """``(settings, sources)``: the call arguments (and the loader's scheduler settings,
    :data:`benchmark.models.call_settings.SCHEDULER_SETTINGS`) to set explicitly and where each came from.

    ``params``: the pipeline call's named parameters (``inspect.Parameter`` values): only
    these are set, and a parameter none of the sources sets keeps the pipeline's default
    (recorded as such for the settings every audit compares: steps, guidance, resolution).
    ``cards``: the card rows that apply (:func:`card_sources`; default: ``model_id``'s own row);
    ``builtin``: the settings of a built-in model (they replace the cards and the hints)."""
    settings: dict[str, Any] = {}
    sources: dict[str, str] = {}

    def take(values: Mapping[str, Any], source: str) -> None:
        for key, value in values.items():
            if (key in params or key in SCHEDULER_SETTINGS) and key not in settings:
                settings[key] = value
                sources[key] = source

    take({k: v for k, v in overrides.items() if k != "batch_invariant"}, SOURCE_SET)
    if builtin is not None:
        take(builtin, SOURCE_BUILTIN)
    else:
        for card in (card_sources(own=model_id) if cards is None else cards):
            take(card.settings, card.source)
        hint = structural_hint(pipeline_class, read_config)
        if hint is not None:
            take(*hint)
    for key in COMPARED_SETTINGS:
        if key in params and key not in settings:
            sources[key] = SOURCE_PIPELINE
            default = params[key].default
            if default is not None and default is not params[key].empty:
                settings[key] = default
    return settings, sources


def on_pipeline_defaults(sources: Mapping[str, str]) -> bool:
    """True when no card, hint, built-in or ``--set`` chose the steps or the guidance: the model is
    not in the card table and runs at settings nobody chose for it."""
    keys = [k for k in ("num_inference_steps", "guidance_scale", "true_cfg_scale") if k in sources]
    return bool(keys) and all(sources[k] == SOURCE_PIPELINE for k in keys)


def settings_warning(model: str, sources: Mapping[str, str]) -> str | None:
    """One line when ``model`` runs at its pipeline's defaults (:func:`on_pipeline_defaults`),
    saying how to pass its card's settings; None otherwise."""
    if not on_pipeline_defaults(sources):
        return None
    keys = [k for k in sources if sources[k] == SOURCE_PIPELINE]
    example = " ".join(f"--set {k}=..." for k in keys[:2])
    return (f"{model} is not in the model card table and names no base_model that is: it runs at its pipeline's "
            f"defaults ({', '.join(keys)}); pass its model card's settings with {example} (or add base_model: to "
            "its README's front matter)")
