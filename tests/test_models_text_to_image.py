"""Text-to-image loading: builtin:tiny-sd round trip, per-image seeds, settings, callables."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from benchmark.models import MalformedSpecError
from benchmark.models.callable_model import CallableTextToImage
from benchmark.models.diffusers_model import DiffusersTextToImage, PipelineIdentity
from benchmark.models.text_to_image import GenerationOutput, load_text_to_image


@pytest.fixture(scope="module")
def tiny(cache):
    return load_text_to_image("builtin:tiny-sd")


def pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("RGB"))


def test_tiny_sd_is_saved_then_loaded_through_autopipeline(cache, tiny):
    from diffusers import StableDiffusionPipeline

    folder = cache / "builtin" / "tiny-sd"
    index = json.loads((folder / "model_index.json").read_text())
    assert index["_class_name"] == "StableDiffusionPipeline"
    assert (folder / "t2ibench_builtin.json").is_file()
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temp folders left
    assert isinstance(tiny, DiffusersTextToImage) and isinstance(tiny.pipe, StableDiffusionPipeline)
    assert tiny.model_id == "builtin:tiny-sd" and tiny.revision == "builtin-v1" and tiny.is_builtin
    assert tiny.pipe.tokenizer.model_max_length == 77 and len(tiny.pipe.tokenizer) == 49408
    s = tiny.settings
    assert (s["height"], s["width"], s["num_inference_steps"], s["guidance_scale"]) == (64, 64, 3, 7.5)
    assert s["dtype"] == "float32" and s["device"] == "cpu" and s["safety_checker"] is False
    assert s["batch_invariant"] is True
    json.dumps(s)  # manifest-ready

    # the saved weights are the ones loaded
    from safetensors.torch import load_file

    saved = load_file(str(folder / "unet" / "diffusion_pytorch_model.safetensors"))
    state = tiny.pipe.unet.state_dict()
    assert all(np.array_equal(saved[k].numpy(), state[k].numpy()) for k in saved)


def test_tiny_sd_makes_real_images(tiny):
    # Its speed is measured by bench/runner_overhead.py, not asserted here.
    out = tiny.generate(["a photo of a lawyer"], [1])
    assert isinstance(out, GenerationOutput) and out.nsfw == [None]
    (image,) = out.images
    assert image.size == (64, 64) and image.mode == "RGB"
    assert pixels(image).std() > 1  # not a blank image


def test_image_depends_only_on_prompt_and_seed(tiny):
    alone = pixels(tiny.generate(["a photo of a lawyer"], [1]).images[0])
    batch = tiny.generate(["a cat", "a photo of a lawyer", "a dog"], [5, 1, 7]).images
    moved = tiny.generate(["a dog", "a cat", "a photo of a lawyer"], [7, 5, 1]).images
    assert np.array_equal(alone, pixels(batch[1]))
    assert np.array_equal(alone, pixels(moved[2]))
    assert np.array_equal(pixels(batch[0]), pixels(moved[1]))
    other_seed = pixels(tiny.generate(["a photo of a lawyer"], [2]).images[0])
    assert not np.array_equal(alone, other_seed)


def test_overrides_and_stochastic_scheduler_keep_per_image_seeds(cache):
    model = load_text_to_image(
        "builtin:tiny-sd", height=32, width=32, num_inference_steps=2, scheduler="EulerAncestralDiscreteScheduler"
    )
    s = model.settings
    assert (s["height"], s["num_inference_steps"], s["scheduler"]) == (32, 2, "EulerAncestralDiscreteScheduler")
    one = model.generate(["a chef"], [11]).images[0]
    assert one.size == (32, 32)
    two = model.generate(["a pilot", "a chef"], [4, 11]).images[1]
    assert np.array_equal(pixels(one), pixels(two))


def test_batched_path_on_cpu_uses_one_generator_per_image(tiny):
    # batch_invariant=False runs the batch in one pipeline call; the noise still comes
    # from each image's own generator, so images match up to float rounding.
    model = DiffusersTextToImage(tiny.pipe, PipelineIdentity("x", family="tiny"), device=tiny.device, dtype=tiny.dtype,
                                 overrides={"batch_invariant": False})
    assert model.settings["batch_invariant"] is False
    alone = pixels(model.generate(["a farmer"], [9]).images[0]).astype(int)
    batch = pixels(model.generate(["a judge", "a farmer"], [8, 9]).images[1]).astype(int)
    assert np.abs(alone - batch).max() <= 2


def test_unknown_setting_is_one_line_error(cache):
    with pytest.raises(MalformedSpecError, match="unknown setting"):
        load_text_to_image("builtin:tiny-sd", no_such_setting=1)
    with pytest.raises(MalformedSpecError, match="unknown diffusers scheduler"):
        load_text_to_image("builtin:tiny-sd", scheduler="NoSuchScheduler")


def test_local_folder_spec_uses_family_defaults_and_reloads_identically(cache, tiny):
    folder = cache / "builtin" / "tiny-sd"
    model = load_text_to_image(str(folder))
    assert model.model_id == str(folder.resolve()) and not model.is_builtin and model.revision is None
    # an SD-1-like pipeline: SD 1.x steps / guidance, its native resolution
    assert model.settings["family"] == "sd1"
    assert (model.settings["num_inference_steps"], model.settings["guidance_scale"]) == (50, 7.5)
    assert model.settings["height"] == 64  # unet sample_size 32 x vae scale factor 2
    # loaded again from disk, with the builtin's settings: the very same pixels
    same = DiffusersTextToImage(model.pipe, PipelineIdentity(model.model_id, family="tiny"), device=model.device,
                                dtype=model.dtype)
    a = tiny.generate(["a nurse"], [3]).images[0]
    b = same.generate(["a nurse"], [3]).images[0]
    assert np.array_equal(pixels(a), pixels(b))


def test_safety_checker_flags_are_recorded(cache, tiny):
    """A real (tiny, random) StableDiffusionSafetyChecker whose thresholds flag everything."""
    import torch
    from diffusers import StableDiffusionPipeline
    from diffusers.pipelines.stable_diffusion.safety_checker import StableDiffusionSafetyChecker
    from transformers import CLIPConfig, CLIPImageProcessor

    torch.manual_seed(0)
    checker = StableDiffusionSafetyChecker(
        CLIPConfig(
            text_config={"hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2, "num_hidden_layers": 1},
            vision_config={"hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2,
                           "num_hidden_layers": 1, "image_size": 32, "patch_size": 8},
            projection_dim=8,
        )
    ).eval()
    with torch.no_grad():
        checker.concept_embeds_weights.fill_(-2.0)  # cosine - (-2) > 0: always "nsfw"
    components = {k: v for k, v in tiny.pipe.components.items() if k not in ("safety_checker", "feature_extractor")}
    pipe = StableDiffusionPipeline(
        **components,
        safety_checker=checker,
        feature_extractor=CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
    )
    model = DiffusersTextToImage(pipe, PipelineIdentity("tiny-with-checker", family="tiny"), device=tiny.device,
                                 dtype=tiny.dtype)
    assert model.settings["safety_checker"] is True
    out = model.generate(["a", "b"], [0, 1])
    assert out.nsfw == [True, True]
    assert all(pixels(im).max() == 0 for im in out.images)  # diffusers blacked them out: the flag says so


# ------------------------------------------------------------------------ callables


def test_python_spec_loads_a_plain_callable(tmp_path, monkeypatch):
    (tmp_path / "my_api_model.py").write_text(
        "from PIL import Image\n"
        "def generate(prompts, seeds):\n"
        "    return [Image.new('RGB', (8, 8), (s % 256, len(p) % 256, 0)) for p, s in zip(prompts, seeds)]\n"
        "generate.t2ibench_settings = {'api_version': '2024-01'}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    model = load_text_to_image("python:my_api_model:generate")
    assert isinstance(model, CallableTextToImage)
    assert model.model_id == "python:my_api_model:generate"
    assert model.settings == {"kind": "python-callable", "callable": "python:my_api_model:generate",
                              "api_version": "2024-01"}
    out = model.generate(["ab", "abc"], [1, 2])
    assert [im.getpixel((0, 0)) for im in out.images] == [(1, 2, 0), (2, 3, 0)]
    assert out.nsfw == [None, None]


def test_callable_object_directly_and_bad_returns():
    class Api:
        def __call__(self, prompts, seeds, quality="std"):
            return [Image.new("RGB", (4, 4)) for _ in prompts]

    model = load_text_to_image(Api(), quality="hd")
    assert model.settings["quality"] == "hd" and model.model_id.endswith("Api")
    assert len(model.generate(["x"], [0]).images) == 1
    with pytest.raises(ValueError, match="prompts but"):
        model.generate(["x", "y"], [0])
    bad = load_text_to_image(lambda prompts, seeds: [np.zeros((4, 4, 3)) for _ in prompts])
    with pytest.raises(TypeError, match="PIL"):
        bad.generate(["x"], [0])
    short = load_text_to_image(lambda prompts, seeds: [])
    with pytest.raises(RuntimeError, match="returned 0 images"):
        short.generate(["x"], [0])
