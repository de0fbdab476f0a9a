"""LoRA adapters and component checkpoints through the real loading path (benchmark/models/lora.py,
weights_ref.py, component_weights.py): a tiny LoRA made with peft on the tiny SD and SDXL pipelines
(tests/tiny_pipelines.py), saved with diffusers' save_lora_weights, found on disk or in a Hugging
Face cache, checked against the base, loaded, fused and recorded; SDXL-Lightning's UNet-only
checkpoint layout; the one-line refusals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tiny_pipelines import build_family, install_in_hub_cache, make_tiny_lora, use_hub_cache_offline

from benchmark.contract.digest import file_sha256
from benchmark.models import MalformedSpecError, ModelNotAvailableError
from benchmark.models.weights_ref import DIFFUSERS_LORA_FILE, parse_weights_ref

COMMIT = "fedcba9876543210fedcba9876543210fedcba98"
TINY = {"num_inference_steps": 2, "height": 64, "width": 64}


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    root = tmp_path_factory.mktemp("lora-bases")
    return {key: build_family(key, root / key) for key in ("sd15", "sdxl")}


@pytest.fixture(scope="module")
def loras(bases, tmp_path_factory):
    from diffusers import AutoPipelineForText2Image

    root = tmp_path_factory.mktemp("loras")
    out = {}
    for key, base, text_encoders in (("sd15", "sd15", False), ("sdxl", "sdxl", False), ("sdxl_te", "sdxl", True)):
        pipe = AutoPipelineForText2Image.from_pretrained(bases[base])
        out[key] = make_tiny_lora(pipe, root / f"{key}-lora", text_encoders=text_encoders)
    return out


def _pixels(model, seeds=(3,)):
    out = model.generate(["a photo of a doctor"] * len(seeds), list(seeds))
    return np.stack([np.asarray(im.convert("RGB")).astype(int) for im in out.images])


@pytest.fixture(scope="module")
def base_pixels(bases):
    from benchmark.models.text_to_image import load_text_to_image

    return {key: _pixels(load_text_to_image(str(folder), device="cpu", **TINY)) for key, folder in bases.items()}


@pytest.fixture(scope="module")
def fused(bases, loras):
    """Each base with its LoRA at scale 0.8, loaded through load_text_to_image (fused)."""
    from benchmark.models.text_to_image import load_text_to_image

    return {key: load_text_to_image(str(bases[key]), device="cpu", loras=[f"{loras[key]}:0.8"], **TINY)
            for key in bases}


@pytest.mark.parametrize("key", ["sd15", "sdxl"])
def test_a_lora_changes_the_images_and_is_recorded(loras, base_pixels, fused, key):
    model = fused[key]
    changed = _pixels(model)
    assert np.abs(changed - base_pixels[key]).mean() > 1, "the LoRA changed nothing"
    (record,) = model.adapters
    file = loras[key] / DIFFUSERS_LORA_FILE
    assert record == {"kind": "lora", "id": str(file), "path": str(file), "revision": None,
                      "sha256": file_sha256(file), "scale": 0.8, "fused": True,
                      # named by its folder (no card), not by diffusers' file name every LoRA has
                      "name": loras[key].name, "scale_source": "--lora"}
    assert model.settings["adapters"] == [record]
    json.dumps(model.settings)
    # fused: the adapter layers are gone, the base's Linear layers hold base + 0.8 * B A
    assert not any("lora" in name for name, _ in model.pipe.unet.named_parameters())


@pytest.mark.parametrize("key", ["sd15", "sdxl"])
def test_scale_zero_gives_the_base_images_and_fused_equals_unfused(bases, loras, base_pixels, fused, key):
    """Scale 0 adds exactly nothing (W + 0 * BA = W); fusing changes only float rounding: the
    images equal those of diffusers' unfused adapter within one grey level."""
    from diffusers import AutoPipelineForText2Image

    from benchmark.models.diffusers_model import DiffusersTextToImage, PipelineIdentity
    from benchmark.models.text_to_image import load_text_to_image

    zero = load_text_to_image(str(bases[key]), device="cpu", loras=[f"{loras[key]}:0"], **TINY)
    assert np.array_equal(_pixels(zero), base_pixels[key])

    import torch

    pipe = AutoPipelineForText2Image.from_pretrained(bases[key])
    pipe.load_lora_weights(str(loras[key] / DIFFUSERS_LORA_FILE), adapter_name="a")
    pipe.set_adapters(["a"], [0.8])  # not fused: two more matmuls in every adapted layer
    unfused = DiffusersTextToImage(pipe, PipelineIdentity("unfused"), device=torch.device("cpu"), dtype=torch.float32,
                                   overrides=dict(TINY))
    assert np.abs(_pixels(unfused) - _pixels(fused[key])).max() <= 1


def test_two_loras_apply_in_order_each_at_its_scale(bases, loras, tmp_path):
    from benchmark.models.text_to_image import load_text_to_image

    second = tmp_path / "second"
    shutil.copytree(loras["sd15"], second)
    model = load_text_to_image(str(bases["sd15"]), device="cpu", loras=[str(loras["sd15"]), f"{second}:-0.5"],
                               **TINY)
    assert [a["scale"] for a in model.adapters] == [1.0, -0.5]
    assert [a["path"] for a in model.adapters] == [str(loras["sd15"] / DIFFUSERS_LORA_FILE),
                                                   str(second / DIFFUSERS_LORA_FILE)]


def test_a_lora_for_another_base_is_refused_in_one_line_before_loading(bases, loras):
    from benchmark.models.text_to_image import check_text_to_image

    with pytest.raises(MalformedSpecError) as sd_on_sdxl:
        check_text_to_image(str(bases["sdxl"]), device="cpu", loras=[str(loras["sd15"])])
    assert "does not fit StableDiffusionXLPipeline" in str(sd_on_sdxl.value) or \
        "does not have" in str(sd_on_sdxl.value)
    assert "made for another base model" in str(sd_on_sdxl.value)
    with pytest.raises(MalformedSpecError, match="adapts a 'text_encoder_2', which StableDiffusionPipeline does "
                                                 "not have") as sdxl_on_sd:
        check_text_to_image(str(bases["sd15"]), device="cpu", loras=[str(loras["sdxl_te"])])
    assert "\n" not in str(sd_on_sdxl.value) + str(sdxl_on_sd.value)


def test_a_text_encoder_lora_loads_or_names_the_peft_it_needs(bases, loras, base_pixels):
    """diffusers loads text-encoder LoRA layers through transformers, which asks for its own minimum
    peft: with an older peft the check says so in one line; with a new enough one the LoRA loads."""
    import importlib.metadata

    from packaging.version import Version
    from transformers.integrations.peft import MIN_PEFT_VERSION

    from benchmark.models.text_to_image import load_text_to_image

    if Version(importlib.metadata.version("peft")) < Version(MIN_PEFT_VERSION):
        with pytest.raises(MalformedSpecError, match=f"adapts text_encoder, a transformers model, .* peft >= "
                                                     f"{MIN_PEFT_VERSION} .*pip install -U peft"):
            load_text_to_image(str(bases["sdxl"]), device="cpu", loras=[str(loras["sdxl_te"])], **TINY)
    else:
        model = load_text_to_image(str(bases["sdxl"]), device="cpu", loras=[str(loras["sdxl_te"])], **TINY)
        assert np.abs(_pixels(model) - base_pixels["sdxl"]).mean() > 1


def test_missing_several_and_unsafe_lora_files_are_refused_in_one_line(bases, loras, tmp_path):
    from benchmark.models.text_to_image import check_text_to_image

    with pytest.raises(MalformedSpecError, match="LoRA file or folder './no-such-lora' does not exist"):
        check_text_to_image(str(bases["sd15"]), device="cpu", loras=["./no-such-lora:0.5"])
    several = tmp_path / "several"
    several.mkdir()
    for name in ("a.safetensors", "b.safetensors"):
        shutil.copy(loras["sd15"] / DIFFUSERS_LORA_FILE, several / name)
    with pytest.raises(MalformedSpecError, match=r"holds several weights files \(a.safetensors, b.safetensors\): "
                                                 "name one"):
        check_text_to_image(str(bases["sd15"]), device="cpu", loras=[str(several)])
    pickle = tmp_path / "lora.bin"
    pickle.write_bytes(b"not read")
    with pytest.raises(MalformedSpecError, match="is not a .safetensors file"):
        check_text_to_image(str(bases["sd15"]), device="cpu", loras=[str(pickle)])
    with pytest.raises(MalformedSpecError, match="LoRAs and component checkpoints apply to diffusers pipelines"):
        check_text_to_image("openai:dall-e-3", loras=[str(loras["sd15"])])


def test_the_lora_syntax(tmp_path, monkeypatch):
    ref = parse_weights_ref("ByteDance/SDXL-Lightning@main/sdxl_lightning_4step_lora.safetensors:0.75")
    assert (ref.repo, ref.revision, ref.weight_name, ref.scale) == (
        "ByteDance/SDXL-Lightning", "main", "sdxl_lightning_4step_lora.safetensors", 0.75)
    assert ref.name == "ByteDance/SDXL-Lightning/sdxl_lightning_4step_lora.safetensors"
    plain = parse_weights_ref("latent-consistency/lcm-lora-sdxl")
    assert (plain.repo, plain.weight_name, plain.scale, plain.scale_given) == (
        "latent-consistency/lcm-lora-sdxl", None, 1.0, False)
    # a local path may hold ':' itself: taken whole when it exists, refused when both readings exist
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run:2").mkdir()
    assert parse_weights_ref("run:2").path == str(tmp_path / "run:2") and parse_weights_ref("run:2").scale == 1.0
    (tmp_path / "run").mkdir()
    with pytest.raises(MalformedSpecError, match="is ambiguous: both 'run:2' and 'run' exist"):
        parse_weights_ref("run:2")
    assert parse_weights_ref("run:0.5").path == str(tmp_path / "run") and parse_weights_ref("run:0.5").scale == 0.5
    with pytest.raises(MalformedSpecError, match="does not exist"):
        parse_weights_ref("loras/style.safetensors")
    with pytest.raises(MalformedSpecError, match="neither an existing file or folder nor a Hub reference"):
        parse_weights_ref("bad name!/x")


# ------------------------------------------------------- from a Hugging Face cache, by Hub ID


@pytest.fixture(scope="module")
def hub_cache(bases, loras, tmp_path_factory):
    """The tiny SDXL as stabilityai/stable-diffusion-xl-base-1.0, the tiny SDXL LoRA as an
    SDXL-Lightning LoRA file, a UNet checkpoint laid out as SDXL-Lightning's, and the SD LoRA as a
    community repo, in an offline Hugging Face cache."""
    from diffusers import UNet2DConditionModel
    from safetensors.torch import save_file

    cache = tmp_path_factory.mktemp("hf-cache")
    install_in_hub_cache(bases["sdxl"], cache, "stabilityai/stable-diffusion-xl-base-1.0")
    install_in_hub_cache(bases["sd15"], cache, "stable-diffusion-v1-5/stable-diffusion-v1-5")
    lightning = tmp_path_factory.mktemp("lightning")
    shutil.copy(loras["sdxl"] / DIFFUSERS_LORA_FILE, lightning / "sdxl_lightning_4step_lora.safetensors")
    unet = UNet2DConditionModel.from_pretrained(bases["sdxl"], subfolder="unet")
    import torch

    with torch.no_grad():  # a different UNet of the same architecture: the distilled one
        for parameter in unet.parameters():
            parameter.add_(0.01)
    save_file(unet.state_dict(), str(lightning / "sdxl_lightning_4step_unet.safetensors"))
    sd_unet = UNet2DConditionModel.from_pretrained(bases["sd15"], subfolder="unet")
    save_file(sd_unet.state_dict(), str(lightning / "sd15_unet.safetensors"))
    install_in_hub_cache(lightning, cache, "ByteDance/SDXL-Lightning", commit=COMMIT)
    install_in_hub_cache(loras["sd15"], cache, "someone/style-lora", commit=COMMIT)
    return cache


@pytest.fixture
def offline_cache(hub_cache, monkeypatch):
    return use_hub_cache_offline(monkeypatch, hub_cache)


def test_a_hub_lora_from_the_cache_is_recorded_with_its_commit(bases, loras, offline_cache):
    from benchmark.models.text_to_image import load_text_to_image

    model = load_text_to_image(str(bases["sd15"]), device="cpu", loras=["someone/style-lora:0.5"], **TINY)
    (record,) = model.adapters
    assert record == {"kind": "lora", "id": f"someone/style-lora/{DIFFUSERS_LORA_FILE}", "repo": "someone/style-lora",
                      "file": DIFFUSERS_LORA_FILE, "revision": COMMIT,
                      "sha256": file_sha256(loras["sd15"] / DIFFUSERS_LORA_FILE), "scale": 0.5, "fused": True,
                      "name": "someone/style-lora", "scale_source": "--lora"}
    with pytest.raises(ModelNotAvailableError, match="someone/not-cached is not in the local Hugging Face cache"):
        load_text_to_image(str(bases["sd15"]), device="cpu", loras=["someone/not-cached"], **TINY)


def test_a_few_step_lora_brings_its_card_row_and_the_base_its_own(offline_cache):
    """SDXL-Lightning's 4-step LoRA on SDXL base 1.0: the LoRA's row gives steps, guidance,
    scheduler and timestep spacing, the base's row the resolution."""
    from benchmark.models.text_to_image import load_text_to_image, plan_settings

    lora = "ByteDance/SDXL-Lightning/sdxl_lightning_4step_lora.safetensors"
    plan = plan_settings("stabilityai/stable-diffusion-xl-base-1.0", device="cpu", loras=[lora])
    card = f"model card (https://huggingface.co/ByteDance/SDXL-Lightning) for {lora}"
    assert (plan.settings["num_inference_steps"], plan.settings["guidance_scale"]) == (4, 0.0)
    assert plan.settings["timestep_spacing"] == "trailing" and plan.sources["timestep_spacing"] == card
    assert plan.settings["height"] == 1024 and "stable-diffusion-xl-base-1.0" in plan.sources["height"]
    assert plan.warning is None and plan.adapters[0]["revision"] == COMMIT
    assert any(line.startswith("num_inference_steps=4  (model card") for line in plan.lines())
    model = load_text_to_image("stabilityai/stable-diffusion-xl-base-1.0", device="cpu", loras=[lora],
                               height=64, width=64)
    assert model.settings["scheduler"] == "EulerDiscreteScheduler" and model.settings["timestep_spacing"] == "trailing"
    assert model.pipe.scheduler.config.timestep_spacing == "trailing"
    assert model.settings["guidance"]["classifier_free"] is False
    assert len(model.generate(["a photo of a nurse"], [1]).images) == 1


def test_a_unet_only_checkpoint_replaces_the_base_unet(bases, offline_cache):
    import torch
    from safetensors.torch import load_file

    from benchmark.models.text_to_image import check_text_to_image, load_text_to_image

    ref = "ByteDance/SDXL-Lightning/sdxl_lightning_4step_unet.safetensors"
    model = load_text_to_image("stabilityai/stable-diffusion-xl-base-1.0", device="cpu", components={"unet": ref},
                               height=64, width=64)
    file = offline_cache / "models--ByteDance--SDXL-Lightning" / "snapshots" / COMMIT / Path(ref).name
    saved = load_file(str(file))
    assert all(torch.equal(saved[k], v) for k, v in model.pipe.unet.state_dict().items())
    assert model.adapters == [{"kind": "component", "component": "unet", "id": ref, "repo": "ByteDance/SDXL-Lightning",
                               "file": Path(ref).name, "revision": COMMIT, "sha256": file_sha256(file)}]
    assert (model.settings["num_inference_steps"], model.settings["timestep_spacing"]) == (4, "trailing")
    with pytest.raises(MalformedSpecError, match="unet checkpoint .*sd15_unet.safetensors does not fit "
                                                 "StableDiffusionXLPipeline's unet"):
        check_text_to_image("stabilityai/stable-diffusion-xl-base-1.0", device="cpu",
                            components={"unet": "ByteDance/SDXL-Lightning/sd15_unet.safetensors"})
    with pytest.raises(MalformedSpecError, match="has no component 'transformer'"):
        check_text_to_image("stabilityai/stable-diffusion-xl-base-1.0", device="cpu", components={"transformer": ref})
