"""Only text-to-image runs (benchmark/models/pipeline_classes.py): the class a folder's
model_index.json declares is checked before AutoPipelineForText2Image maps it, so an img2img,
inpainting, refiner, prior-only, video or audio folder is refused in one line; a class missing an
optional package names the package; DeepFloyd IF's 64 px stage I is refused; a class the Hub names
by an old name (Lumina-Image 2.0) is loaded as diffusers' class. And guidance: recorded from what
the pipeline will do, checked against what it did (benchmark/models/guidance.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tiny_pipelines import build_family

from benchmark.models import MalformedSpecError
from benchmark.models.pipeline_classes import CLASS_LOADER, choose_pipeline_class

REFUSED = {
    "StableDiffusionXLImg2ImgPipeline": "an image-to-image pipeline",  # the SDXL refiner's folder
    "StableDiffusionImg2ImgPipeline": "an image-to-image pipeline",
    "StableDiffusionInpaintPipeline": "an inpainting pipeline",  # stable-diffusion-2-inpainting
    "StableDiffusionXLInpaintPipeline": "an inpainting pipeline",
    "FluxFillPipeline": "an inpainting pipeline",
    "FluxKontextPipeline": "an image-to-image pipeline",
    "QwenImageEditPipeline": "an image-to-image pipeline",
    "StableDiffusionUpscalePipeline": "an upscaler or refiner",
    "WuerstchenPriorPipeline": "a prior: it returns image embeddings",
    "KandinskyV22PriorPipeline": "a prior: it returns image embeddings",
    "StableCascadePriorPipeline": "a prior: it returns image embeddings",
    "WanPipeline": "a text-to-video pipeline",
    "AudioLDM2Pipeline": "a text-to-audio pipeline",
    "StableDiffusionImageVariationPipeline": "an image-variation pipeline",
}


@pytest.mark.parametrize("declared, why", sorted(REFUSED.items()))
def test_a_folder_that_is_not_text_to_image_is_refused_by_its_declared_class(declared, why):
    with pytest.raises(MalformedSpecError) as refused:
        choose_pipeline_class({"_class_name": declared}, spec="some/folder")
    message = str(refused.value)
    assert message.startswith(f"some/folder: {declared} is {why}") and "\n" not in message


def test_a_controlnet_class_in_the_text_to_image_mapping_still_needs_an_image():
    # refused by its name (the check made before diffusers loads, light_checks.py), as by its call's signature
    with pytest.raises(MalformedSpecError, match="StableDiffusionXLControlNetPipeline is a ControlNet or adapter "
                                                 r"pipeline \(it needs a control image\)"):
        choose_pipeline_class({"_class_name": "StableDiffusionXLControlNetPipeline"}, spec="x")


def test_deepfloyd_if_stage_one_is_refused_not_audited_at_64_px():
    with pytest.raises(MalformedSpecError, match="IFPipeline is DeepFloyd IF's stage I alone, which makes 64x64 "
                                                 "images; .* python: callable"):
        choose_pipeline_class({"_class_name": "IFPipeline"}, spec="DeepFloyd/IF-I-XL-v1.0")


def test_a_class_missing_an_optional_package_names_the_package():
    """Kolors without sentencepiece (diffusers then exports a dummy KolorsPipeline): the refusal
    names the package. Run in a fresh Python whose import system cannot find sentencepiece (the
    test extra installs it, and diffusers decides once, when it is imported)."""
    code = (
        "import importlib.util as u\n"
        "real = u.find_spec\n"
        "u.find_spec = lambda name, package=None: None if name.split('.')[0] == 'sentencepiece' "
        "else real(name, package)\n"
        "import diffusers\n"
        "assert type(diffusers.KolorsPipeline).__name__ == 'DummyObject', type(diffusers.KolorsPipeline)\n"
        "from benchmark.extras import missing\n"
        "assert missing('sentencepiece') == ['sentencepiece']\n"
        "from benchmark.models import MalformedSpecError\n"
        "from benchmark.models.pipeline_classes import choose_pipeline_class\n"
        "try:\n"
        "    choose_pipeline_class({'_class_name': 'KolorsPipeline'}, spec='Kwai-Kolors/Kolors-diffusers')\n"
        "except MalformedSpecError as exc:\n"
        "    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert ("Kwai-Kolors/Kolors-diffusers: KolorsPipeline needs sentencepiece, which is not installed: "
            "pip install sentencepiece") in proc.stdout


def test_lumina_image_2_is_loaded_under_diffusers_class_name():
    choice = choose_pipeline_class({"_class_name": "Lumina2Text2ImgPipeline"}, spec="Alpha-VLLM/Lumina-Image-2.0")
    assert choice.name == "Lumina2Pipeline" and choice.declared == "Lumina2Text2ImgPipeline"
    assert choice.loader == CLASS_LOADER


@pytest.fixture(scope="module")
def sd15(tmp_path_factory):
    return build_family("sd15", tmp_path_factory.mktemp("t2i-only") / "sd15")


def test_an_img2img_folder_is_refused_in_preflight_before_any_weights(sd15, tmp_path):
    """The SDXL refiner / an img2img copy: check_text_to_image (what preflight calls) refuses it."""
    from benchmark.models.text_to_image import check_text_to_image

    folder = tmp_path / "img2img"
    shutil.copytree(sd15, folder)
    index = json.loads((folder / "model_index.json").read_text())
    (folder / "model_index.json").write_text(json.dumps({**index, "_class_name": "StableDiffusionImg2ImgPipeline"}))
    with pytest.raises(MalformedSpecError, match="StableDiffusionImg2ImgPipeline is an image-to-image pipeline"):
        check_text_to_image(str(folder), device="cpu")


# ------------------------------------------------------------------------------- guidance


def _model(folder, **settings):
    from benchmark.models.text_to_image import load_text_to_image

    return load_text_to_image(str(folder), device="cpu", **{"num_inference_steps": 2, **settings})


def test_guidance_is_recorded_from_the_pipeline_and_checked_on_the_first_call(sd15):
    on = _model(sd15, guidance_scale=7.5)
    assert on.settings["guidance"]["classifier_free"] is True
    assert on.settings["guidance"]["rule"] == "StableDiffusionPipeline.do_classifier_free_guidance"
    on.generate(["a photo of a judge"], [1])
    assert on.guidance_check.done and on.guidance_check.record_ran == {"rows_per_image_and_step": 2.0,
                                                                        "classifier_free": True}
    off = _model(sd15, guidance_scale=1.0)
    assert off.settings["guidance"]["classifier_free"] is False
    off.generate(["a photo of a judge"], [1])
    assert off.guidance_check.record_ran["classifier_free"] is False


def test_a_record_that_says_guided_while_the_pipeline_ran_unguided_stops_the_run(sd15):
    from benchmark.models.guidance import GuidanceMismatchError

    model = _model(sd15, guidance_scale=1.0)
    model.guidance_check.record["classifier_free"] = True  # a wrong record, as a broken rule would write
    with pytest.raises(GuidanceMismatchError, match="record classifier-free guidance on .* ran it off") as err:
        model.generate(["a photo of a judge"], [1])
    assert "\n" not in str(err.value)


@pytest.fixture(scope="module")
def flux(tmp_path_factory):
    return build_family("flux_dev", tmp_path_factory.mktemp("t2i-only") / "flux_dev")


def test_true_cfg_without_a_negative_prompt_is_recorded_off_as_diffusers_runs_it(flux):
    """FLUX (and Qwen-Image) run true CFG only with a negative prompt: without one the record says
    off and why; with one, on, and the denoiser's rows confirm it."""
    small = {"height": 64, "width": 64, "true_cfg_scale": 4.0}
    unguided = _model(flux, **small)
    assert unguided.settings["guidance"]["classifier_free"] is False
    assert "without a negative_prompt: diffusers runs unguided" in unguided.settings["guidance"]["off_because"]
    assert unguided.settings["guidance"]["embedded_guidance"] == 3.5  # FLUX.1 [dev]'s distilled guidance
    unguided.generate(["a photo of a judge"], [1])
    assert unguided.guidance_check.record_ran["classifier_free"] is False
    guided = _model(flux, negative_prompt="blurry", **small)
    assert guided.settings["guidance"]["classifier_free"] is True
    guided.generate(["a photo of a judge"], [1])
    assert guided.guidance_check.record_ran == {"rows_per_image_and_step": 2.0, "classifier_free": True}


def test_lumina_guidance_truncated_to_no_step_is_recorded_off(tmp_path_factory):
    """Lumina-Image 2.0 guides only steps with (i + 1) / steps <= cfg_trunc_ratio: its card's 0.25 at
    2 steps guides none (recorded off), at 4 steps one (recorded on, and the rows say so)."""
    folder = build_family("lumina2", tmp_path_factory.mktemp("t2i-only") / "lumina2")
    small = {"height": 64, "width": 64, "guidance_scale": 4.0, "cfg_trunc_ratio": 0.25}
    two = _model(folder, **small)
    assert two.settings["guidance"]["classifier_free"] is False and two.settings["guidance"]["guided_steps"] == 0
    two.generate(["a photo of a judge"], [1])
    assert two.guidance_check.record_ran["classifier_free"] is False
    four = _model(folder, **{**small, "num_inference_steps": 4})
    assert four.settings["guidance"] == {"rule": "Lumina2Pipeline.do_classifier_free_guidance",
                                         "classifier_free": True, "guided_steps": 1}
    four.generate(["a photo of a judge"], [1])
    assert four.guidance_check.record_ran == {"rows_per_image_and_step": 1.25, "classifier_free": True}
