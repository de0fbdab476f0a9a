"""Each model's recommended generation settings, as its makers publish them, and where every
setting of a run comes from.

A bias audit of a model at settings its makers do not use measures another model: SDXL-Turbo
at 50 steps and guidance 5 is not SDXL-Turbo. So the call arguments of a diffusers pipeline
are chosen in this order, and the source of each is recorded (``run_config.json`` and
``results.json`` ``setting_sources``, the report) and printed in the plan:

1. ``--set KEY=VALUE`` (``"--set"``);
2. :data:`MODEL_CARD_SETTINGS`, keyed by Hub model ID (adapters and component checkpoints by
   ``ORG/NAME/FILE``; a renamed repo by its current name, :data:`HUB_RENAMES`): the settings of
   the model card's own example, each row citing its card (``"model card (URL)"``): first each
   LoRA's row (SDXL-Lightning's steps and scheduler win over SDXL's), then what a LoRA's own
   README recommends (lora_card.py), then the model's own row (a local copy matched to its Hub
   ID: base_model.py), then the row of the nearest ``base_model`` its model card names
   (``"model card of base_model ID (URL)"``);
3. a structural hint read from a component's config where the architecture says it, e.g. a
   FLUX transformer without guidance embeddings is timestep-distilled like FLUX.1 [schnell]
   (``"config: ..."``);
4. the pipeline's own call defaults: ``"no card row: pipeline default"`` when no card, hint or
   built-in set anything (nobody chose it for this model), ``"pipeline default"`` when a card
   applies but leaves that setting out; the resolution is then the one the pipeline computes
   from its config (``sample_size x vae_scale_factor``).

Each row names the diffusers class its Hub folder runs as (``pipeline``; an adapter's row, its
base's), so that a folder whose class contradicts the base its card names is refused
(base_model.py) instead of running one model at another's settings. Adding a model is one row
below (tests/test_model_cards.py checks each against its class).
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
    "HUB_RENAMES",
    "ORG_RENAMES",
    "SOURCE_SET",
    "SOURCE_PIPELINE",
    "SOURCE_NO_CARD",
    "SOURCE_BUILTIN",
    "COMPARED_SETTINGS",
    "CardSource",
    "card_row",
    "current_hub_id",
    "pipeline_family",
    "card_sources",
    "card_table_markdown",
    "structural_hint",
    "choose_call_settings",
    "is_pipeline_default",
    "on_pipeline_defaults",
    "settings_warning",
]

SOURCE_SET = "--set"
#: a setting a card row applies to the model and leaves out: the pipeline's default
SOURCE_PIPELINE = "pipeline default"
#: no card row, LoRA card, hint or built-in set anything: the pipeline's default, chosen by nobody
SOURCE_NO_CARD = "no card row: pipeline default"
SOURCE_BUILTIN = "built-in model"
CARD = "https://huggingface.co/"
#: the settings every audit compares: recorded with their source even when the pipeline's default
COMPARED_SETTINGS = ("num_inference_steps", "guidance_scale", "true_cfg_scale", "height", "width")

#: repos renamed on the Hub, old name -> current name (the Hub redirects the old one; cards and
#: scripts keep writing it). Runwayml deleted its SD 1.5 repo; the community copy is the one in use.
HUB_RENAMES = {
    "runwayml/stable-diffusion-v1-5": "stable-diffusion-v1-5/stable-diffusion-v1-5",
}
#: organisations renamed on the Hub, old -> current: Zhipu's THUDM is zai-org (CogView3-Plus, CogView4)
ORG_RENAMES = {"THUDM": "zai-org"}

# the diffusers classes of the rows (the families the base check compares: pipeline_family)
_SD, _SDXL, _SD3, _FLUX = "StableDiffusionPipeline", "StableDiffusionXLPipeline", "StableDiffusion3Pipeline", \
    "FluxPipeline"
_SANA, _ZIMAGE, _HIDREAM = "SanaPipeline", "ZImagePipeline", "HiDreamImagePipeline"
#: class-name prefixes of one architecture, most specific first: a folder declaring any class of a
#: family runs checkpoints of that family (a decoder of the combined pipeline, an old class name)
_FAMILIES = (("StableDiffusionXL", "SDXL"), ("StableDiffusion3", "SD 3"), ("StableDiffusion", "SD 1 / 2"),
             ("LatentConsistencyModel", "SD 1 / 2"), ("Flux2", "FLUX.2"), ("Flux", "FLUX.1"),
             ("PixArt", "PixArt"), ("SanaSprint", "SANA-Sprint"), ("Sana", "Sana"), ("KandinskyV22", "Kandinsky 2.2"),
             ("Kandinsky3", "Kandinsky 3"), ("Kandinsky", "Kandinsky 2.1"), ("StableCascade", "Stable Cascade"),
             ("Wuerstchen", "Würstchen"), ("UnCLIP", "unCLIP"), ("QwenImage", "Qwen-Image"), ("ZImage", "Z-Image"),
             ("HiDreamImage", "HiDream-I1"), ("CogView3Plus", "CogView3-Plus"), ("CogView4", "CogView4"),
             ("Lumina2", "Lumina-Image 2.0"), ("Kolors", "Kolors"), ("AuraFlow", "AuraFlow"))


def pipeline_family(class_name: str | None) -> str | None:
    """The architecture a diffusers pipeline class runs (``"SDXL"`` for StableDiffusionXLPipeline and
    its PAG variant), the class name itself for a class of no listed family, None for none."""
    if not class_name:
        return None
    for prefix, family in _FAMILIES:
        if class_name.startswith(prefix):
            return family
    return class_name.removesuffix("Pipeline")


@dataclass(frozen=True)
class ModelCardRow:
    """One model (``ids``: its Hub IDs, by their current names), the diffusers class its Hub
    folder runs as (``pipeline``; an adapter's: its base's), the settings of its card's example
    and the card (``source``)."""

    name: str
    ids: tuple[str, ...]
    pipeline: str
    settings: Mapping[str, Any]
    source: str
    note: str = ""

    @property
    def source_text(self) -> str:
        return f"model card ({self.source})"


def _row(name: str, ids: str | tuple[str, ...], pipeline: str, note: str = "", **settings: Any) -> ModelCardRow:
    """A row citing the card of its first ID's repo (``ORG/NAME``, also for ``ORG/NAME/FILE`` keys)."""
    ids = (ids,) if isinstance(ids, str) else ids
    return ModelCardRow(name=name, ids=ids, pipeline=pipeline, settings=settings,
                        source=CARD + "/".join(ids[0].split("/")[:2]), note=note)


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
                f"ByteDance/SDXL-Lightning/sdxl_lightning_{steps}step_{kind}.safetensors", _SDXL, what,
                num_inference_steps=steps, guidance_scale=0.0, **_TRAILING_EULER, **extra)


def _hyper(base: str, steps: int) -> ModelCardRow:
    """Hyper-SD's N-step LoRA: https://huggingface.co/ByteDance/Hyper-SD (DDIM with trailing
    timesteps, guidance 0, fused at scale 1)."""
    name = "SDXL" if base == "sdxl" else "SD15"
    return _row(f"Hyper-{name} {steps}-step LoRA", f"ByteDance/Hyper-SD/Hyper-{name}-{steps}steps-lora.safetensors",
                _SDXL if base == "sdxl" else _SD, f"LoRA on {'SDXL base 1.0' if base == 'sdxl' else 'SD 1.5'}", num_inference_steps=steps,
                guidance_scale=0.0, **_TRAILING_DDIM)


#: The models people audit, with the settings of their model card's example (the card is the
#: source of every value; a value the card leaves out is the pipeline's default). Adapters (LoRAs)
#: and component checkpoints are keyed ``ORG/NAME/FILE`` (their card is the repo's).
MODEL_CARD_SETTINGS: tuple[ModelCardRow, ...] = (
    _row("Stable Diffusion 1.4", "CompVis/stable-diffusion-v1-4", _SD, num_inference_steps=50, guidance_scale=7.5,
         height=512, width=512),
    _row("Stable Diffusion 1.5", "stable-diffusion-v1-5/stable-diffusion-v1-5", _SD, num_inference_steps=50,
         guidance_scale=7.5, height=512, width=512),
    _row("Stable Diffusion 2 / 2.1 (768-v)", ("stabilityai/stable-diffusion-2-1", "stabilityai/stable-diffusion-2"),
         _SD, num_inference_steps=50, guidance_scale=7.5, height=768, width=768),
    _row("Stable Diffusion 2 / 2.1 base", ("stabilityai/stable-diffusion-2-1-base",
                                           "stabilityai/stable-diffusion-2-base"), _SD,
         num_inference_steps=50, guidance_scale=7.5, height=512, width=512),
    _row("SDXL base 1.0", "stabilityai/stable-diffusion-xl-base-1.0", _SDXL, num_inference_steps=50,
         guidance_scale=5.0, height=1024, width=1024),
    _row("SDXL-Turbo", "stabilityai/sdxl-turbo", _SDXL, "1 to 4 steps; trained at 512 px; no guidance",
         num_inference_steps=1, guidance_scale=0.0, height=512, width=512),
    _row("SD-Turbo", "stabilityai/sd-turbo", _SD, "1 to 4 steps; trained at 512 px; no guidance",
         num_inference_steps=1, guidance_scale=0.0, height=512, width=512),
    _row("LCM Dreamshaper v7", "SimianLuo/LCM_Dreamshaper_v7", "LatentConsistencyModelPipeline", "1 to 8 steps",
         num_inference_steps=4, guidance_scale=8.0, height=768, width=768),
    _row("Playground v2", "playgroundai/playground-v2-1024px-aesthetic", _SDXL, guidance_scale=3.0, height=1024,
         width=1024),
    _row("Playground v2.5", "playgroundai/playground-v2.5-1024px-aesthetic", _SDXL, num_inference_steps=50,
         guidance_scale=3.0, height=1024, width=1024),
    _row("SD 3 Medium", "stabilityai/stable-diffusion-3-medium-diffusers", _SD3, num_inference_steps=28,
         guidance_scale=7.0, height=1024, width=1024),
    _row("SD 3.5 Large", "stabilityai/stable-diffusion-3.5-large", _SD3, num_inference_steps=28, guidance_scale=3.5,
         height=1024, width=1024),
    _row("SD 3.5 Large Turbo", "stabilityai/stable-diffusion-3.5-large-turbo", _SD3,
         "timestep-distilled: no guidance", num_inference_steps=4, guidance_scale=0.0, height=1024, width=1024),
    _row("SD 3.5 Medium", "stabilityai/stable-diffusion-3.5-medium", _SD3, num_inference_steps=40, guidance_scale=4.5,
         height=1024, width=1024),
    _row("FLUX.1 [dev]", "black-forest-labs/FLUX.1-dev", _FLUX, "guidance is a distilled embedding, not CFG",
         num_inference_steps=50, guidance_scale=3.5, height=1024, width=1024, max_sequence_length=512),
    _row("FLUX.1 [schnell]", "black-forest-labs/FLUX.1-schnell", _FLUX, "timestep-distilled: 1 to 4 steps, no guidance",
         num_inference_steps=4, guidance_scale=0.0, max_sequence_length=256),
    _row("FLUX.1 Krea [dev]", "black-forest-labs/FLUX.1-Krea-dev", _FLUX, "the card leaves the steps at the pipeline's 28",
         guidance_scale=4.5, height=1024, width=1024),
    _row("PixArt-Alpha 1024", "PixArt-alpha/PixArt-XL-2-1024-MS", "PixArtAlphaPipeline", num_inference_steps=20,
         guidance_scale=4.5, height=1024, width=1024),
    _row("PixArt-Sigma 1024", "PixArt-alpha/PixArt-Sigma-XL-2-1024-MS", "PixArtSigmaPipeline", num_inference_steps=20,
         guidance_scale=4.5, height=1024, width=1024),
    _row("PixArt-LCM 1024", "PixArt-alpha/PixArt-LCM-XL-2-1024-MS", "PixArtAlphaPipeline",
         "latent consistency: no guidance", num_inference_steps=4, guidance_scale=0.0, height=1024, width=1024),
    _row("Sana 1600M 1024", ("Efficient-Large-Model/Sana_1600M_1024px_diffusers",
                             "Efficient-Large-Model/Sana_1600M_1024px_BF16_diffusers"), _SANA,
         "4.5 as the card's and NVlabs' inference script's (the 600M models' examples use 5.0)",
         num_inference_steps=20, guidance_scale=4.5, height=1024, width=1024),
    # Sana 512 and 2K: UNVERIFIED. Neither card's diffusers example could be read (only their front matter and
    # sample tables); NVlabs' model zoo (https://github.com/NVlabs/Sana/blob/main/asset/docs/model_zoo.md) gives
    # 20 steps and guidance 5.0 for its 1024 fp16 and 4K examples, 4.5 for its int4 one, and none for 512 or 2K
    _row("Sana 1600M 512", "Efficient-Large-Model/Sana_1600M_512px_diffusers", _SANA,
         "steps and guidance unverified (the card's example could not be read)", num_inference_steps=20,
         guidance_scale=4.5, height=512, width=512),
    _row("Sana 1600M 2K", "Efficient-Large-Model/Sana_1600M_2Kpx_BF16_diffusers", _SANA,
         "steps and guidance unverified (the card's example could not be read)", num_inference_steps=20,
         guidance_scale=4.5, height=2048, width=2048),
    _row("Sana 1600M 4K", "Efficient-Large-Model/Sana_1600M_4Kpx_BF16_diffusers", _SANA,
         "the card decodes 4K with VAE tiling", num_inference_steps=20, guidance_scale=5.0, height=4096,
         width=4096),
    _row("Sana 600M 1024", "Efficient-Large-Model/Sana_600M_1024px_diffusers", _SANA, num_inference_steps=20,
         guidance_scale=5.0, height=1024, width=1024),
    _row("Sana 600M 512", "Efficient-Large-Model/Sana_600M_512px_diffusers", _SANA, num_inference_steps=20,
         guidance_scale=5.0, height=512, width=512),
    # checked against diffusers' Kandinsky 2.1 AutoPipelineForText2Image example (the same prompt, negative prompt,
    # prior guidance 1.0, guidance 4.0, 768 px): https://huggingface.co/docs/diffusers/api/pipelines/kandinsky
    # (the Hub card's own text could not be read here)
    _row("Kandinsky 2.1", "kandinsky-community/kandinsky-2-1", "KandinskyCombinedPipeline",
         "the combined prior + decoder pipeline", prior_guidance_scale=1.0, guidance_scale=4.0,
         negative_prompt="low quality, bad quality", height=768, width=768),
    # the card's text-to-image example: negative_prompt="low quality, bad quality", prior_guidance_scale=1.0, 768 px
    # (its negative prompt was missing here until issue 48; the card's text could not be re-read from this machine)
    _row("Kandinsky 2.2", "kandinsky-community/kandinsky-2-2-decoder", "KandinskyV22CombinedPipeline",
         "the combined prior + decoder pipeline", prior_guidance_scale=1.0, negative_prompt="low quality, bad quality",
         height=768, width=768),
    _row("Kandinsky 3", "kandinsky-community/kandinsky-3", "Kandinsky3Pipeline", num_inference_steps=25),
    _row("Stable Cascade", "stabilityai/stable-cascade", "StableCascadeCombinedPipeline",
         "the combined prior + decoder pipeline", prior_num_inference_steps=20, prior_guidance_scale=4.0,
         num_inference_steps=10, decoder_guidance_scale=0.0, height=1024, width=1024),
    _row("Würstchen v2", "warp-ai/wuerstchen", "WuerstchenCombinedPipeline",
         "the prior's 30 timesteps are diffusers' DEFAULT_STAGE_C_TIMESTEPS",
         prior_timesteps=list(WUERSTCHEN_PRIOR_TIMESTEPS), prior_guidance_scale=4.0, height=1024, width=1536),
    _row("Karlo v1 alpha (unCLIP)", "kakaobrain/karlo-v1-alpha", "UnCLIPPipeline",
         "the card calls the pipeline with its defaults"),
    _row("Qwen-Image", "Qwen/Qwen-Image", "QwenImagePipeline", "the card's negative prompt ' ' turns true CFG on "
         "(without one diffusers runs unguided); its prompt suffix is not added", num_inference_steps=50,
         true_cfg_scale=4.0, negative_prompt=" ", height=1328, width=1328),
    # checked: diffusers' own ZImagePipeline example (pipeline_z_image.py EXAMPLE_DOC_STRING, diffusers 0.42) calls
    # num_inference_steps=8, guidance_scale=0.0 at 1024 px, and its schedule (linspace(1, 1/N, N) sigmas) runs one
    # transformer pass per step (tests/test_model_cards.py counts them). The makers' README
    # (https://github.com/Tongyi-MAI/Z-Image#diffusers-inference) still writes 9 steps "This actually results in 8
    # DiT forwards", true of the diffusers it was written for; https://huggingface.co/Tongyi-MAI/Z-Image-Turbo/
    # discussions/158: "num_inference_steps=9, can now be changed to num_inference_steps=8" after diffusers#13730
    _row("Z-Image-Turbo", "Tongyi-MAI/Z-Image-Turbo", _ZIMAGE, "distilled: guidance 0; 8 steps = 8 transformer passes "
         "(the card's 9 steps meant 8 passes in an older diffusers)", num_inference_steps=8, guidance_scale=0.0,
         height=1024, width=1024),
    # checked: the makers' diffusers example for Z-Image (https://github.com/Tongyi-MAI/Z-Image#diffusers-inference:
    # negative_prompt="", 1280 x 720, cfg_normalization=False, 50 steps, guidance 4; recommended 28-50 steps,
    # guidance 3.0-5.0). The Hub card's own text could not be read here
    _row("Z-Image", "Tongyi-MAI/Z-Image", _ZIMAGE, "the foundation model of Z-Image-Turbo: CFG on; the makers' example "
         "is portrait", num_inference_steps=50, guidance_scale=4.0, cfg_normalization=False, negative_prompt="",
         height=1280, width=720),
    _row("HiDream-I1 Full", "HiDream-ai/HiDream-I1-Full", _HIDREAM, num_inference_steps=50, guidance_scale=5.0,
         height=1024, width=1024),
    _row("HiDream-I1 Dev", "HiDream-ai/HiDream-I1-Dev", _HIDREAM, "guidance-distilled: no guidance",
         num_inference_steps=28, guidance_scale=0.0, height=1024, width=1024),
    _row("HiDream-I1 Fast", "HiDream-ai/HiDream-I1-Fast", _HIDREAM, "guidance-distilled: no guidance",
         num_inference_steps=16, guidance_scale=0.0, height=1024, width=1024),
    # zai-org is the organisation THUDM was renamed to (HUB_RENAMES below follows the old names)
    _row("CogView3-Plus", "zai-org/CogView3-Plus-3B", "CogView3PlusPipeline", num_inference_steps=50,
         guidance_scale=7.0, height=1024, width=1024),
    _row("CogView4", "zai-org/CogView4-6B", "CogView4Pipeline", num_inference_steps=50, guidance_scale=3.5,
         height=1024, width=1024),
    _row("Lumina-Image 2.0", "Alpha-VLLM/Lumina-Image-2.0", "Lumina2Pipeline", "its model_index.json names "
         "Lumina2Text2ImgPipeline, diffusers' Lumina2Pipeline", num_inference_steps=50, guidance_scale=4.0,
         cfg_trunc_ratio=0.25, cfg_normalization=True, height=1024, width=1024),
    # checked: the makers' diffusers example and notes (EulerDiscreteScheduler, "guidance scale=5.0 and
    # num_inference_steps=50", negative_prompt=""): https://github.com/Kwai-Kolors/Kolors#using-with-diffusers
    _row("Kolors", "Kwai-Kolors/Kolors-diffusers", "KolorsPipeline", "needs the sentencepiece package",
         num_inference_steps=50, guidance_scale=5.0, negative_prompt=""),
    # checked: the v0.3 card's example is 1536 x 768, 50 steps, guidance 3.5: its README commit
    # https://huggingface.co/fal/AuraFlow-v0.3/commit/f11fd0216114872df4a1e7eed9c4c3f749ba3d5f removed v0.2's
    # height=1024, width=1024, and copies of the v0.3 card (https://huggingface.co/terminusresearch/auraflow-v0.3)
    # show width=1536, height=768
    _row("AuraFlow v0.3", "fal/AuraFlow-v0.3", "AuraFlowPipeline",
         "the card's example is landscape (v0.3 supports sides up to 1536)", num_inference_steps=50,
         guidance_scale=3.5, height=768, width=1536),
    # checked: num_inference_steps=2 in the diffusers example; guidance 4.5 (embedded, not CFG) and 1024 px in the
    # repo's own example, both the pipeline's defaults: https://github.com/NVlabs/Sana/blob/main/asset/docs/sana_sprint.md
    _row("SANA-Sprint 1.6B", "Efficient-Large-Model/Sana_Sprint_1.6B_1024px_diffusers", "SanaSprintPipeline",
         "2 steps; guidance is an input of the transformer, not CFG", num_inference_steps=2, guidance_scale=4.5,
         height=1024, width=1024),
    # the 0.6B card's example could not be read here: the makers' own Space runs it at 2 steps, guidance 4.5,
    # 1024 x 1024 (https://huggingface.co/spaces/Efficient-Large-Model/SanaSprint app.py, infer() defaults), which
    # are also SanaSprintPipeline's call defaults; diffusers' docs show the 1.6B model only
    _row("SANA-Sprint 0.6B", "Efficient-Large-Model/Sana_Sprint_0.6B_1024px_diffusers", "SanaSprintPipeline",
         "unverified against its card (the makers' Space's settings); guidance is embedded, not CFG",
         num_inference_steps=2, guidance_scale=4.5, height=1024, width=1024),
    # few-step LoRAs and UNets: keyed ORG/NAME/FILE, they come before their base's row
    _lightning("lora", 2), _lightning("lora", 4), _lightning("lora", 8),
    _lightning("unet", 1, prediction_type="sample"), _lightning("unet", 2), _lightning("unet", 4),
    _lightning("unet", 8),
    # checked: the card's "Text-to-Image Usage", SDXL and SD1.5 "2-Steps, 4-Steps, 8-steps LoRA" (DDIMScheduler with
    # timestep_spacing="trailing", guidance_scale=0, fuse_lora()): https://huggingface.co/ByteDance/Hyper-SD; the file
    # names Hyper-SDXL-/Hyper-SD15-{2,4,8}steps-lora.safetensors: https://huggingface.co/ByteDance/Hyper-SD/tree/main
    _hyper("sdxl", 2), _hyper("sdxl", 4), _hyper("sdxl", 8), _hyper("sd15", 2), _hyper("sd15", 4), _hyper("sd15", 8),
    _row("LCM-LoRA SD 1.5", ("latent-consistency/lcm-lora-sdv1-5/pytorch_lora_weights.safetensors",
                             "latent-consistency/lcm-lora-sdv1-5"), _SD, "LoRA on SD 1.5: LCM scheduler, no guidance",
         num_inference_steps=4, guidance_scale=0.0, scheduler="LCMScheduler"),
    _row("LCM-LoRA SDXL", ("latent-consistency/lcm-lora-sdxl/pytorch_lora_weights.safetensors",
                           "latent-consistency/lcm-lora-sdxl"), _SDXL, "LoRA on SDXL base 1.0: LCM scheduler, no guidance",
         num_inference_steps=4, guidance_scale=0.0, scheduler="LCMScheduler"),
    # checked: TCDScheduler, 4 steps, guidance 0, eta 0.3 ("A value of 0.3 often yields good results"), in the makers'
    # SDXL example https://github.com/jabir-zheng/TCD#text-to-image-generation and the SD 1.5 card
    # https://huggingface.co/h1t/TCD-SD15-LoRA; the weight file: https://huggingface.co/h1t/TCD-SDXL-LoRA/tree/main
    _row("TCD SDXL LoRA", ("h1t/TCD-SDXL-LoRA/pytorch_lora_weights.safetensors", "h1t/TCD-SDXL-LoRA"), _SDXL,
         "LoRA on SDXL base 1.0: TCD scheduler, gamma (eta) 0.3", num_inference_steps=4, guidance_scale=0.0,
         eta=0.3, scheduler="TCDScheduler"),
    _row("TCD SD 1.5 LoRA", ("h1t/TCD-SD15-LoRA/pytorch_lora_weights.safetensors", "h1t/TCD-SD15-LoRA"), _SD,
         "LoRA on SD 1.5: TCD scheduler, gamma (eta) 0.3", num_inference_steps=4, guidance_scale=0.0, eta=0.3,
         scheduler="TCDScheduler"),
)


def _setting_text(key: str, value: Any) -> str:
    if isinstance(value, (list, tuple)) and len(value) > 4:
        return f"`{key}=[{len(value)} values]`"
    return f"`{key}={value!r}`" if isinstance(value, str) else f"`{key}={value}`"


def card_table_markdown() -> str:
    """The table as docs/models.md shows it (tests/test_model_cards.py checks the page holds it)."""
    rows = [(row.name, f"[`{row.ids[0]}`]({row.source})", f"`{row.pipeline}`",
             ", ".join(_setting_text(k, v) for k, v in row.settings.items()) or "the pipeline's defaults", row.note)
            for row in MODEL_CARD_SETTINGS]
    return markdown_table(["model", "Hub ID (adapters: ORG/NAME/FILE)", "runs as (an adapter: its base)",
                           "settings (the card's example)", "note"], rows)


def current_hub_id(model_id: str) -> str:
    """``model_id`` under its current name (:data:`HUB_RENAMES`, :data:`ORG_RENAMES`; case-insensitive
    as the Hub resolves IDs); an ID never renamed, or a path, unchanged. ``ORG/NAME/FILE`` keys too."""
    text = str(model_id).strip()
    parts = text.split("/")
    if len(parts) < 2:
        return text
    repo = "/".join(parts[:2])
    renamed = {k.lower(): v for k, v in HUB_RENAMES.items()}.get(repo.lower())
    if renamed is None:
        org = {k.lower(): v for k, v in ORG_RENAMES.items()}.get(parts[0].lower())
        renamed = f"{org}/{parts[1]}" if org else repo
    return "/".join([renamed, *parts[2:]])


def card_row(model_id: str | None) -> ModelCardRow | None:
    """The table's row of a Hub model ID, old names followed (:func:`current_hub_id`;
    case-insensitive, as the Hub resolves IDs), or None."""
    if not model_id:
        return None
    wanted = current_hub_id(model_id).lower()
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
                 how: str | None = None, adapter_cards: Sequence[CardSource] = ()) -> list[CardSource]:
    """The card rows that apply, in order: each adapter's (by its ``ORG/NAME/FILE`` or path), what
    the LoRAs' own cards recommend (``adapter_cards``: lora_card.card_setting_sources), the model's
    own (``own``: its Hub ID, or what a local copy was matched to, ``how``), then the nearest
    ``base_model`` with a row (base_model.py)."""
    found: list[CardSource] = []
    for adapter in adapters:
        row = card_row(adapter)
        if row is not None:
            found.append(CardSource(row.settings, f"{row.source_text} for {adapter}"))
    found += list(adapter_cards)
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
    chosen_by_card = builtin is not None
    if builtin is not None:
        take(builtin, SOURCE_BUILTIN)
    else:
        cards = card_sources(own=model_id) if cards is None else cards
        for card in cards:
            take(card.settings, card.source)
        hint = structural_hint(pipeline_class, read_config)
        if hint is not None:
            take(*hint)
        chosen_by_card = bool(cards) or hint is not None
    for key in COMPARED_SETTINGS:
        if key in params and key not in settings:
            sources[key] = SOURCE_PIPELINE if chosen_by_card else SOURCE_NO_CARD
            default = params[key].default
            if default is not None and default is not params[key].empty:
                settings[key] = default
    return settings, sources


def is_pipeline_default(source: str | None) -> bool:
    """The source of a setting nobody set: the pipeline's default (with or without a card row)."""
    return source in (SOURCE_PIPELINE, SOURCE_NO_CARD)


def on_pipeline_defaults(sources: Mapping[str, str]) -> bool:
    """True when no card, hint, built-in or ``--set`` chose the steps or the guidance: the model is
    not in the card table and runs at settings nobody chose for it."""
    keys = [k for k in ("num_inference_steps", "guidance_scale", "true_cfg_scale") if k in sources]
    return bool(keys) and all(is_pipeline_default(sources[k]) for k in keys)


def settings_warning(model: str, sources: Mapping[str, str], why: str | None = None) -> str | None:
    """One line when ``model`` runs at its pipeline's defaults (:func:`on_pipeline_defaults`),
    saying why no card applies (``why``: the reason its card's ``base_model`` was not followed,
    base_model.py) and how to pass its card's settings; None otherwise."""
    if not on_pipeline_defaults(sources):
        return None
    keys = [k for k in sources if is_pipeline_default(sources[k])]
    example = " ".join(f"--set {k}=..." for k in keys[:2])
    reason = f" ({why})" if why else ""
    return (f"{model} is not in the model card table and names no base_model that is{reason}: it runs at its "
            f"pipeline's defaults ({', '.join(keys)}); pass its model card's settings with {example} (or add "
            "base_model: to its README's front matter)")
