"""The model card table (benchmark/models/model_cards.py): every row's settings are arguments
its pipeline's call takes, every row cites its card, and the settings of a run come from --set,
then the table, then a structural hint, then the pipeline's defaults, each source recorded."""

from __future__ import annotations

import inspect

import pytest

from benchmark.models.call_settings import SCHEDULER_SETTINGS, named_parameters
from benchmark.models.model_cards import (
    MODEL_CARD_SETTINGS, SOURCE_NO_CARD, SOURCE_PIPELINE, SOURCE_SET, WUERSTCHEN_PRIOR_TIMESTEPS, card_row, card_sources,
    choose_call_settings, on_pipeline_defaults, settings_warning, structural_hint,
)

#: each row of the table and the diffusers class its Hub folder runs as (one line per new row)
ROW_CLASSES = {
    "CompVis/stable-diffusion-v1-4": "StableDiffusionPipeline",
    "stable-diffusion-v1-5/stable-diffusion-v1-5": "StableDiffusionPipeline",
    "stabilityai/stable-diffusion-2-1": "StableDiffusionPipeline",
    "stabilityai/stable-diffusion-2-1-base": "StableDiffusionPipeline",
    "stabilityai/stable-diffusion-xl-base-1.0": "StableDiffusionXLPipeline",
    "stabilityai/sdxl-turbo": "StableDiffusionXLPipeline",
    "stabilityai/sd-turbo": "StableDiffusionPipeline",
    "SimianLuo/LCM_Dreamshaper_v7": "LatentConsistencyModelPipeline",
    "playgroundai/playground-v2.5-1024px-aesthetic": "StableDiffusionXLPipeline",
    "stabilityai/stable-diffusion-3-medium-diffusers": "StableDiffusion3Pipeline",
    "stabilityai/stable-diffusion-3.5-large": "StableDiffusion3Pipeline",
    "stabilityai/stable-diffusion-3.5-large-turbo": "StableDiffusion3Pipeline",
    "stabilityai/stable-diffusion-3.5-medium": "StableDiffusion3Pipeline",
    "black-forest-labs/FLUX.1-dev": "FluxPipeline",
    "black-forest-labs/FLUX.1-schnell": "FluxPipeline",
    "PixArt-alpha/PixArt-XL-2-1024-MS": "PixArtAlphaPipeline",
    "PixArt-alpha/PixArt-Sigma-XL-2-1024-MS": "PixArtSigmaPipeline",
    "Efficient-Large-Model/Sana_1600M_1024px_diffusers": "SanaPipeline",
    "kandinsky-community/kandinsky-2-2-decoder": "KandinskyV22CombinedPipeline",
    "kandinsky-community/kandinsky-3": "Kandinsky3Pipeline",
    "stabilityai/stable-cascade": "StableCascadeCombinedPipeline",
    "warp-ai/wuerstchen": "WuerstchenCombinedPipeline",
    "kakaobrain/karlo-v1-alpha": "UnCLIPPipeline",
    "playgroundai/playground-v2-1024px-aesthetic": "StableDiffusionXLPipeline",
    "black-forest-labs/FLUX.1-Krea-dev": "FluxPipeline",
    "PixArt-alpha/PixArt-LCM-XL-2-1024-MS": "PixArtAlphaPipeline",
    "Efficient-Large-Model/Sana_1600M_512px_diffusers": "SanaPipeline",
    "Efficient-Large-Model/Sana_1600M_2Kpx_BF16_diffusers": "SanaPipeline",
    "Efficient-Large-Model/Sana_1600M_4Kpx_BF16_diffusers": "SanaPipeline",
    "Efficient-Large-Model/Sana_600M_1024px_diffusers": "SanaPipeline",
    "Efficient-Large-Model/Sana_600M_512px_diffusers": "SanaPipeline",
    "kandinsky-community/kandinsky-2-1": "KandinskyCombinedPipeline",
    "Qwen/Qwen-Image": "QwenImagePipeline",
    "Tongyi-MAI/Z-Image-Turbo": "ZImagePipeline",
    "Tongyi-MAI/Z-Image": "ZImagePipeline",
    "HiDream-ai/HiDream-I1-Full": "HiDreamImagePipeline",
    "HiDream-ai/HiDream-I1-Dev": "HiDreamImagePipeline",
    "HiDream-ai/HiDream-I1-Fast": "HiDreamImagePipeline",
    "zai-org/CogView3-Plus-3B": "CogView3PlusPipeline",
    "zai-org/CogView4-6B": "CogView4Pipeline",
    "Alpha-VLLM/Lumina-Image-2.0": "Lumina2Pipeline",
    "Kwai-Kolors/Kolors-diffusers": "KolorsPipeline",
    "fal/AuraFlow-v0.3": "AuraFlowPipeline",
    "Efficient-Large-Model/Sana_Sprint_1.6B_1024px_diffusers": "SanaSprintPipeline",
    "Efficient-Large-Model/Sana_Sprint_0.6B_1024px_diffusers": "SanaSprintPipeline",
    # adapters and component checkpoints: the class of the base they are made for
    **{f"ByteDance/SDXL-Lightning/sdxl_lightning_{n}step_lora.safetensors": "StableDiffusionXLPipeline"
       for n in (2, 4, 8)},
    **{f"ByteDance/SDXL-Lightning/sdxl_lightning_{n}step_unet.safetensors": "StableDiffusionXLPipeline"
       for n in (1, 2, 4, 8)},
    **{f"ByteDance/Hyper-SD/Hyper-SDXL-{n}steps-lora.safetensors": "StableDiffusionXLPipeline" for n in (2, 4, 8)},
    **{f"ByteDance/Hyper-SD/Hyper-SD15-{n}steps-lora.safetensors": "StableDiffusionPipeline" for n in (2, 4, 8)},
    "latent-consistency/lcm-lora-sdv1-5/pytorch_lora_weights.safetensors": "StableDiffusionPipeline",
    "latent-consistency/lcm-lora-sdxl/pytorch_lora_weights.safetensors": "StableDiffusionXLPipeline",
    "h1t/TCD-SDXL-LoRA/pytorch_lora_weights.safetensors": "StableDiffusionXLPipeline",
    "h1t/TCD-SD15-LoRA/pytorch_lora_weights.safetensors": "StableDiffusionPipeline",
}
#: the scheduler each base family ships with (the class a row's scheduler config values apply to
#: when the row names no scheduler of its own)
BASE_SCHEDULERS = {"StableDiffusionXLPipeline": "EulerDiscreteScheduler",
                   "StableDiffusionPipeline": "PNDMScheduler"}


def test_every_row_is_listed_here_once():
    firsts = [row.ids[0] for row in MODEL_CARD_SETTINGS]
    assert sorted(firsts) == sorted(ROW_CLASSES)
    every_id = [i.lower() for row in MODEL_CARD_SETTINGS for i in row.ids]
    assert len(every_id) == len(set(every_id))


@pytest.mark.parametrize("model_id, class_name", sorted(ROW_CLASSES.items()))
def test_row_settings_are_arguments_of_its_pipeline(model_id, class_name):
    import diffusers

    row = card_row(model_id)
    repo = "/".join(model_id.split("/")[:2])  # an adapter's card is its repo's
    assert row is not None and row.source == f"https://huggingface.co/{repo}"
    assert row.pipeline == class_name  # the class the base check compares (base_model.check_declared_base)
    assert row.source_text == f"model card ({row.source})"
    cls = getattr(diffusers, class_name)
    if type(cls).__name__ == "DummyObject":  # an optional package is missing here (Kolors: sentencepiece)
        pytest.skip(f"{class_name} needs {cls._backends}")
    params = named_parameters(cls.__call__)
    call = {k: v for k, v in row.settings.items() if k not in SCHEDULER_SETTINGS}
    assert set(call) <= set(params), set(call) - set(params)
    # a scheduler setting names a diffusers scheduler, and its config values are ones that scheduler takes
    scheduler = row.settings.get("scheduler") or BASE_SCHEDULERS.get(class_name)
    config = {k for k in row.settings if k in SCHEDULER_SETTINGS and k != "scheduler"}
    if "scheduler" in row.settings or config:
        assert hasattr(getattr(diffusers, scheduler, None), "from_config"), scheduler
        assert config <= set(named_parameters(getattr(diffusers, scheduler).__init__)), config
    # the structural numbers every audit compares are numbers
    for key in ("num_inference_steps", "height", "width"):
        assert key not in row.settings or isinstance(row.settings[key], int)


def test_lookup_is_case_insensitive_and_knows_old_names():
    assert card_row("STABILITYAI/SDXL-TURBO").name == "SDXL-Turbo"
    assert card_row("runwayml/stable-diffusion-v1-5").name == "Stable Diffusion 1.5"
    assert card_row("someone/unknown") is None and card_row(None) is None


def _params(class_name: str) -> dict:
    import diffusers

    return named_parameters(getattr(diffusers, class_name).__call__)


def test_order_set_then_card_then_pipeline_default():
    settings, sources = choose_call_settings(
        _params("StableDiffusionXLPipeline"), pipeline_class="StableDiffusionXLPipeline",
        model_id="stabilityai/sdxl-turbo", read_config=lambda c: None, overrides={"num_inference_steps": 2})
    assert settings["num_inference_steps"] == 2 and sources["num_inference_steps"] == SOURCE_SET
    assert settings["guidance_scale"] == 0.0 and settings["height"] == settings["width"] == 512
    assert sources["guidance_scale"] == "model card (https://huggingface.co/stabilityai/sdxl-turbo)"

    settings, sources = choose_call_settings(
        _params("StableDiffusionXLPipeline"), pipeline_class="StableDiffusionXLPipeline",
        model_id="someone/my-sdxl-finetune", read_config=lambda c: None, overrides={})
    default = inspect.signature(__import__("diffusers").StableDiffusionXLPipeline.__call__).parameters
    assert settings["num_inference_steps"] == default["num_inference_steps"].default
    assert settings["guidance_scale"] == default["guidance_scale"].default
    assert "height" not in settings  # None: the loader fills in the resolution the pipeline computes
    assert set(sources.values()) == {SOURCE_NO_CARD}  # no card row applies: nobody chose them


def test_flux_without_guidance_embeddings_is_schnell_like_whatever_its_name():
    configs = {"transformer": {"guidance_embeds": False}}
    hint = structural_hint("FluxPipeline", configs.get)
    assert hint is not None and hint[0] == {"num_inference_steps": 4, "guidance_scale": 0.0, "max_sequence_length": 256}
    assert structural_hint("FluxPipeline", {"transformer": {"guidance_embeds": True}}.get) is None
    assert structural_hint("StableDiffusionPipeline", configs.get) is None
    settings, sources = choose_call_settings(_params("FluxPipeline"), pipeline_class="FluxPipeline",
                                             model_id="/tmp/my-distilled-flux", read_config=configs.get,
                                             overrides={"guidance_scale": 1.0})
    assert settings["num_inference_steps"] == 4 and sources["num_inference_steps"].startswith("config: ")
    assert settings["guidance_scale"] == 1.0 and sources["guidance_scale"] == SOURCE_SET
    # the card of a known ID wins over the hint
    settings, _ = choose_call_settings(_params("FluxPipeline"), pipeline_class="FluxPipeline",
                                       model_id="black-forest-labs/FLUX.1-schnell", read_config=configs.get,
                                       overrides={})
    assert settings["max_sequence_length"] == 256 and settings["num_inference_steps"] == 4


def test_docs_list_every_row_with_its_settings():
    """docs/models.md holds the module's table exactly (a row added here and not there fails)."""
    from pathlib import Path

    from benchmark.models.model_cards import card_table_markdown

    text = (Path(__file__).resolve().parents[1] / "docs" / "models.md").read_text(encoding="utf-8")
    table = card_table_markdown()
    assert table in text, "regenerate the table in docs/models.md: python -c 'from benchmark.models.model_cards " \
                          "import card_table_markdown as t; print(t())'"
    assert all(f"[`{row.ids[0]}`]" in table for row in MODEL_CARD_SETTINGS)


def test_wuerstchen_prior_timesteps_are_diffusers_default_stage_c_timesteps():
    """warp-ai/wuerstchen's card passes prior_timesteps=DEFAULT_STAGE_C_TIMESTEPS."""
    from diffusers.pipelines.deprecated.wuerstchen import DEFAULT_STAGE_C_TIMESTEPS

    assert len(WUERSTCHEN_PRIOR_TIMESTEPS) == len(DEFAULT_STAGE_C_TIMESTEPS) == 30
    assert WUERSTCHEN_PRIOR_TIMESTEPS == pytest.approx([float(t) for t in DEFAULT_STAGE_C_TIMESTEPS], abs=1e-12)
    assert card_row("warp-ai/wuerstchen").settings["prior_timesteps"] == list(WUERSTCHEN_PRIOR_TIMESTEPS)


def test_an_adapter_row_comes_before_its_base_and_a_base_model_row_after_the_own():
    lightning = "ByteDance/SDXL-Lightning/sdxl_lightning_4step_lora.safetensors"
    cards = card_sources(own="stabilityai/stable-diffusion-xl-base-1.0", adapters=[lightning])
    settings, sources = choose_call_settings(_params("StableDiffusionXLPipeline"),
                                             pipeline_class="StableDiffusionXLPipeline", read_config=lambda c: None,
                                             overrides={}, cards=cards)
    # the LoRA's steps, guidance, scheduler and spacing; the base's resolution
    assert (settings["num_inference_steps"], settings["guidance_scale"]) == (4, 0.0)
    assert (settings["scheduler"], settings["timestep_spacing"]) == ("EulerDiscreteScheduler", "trailing")
    assert settings["height"] == 1024 and sources["height"].endswith("stable-diffusion-xl-base-1.0)")
    assert sources["num_inference_steps"] == f"model card (https://huggingface.co/ByteDance/SDXL-Lightning) for {lightning}"
    # a fine-tune without a row of its own: its base_model's row, so named
    cards = card_sources(own="someone/turbo-finetune", bases=["someone/middle", "stabilityai/sdxl-turbo"])
    settings, sources = choose_call_settings(_params("StableDiffusionXLPipeline"),
                                             pipeline_class="StableDiffusionXLPipeline", read_config=lambda c: None,
                                             overrides={"height": 64}, cards=cards)
    assert (settings["num_inference_steps"], settings["guidance_scale"], settings["height"]) == (1, 0.0, 64)
    assert sources["num_inference_steps"] == ("model card of base_model stabilityai/sdxl-turbo "
                                              "(https://huggingface.co/stabilityai/sdxl-turbo)")


def test_a_model_on_pipeline_defaults_gets_one_warning_line():
    _, sources = choose_call_settings(_params("StableDiffusionXLPipeline"), pipeline_class="StableDiffusionXLPipeline",
                                      model_id="someone/unknown", read_config=lambda c: None, overrides={})
    assert on_pipeline_defaults(sources)
    line = settings_warning("someone/unknown", sources)
    assert line.startswith("someone/unknown is not in the model card table") and "\n" not in line
    assert "--set num_inference_steps=..." in line
    _, sources = choose_call_settings(_params("StableDiffusionXLPipeline"), pipeline_class="StableDiffusionXLPipeline",
                                      model_id="someone/unknown", read_config=lambda c: None,
                                      overrides={"num_inference_steps": 4, "guidance_scale": 0.0})
    assert settings_warning("someone/unknown", sources) is None
    _, sources = choose_call_settings(_params("StableDiffusionXLPipeline"), pipeline_class="StableDiffusionXLPipeline",
                                      model_id="stabilityai/sdxl-turbo", read_config=lambda c: None, overrides={})
    assert settings_warning("stabilityai/sdxl-turbo", sources) is None


def test_renamed_repos_follow_the_alias_table():
    """The rows hold current names; the Hub's old names (THUDM is zai-org; runwayml's SD 1.5 is the
    community copy) find the same rows, case-insensitively, ORG/NAME/FILE keys too."""
    from benchmark.models.model_cards import HUB_RENAMES, ORG_RENAMES, current_hub_id

    assert card_row("zai-org/CogView4-6B").name == card_row("THUDM/CogView4-6B").name == "CogView4"
    assert card_row("thudm/cogview3-plus-3b").name == card_row("zai-org/CogView3-Plus-3B").name == "CogView3-Plus"
    assert card_row("runwayml/stable-diffusion-v1-5").ids[0] == "stable-diffusion-v1-5/stable-diffusion-v1-5"
    assert current_hub_id("THUDM/CogView4-6B/transformer/x.safetensors") == "zai-org/CogView4-6B/transformer/x.safetensors"
    assert current_hub_id("someone/model") == "someone/model" and current_hub_id("/a/local/path") == "/a/local/path"
    olds = {k.lower() for k in HUB_RENAMES} | {k.lower() for k in ORG_RENAMES}
    for row in MODEL_CARD_SETTINGS:  # no row is keyed by a name the table renames
        for model_id in row.ids:
            assert current_hub_id(model_id) == model_id and model_id.split("/")[0].lower() not in olds
            assert "/".join(model_id.split("/")[:2]).lower() not in olds


def test_a_setting_a_card_leaves_out_is_the_pipeline_default_and_says_which_kind():
    params = _params("FluxPipeline")
    _, sources = choose_call_settings(params, pipeline_class="FluxPipeline", model_id="black-forest-labs/FLUX.1-schnell",
                                      read_config=lambda c: None, overrides={})
    assert sources["height"] == SOURCE_PIPELINE and sources["num_inference_steps"].startswith("model card (")
    _, sources = choose_call_settings(params, pipeline_class="FluxPipeline", model_id="someone/flux-merge",
                                      read_config=lambda c: None, overrides={"height": 256})
    assert sources["height"] == SOURCE_SET and sources["guidance_scale"] == SOURCE_NO_CARD


def test_pipeline_families_tell_architectures_apart():
    from benchmark.models.model_cards import pipeline_family

    assert pipeline_family("StableDiffusionXLPAGPipeline") == pipeline_family("StableDiffusionXLPipeline") == "SDXL"
    assert pipeline_family("KandinskyV22Pipeline") == pipeline_family("KandinskyV22CombinedPipeline")
    assert pipeline_family("Lumina2Text2ImgPipeline") == pipeline_family("Lumina2Pipeline")
    assert len({pipeline_family(c) for c in ("StableDiffusionPipeline", "StableDiffusionXLPipeline",
                                             "StableDiffusion3Pipeline", "FluxPipeline", "Flux2Pipeline",
                                             "SanaPipeline", "SanaSprintPipeline", "KandinskyPipeline",
                                             "Kandinsky3Pipeline", "ChromaPipeline")}) == 10
    assert pipeline_family(None) is None


def test_z_image_turbo_runs_as_many_transformer_passes_as_its_row_says(tmp_path):
    """diffusers' ZImagePipeline example calls 8 steps; its schedule (sigmas linspace(1, 1/N, N))
    makes one transformer pass per step: the row's 8 steps are the card's 8 passes (the card's 9
    steps were 8 passes in the diffusers it was written for)."""
    import torch
    from diffusers import ZImagePipeline

    from tiny_pipelines import build_family

    row = card_row("Tongyi-MAI/Z-Image-Turbo")
    pipe = ZImagePipeline.from_pretrained(build_family("z_image", tmp_path / "z_image"))
    pipe.set_progress_bar_config(disable=True)
    passes = []
    forward = pipe.transformer.forward
    pipe.transformer.forward = lambda *a, **k: passes.append(1) or forward(*a, **k)
    pipe("a photo", num_inference_steps=row.settings["num_inference_steps"],
         guidance_scale=row.settings["guidance_scale"], height=64, width=64, generator=torch.Generator().manual_seed(0))
    assert len(passes) == row.settings["num_inference_steps"] == 8
