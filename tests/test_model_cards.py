"""The model card table (benchmark/models/model_cards.py): every row's settings are arguments
its pipeline's call takes, every row cites its card, and the settings of a run come from --set,
then the table, then a structural hint, then the pipeline's defaults, each source recorded."""

from __future__ import annotations

import inspect

import pytest

from benchmark.models.call_settings import named_parameters
from benchmark.models.model_cards import (
    MODEL_CARD_SETTINGS, SOURCE_PIPELINE, SOURCE_SET, card_row, choose_call_settings, structural_hint,
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
}


def test_every_row_is_listed_here_once():
    firsts = [row.ids[0] for row in MODEL_CARD_SETTINGS]
    assert sorted(firsts) == sorted(ROW_CLASSES)
    every_id = [i.lower() for row in MODEL_CARD_SETTINGS for i in row.ids]
    assert len(every_id) == len(set(every_id))


@pytest.mark.parametrize("model_id, class_name", sorted(ROW_CLASSES.items()))
def test_row_settings_are_arguments_of_its_pipeline(model_id, class_name):
    import diffusers

    row = card_row(model_id)
    assert row is not None and row.source == f"https://huggingface.co/{model_id}"
    assert row.source_text == f"model card ({row.source})"
    params = named_parameters(getattr(diffusers, class_name).__call__)
    assert set(row.settings) <= set(params), set(row.settings) - set(params)
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
    assert set(sources.values()) == {SOURCE_PIPELINE}


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
    """docs/models.md's table is the module's (a row added here and not there fails)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "models.md").read_text(encoding="utf-8")
    for row in MODEL_CARD_SETTINGS:
        settings = ", ".join(f"`{k}={v}`" for k, v in row.settings.items()) or "the pipeline's defaults"
        assert f"| {row.name} | [`{row.ids[0]}`]({row.source}) | {settings} | {row.note} |" in text, row.name
