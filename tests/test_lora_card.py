"""A LoRA's own card (benchmark/models/lora_card.py) through the real loading path: a tiny LoRA made
with peft on the tiny SD 1.5 pipeline, with a README as diffusers' DreamBooth scripts and the Hub's
LoRA form write one (base_model, instance_prompt, widget, an example that fuses at 0.7 and calls the
pipeline at 3 steps). Its name, scale and settings come from the card with their sources; its
trigger is offered, and with --lora-trigger put before every prompt and recorded (the audit end to
end); a base of the same architecture but another model is audited with a warning and a record; the
board's row key does not depend on the order LoRAs were fused in (measured: the fused weights agree
up to float rounding) or on a LoRA at scale 0. Tiny random weights: the images are meaningless."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tiny_pipelines import build_family, install_in_hub_cache, make_tiny_lora, use_hub_cache_offline

from benchmark.contract.adapter_identity import adapters_key
from benchmark.models.lora_card import card_of_example

SD15 = "stable-diffusion-v1-5/stable-diffusion-v1-5"
TINY = {"height": 64, "width": 64}
CARD = """---
base_model: {base}
instance_prompt: sks person
tags: [text-to-image, lora, diffusers, template:sd-lora]
widget:
- text: sks person, a photo of a doctor
  output:
    url: images/0.png
---

# Sks person LoRA

## Trigger words

You should use `sks person` to trigger the image generation.

```py
from diffusers import AutoPipelineForText2Image
pipe = AutoPipelineForText2Image.from_pretrained("{base}")
pipe.load_lora_weights("someone/sks-person")
pipe.fuse_lora(lora_scale=0.7)
steps = 3
image = pipe("sks person, a photo", num_inference_steps=steps, guidance_scale=6.0).images[0]
```
"""


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A tiny SD 1.5 fine-tune folder naming SD 1.5 as its base, and two tiny LoRAs for it: one
    with the card above, one naming SD 1.4 (another model of the same architecture)."""
    from diffusers import AutoPipelineForText2Image

    root = tmp_path_factory.mktemp("lora-card")
    base = root / "my-sd15-finetune"
    shutil.copytree(build_family("sd15", root / "sd15"), base)
    (base / "README.md").write_text(f"---\nbase_model: {SD15}\n---\n\nA tiny fine-tune.\n")
    lora = make_tiny_lora(AutoPipelineForText2Image.from_pretrained(base), root / "sks-lora", text_encoders=False)
    (lora / "README.md").write_text(CARD.format(base=SD15))
    other = make_tiny_lora(AutoPipelineForText2Image.from_pretrained(base), root / "v14-lora", text_encoders=False,
                           seed=2)
    (other / "README.md").write_text("---\nbase_model: CompVis/stable-diffusion-v1-4\n---\n\n# v1.4 style\n")
    return base, lora, other


def test_the_card_names_the_lora_and_gives_its_scale_settings_and_trigger(made):
    from benchmark.models.text_to_image import plan_settings

    base, lora, _ = made
    plan = plan_settings(str(base), device="cpu", loras=[str(lora)], overrides=TINY)
    (record,) = plan.adapters
    readme = str(lora / "README.md")
    assert record["name"] == "Sks person LoRA"  # its card's title, not pytorch_lora_weights.safetensors
    assert record["scale"] == 0.7 and record["scale_source"] == f"LoRA card example ({readme}: fuse_lora(...) with scale 0.7)"
    assert (record["base_model"], record["base_model_match"]) == (SD15, "the model audited")
    assert record["trigger_offered"] == "sks person" and record["card"] == readme
    # the example's call settings come before the base's card row (SD 1.5's 50 steps, guidance 7.5)
    assert (plan.settings["num_inference_steps"], plan.settings["guidance_scale"]) == (3, 6.0)
    assert plan.sources["num_inference_steps"] == f"LoRA card example ({readme})"
    assert plan.sources["height"] == "--set" and "lora_trigger" not in plan.settings
    assert plan.warnings() == []
    # a scale given on the command line wins over the card's
    (given,) = plan_settings(str(base), device="cpu", loras=[f"{lora}:0.5"], overrides=TINY).adapters
    assert (given["scale"], given["scale_source"]) == (0.5, "--lora")


def test_a_hub_loras_card_is_read_from_the_cache(made, tmp_path, monkeypatch):
    from benchmark.models.text_to_image import plan_settings

    base, lora, _ = made
    cache = tmp_path / "hub"
    install_in_hub_cache(lora, cache, "someone/sks-person")
    use_hub_cache_offline(monkeypatch, cache)
    (record,) = plan_settings(str(base), device="cpu", loras=["someone/sks-person"], overrides=TINY).adapters
    assert (record["name"], record["card"]) == ("someone/sks-person", "someone/sks-person README.md")
    assert (record["trigger_offered"], record["scale"]) == ("sks person", 0.7)


def test_a_lora_for_another_model_of_the_architecture_is_audited_with_a_warning(made):
    from benchmark.models.text_to_image import plan_settings

    base, _, other = made
    plan = plan_settings(str(base), device="cpu", loras=[str(other)], overrides={**TINY, "num_inference_steps": 2})
    (record,) = plan.adapters
    assert record["base_model_match"] == "another model of its architecture" and record["name"] == "v1.4 style"
    (line,) = plan.warnings()
    assert line.startswith("LoRA v1.4 style was made for CompVis/stable-diffusion-v1-4") and "SD 1 / 2" in line


def _prompts_seen(model, monkeypatch):
    seen = []
    original = type(model.pipe).__call__

    @functools.wraps(original)  # the call's signature stays the pipeline's
    def spy(pipe, *args, **kwargs):
        seen.extend(kwargs["prompt"])
        return original(pipe, *args, **kwargs)

    monkeypatch.setattr(type(model.pipe), "__call__", spy)
    return seen


def test_the_trigger_goes_before_every_prompt_and_is_recorded(made, monkeypatch):
    from benchmark.models.text_to_image import load_text_to_image, plan_settings

    base, lora, _ = made
    given = plan_settings(str(base), device="cpu", loras=[str(lora)], lora_trigger="in the style of sks",
                          overrides=TINY)
    assert (given.settings["lora_trigger"], given.sources["lora_trigger"]) == ("in the style of sks",
                                                                             "--lora-trigger")
    plain = load_text_to_image(str(base), device="cpu", loras=[str(lora)], **TINY)
    triggered = load_text_to_image(str(base), device="cpu", loras=[str(lora)], lora_trigger=True, **TINY)
    assert triggered.settings["lora_trigger"] == "sks person" and "lora_trigger" not in plain.settings
    assert triggered.setting_sources["lora_trigger"] == f"LoRA card instance_prompt ({lora / 'README.md'})"
    seen = _prompts_seen(triggered, monkeypatch)
    images = triggered.generate(["a photo of a doctor", "a photo of a nurse"], [1, 2]).images
    assert seen == ["sks person, a photo of a doctor", "sks person, a photo of a nurse"]
    other = plain.generate(["a photo of a doctor"], [1]).images[0]
    assert np.abs(np.asarray(images[0], dtype=int) - np.asarray(other, dtype=int)).mean() > 0.5


def test_a_lora_with_its_trigger_is_audited_end_to_end(made, tmp_path):
    """t2ibench run --lora DIR --lora-trigger: the word before every prompt, recorded in run_config.json,
    results.json and the report; the manifest keeps the probes' own prompts; the board's row key
    tells it from the same LoRA without its trigger."""
    from submissions.leaderboard.board_model import Submission

    base, lora, _ = made
    run = tmp_path / "run"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "benchmark.cli", "run", "--model", str(base), "--lora", str(lora),
                           "--lora-trigger", "--out", str(run), "--suites", "gep_neutral", "--limit", "2",
                           "--set", "num_inference_steps=2", "--set", "height=64", "--set", "width=64",
                           "--encoder", "builtin:tiny-clip", "--n-resamples", "20", "--quiet"],
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    source = f"LoRA card instance_prompt ({lora / 'README.md'})"
    config = json.loads((run / "run_config.json").read_text())
    assert config["settings"]["lora_trigger"] == "sks person" and config["setting_sources"]["lora_trigger"] == source
    assert config["request"]["model"]["lora_trigger"] is True
    (adapter,) = config["model"]["adapters"]
    assert (adapter["name"], adapter["trigger_offered"], adapter["scale"]) == ("Sks person LoRA", "sks person", 0.7)
    results = json.loads((run / "results.json").read_text())
    assert results["settings"]["lora_trigger"] == "sks person" and results["setting_sources"]["lora_trigger"] == source
    assert "lora\\_trigger=sks person" in (run / "report" / "report.md").read_text()
    prompts = pd.read_parquet(run / "manifest.parquet")["prompt"]
    assert len(prompts) == 2 and not prompts.str.startswith("sks person").any()
    sub = Submission(results, "run", run / "results.json", run)
    untriggered = {**results, "settings": {k: v for k, v in results["settings"].items() if k != "lora_trigger"}}
    assert sub.key != Submission(untriggered, "run", run / "results.json", run).key


def test_the_row_key_ignores_the_fusing_order_and_a_lora_at_scale_zero():
    a = {"kind": "lora", "sha256": "a" * 64, "scale": 0.8}
    b = {"kind": "lora", "sha256": "b" * 64, "scale": 1.0}
    unet = {"kind": "component", "component": "unet", "sha256": "c" * 64}
    assert adapters_key([a, b]) == adapters_key([b, a]) != adapters_key([a])
    assert adapters_key([unet, a, b]) == adapters_key([b, unet, a])  # a checkpoint replaces the UNet first
    assert adapters_key([{**a, "scale": 0}]) == "" and adapters_key([a, {**b, "scale": 0.0}]) == adapters_key([a])
    # a DoRA rescales the weight it is fused into: the order changes the model, and scale 0 is not the base
    dora = {**b, "dora": True}
    assert adapters_key([a, dora]) != adapters_key([dora, a]) and adapters_key([{**dora, "scale": 0}]) != ""
    assert adapters_key([a], trigger="sks") != adapters_key([a]) and adapters_key([], trigger="") == ""


def test_two_loras_fused_in_either_order_give_the_same_weights(made):
    """W + s1 B1 A1 + s2 B2 A2 is a sum: fused in either order the UNet's weights agree to float
    rounding (peft adds each delta in place, so not always bit for bit), and so do the images."""
    import torch

    from benchmark.models.text_to_image import load_text_to_image

    base, lora, other = made
    one = load_text_to_image(str(base), device="cpu", loras=[f"{lora}:0.7", f"{other}:0.9"], **TINY)
    two = load_text_to_image(str(base), device="cpu", loras=[f"{other}:0.9", f"{lora}:0.7"], **TINY)
    diffs = [(p1 - p2).abs().max().item() for (_, p1), (_, p2) in
             zip(one.pipe.unet.state_dict().items(), two.pipe.unet.state_dict().items())]
    scale = max(p.abs().max().item() for p in one.pipe.unet.state_dict().values())
    assert max(diffs) <= 4 * torch.finfo(torch.float32).eps * scale, max(diffs)
    first = np.asarray(one.generate(["a photo of a doctor"], [5]).images[0], dtype=int)
    second = np.asarray(two.generate(["a photo of a doctor"], [5]).images[0], dtype=int)
    assert np.abs(first - second).max() <= 1
    assert adapters_key(one.adapters) == adapters_key(two.adapters)


def test_the_example_code_is_read_not_run():
    text = ("```python\n>>> import os\n>>> os.system('touch PWNED')\n>>> pipe.set_adapters(['a'], adapter_weights=[0.6])"
            "\n>>> pipe(prompt='x', num_inference_steps=4, guidance_scale=1.0, height=512)\n```\n"
            "```py\nimage = pipe('y', num_inference_steps=4, guidance_scale=2.0)\n```\n"
            "```py\nthis is not python (\n```\n")
    scale, where, settings = card_of_example(text)
    assert (scale, where) == (0.6, "set_adapters(...) with scale 0.6")
    assert settings == {"num_inference_steps": 4}  # the calls agree on the steps only
    assert card_of_example("```py\npipe.fuse_lora(lora_scale=1e30)\n```") == (None, None, {})  # out of range
    assert card_of_example("```py\npipe.fuse_lora(lora_scale=0.5)\npipe.fuse_lora(lora_scale=0.9)\n```")[0] is None
