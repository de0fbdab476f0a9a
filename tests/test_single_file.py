"""Models as the community publishes them (issue 48): single-file checkpoints read with their base's
configs (benchmark/models/single_file.py), quantized weights (benchmark/models/quantization.py: a
GGUF file, torchao where installed), and LoRAs whose text-encoder layers are skipped on request
(--lora-unet-only). Tiny random-weight models written from the tests' tiny SD (tests/tiny_single_file.py):
the scores are meaningless."""

from __future__ import annotations

import importlib.util
import json
import shutil

import numpy as np
import pytest
from cli_here import exit_status

from tiny_pipelines import build_family, install_in_hub_cache, make_tiny_lora, use_hub_cache_offline
from tiny_single_file import write_original_sd_checkpoint, write_unet_file, write_unet_gguf

from benchmark.contract.digest import file_sha256
from benchmark.models import MalformedSpecError

TINY = {"num_inference_steps": 2, "height": 64, "width": 64}
FAST = ["--suites", "gep_neutral", "--limit", "2", "--set", "num_inference_steps=2", "--set", "height=64", "--set",
        "width=64", "--n-resamples", "20", "--encoder", "builtin:tiny-clip", "--vqa", "builtin:tiny-vqa", "--quiet"]
COMMIT = "abcdefabcdefabcdefabcdefabcdefabcdefabcd"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("single-files")
    sd15, sdxl = build_family("sd15", root / "sd15"), build_family("sdxl", root / "sdxl")
    from diffusers import AutoPipelineForText2Image

    return {"sd15": sd15, "sdxl": sdxl,
            "whole": write_original_sd_checkpoint(sd15, root / "files" / "my-finetune.safetensors", shift=0.002),
            "gguf": write_unet_gguf(sd15, root / "files" / "unet-Q8_0.gguf"),
            "sdxl_unet": write_unet_file(sdxl, root / "files" / "sdxl-unet.safetensors"),
            "lora": make_tiny_lora(AutoPipelineForText2Image.from_pretrained(sd15), root / "sd15-lora",
                                   text_encoders=False)}


def _pixels(model):
    return np.asarray(model.generate(["a photo of a doctor"], [3]).images[0].convert("RGB")).astype(int)


@pytest.fixture(scope="module")
def base_pixels(files):
    from benchmark.models.text_to_image import load_text_to_image

    return _pixels(load_text_to_image(str(files["sd15"]), device="cpu", **TINY))


def test_an_original_layout_file_is_its_own_model_read_with_the_base_configs(files, base_pixels):
    from benchmark.models.text_to_image import load_text_to_image

    model = load_text_to_image(str(files["whole"]), base=str(files["sd15"]), device="cpu", **TINY)
    assert model.model_id == str(files["whole"]) and model.revision is None
    assert model.checkpoint == {"kind": "single_file", "id": str(files["whole"]), "path": str(files["whole"]),
                                "sha256": file_sha256(files["whole"]), "format": "safetensors", "layout": "pipeline",
                                "base": str(files["sd15"]), "base_from": "--base", "base_revision": None}
    assert np.abs(_pixels(model) - base_pixels).mean() > 0.5  # its UNet weights were shifted: another model
    # the same file without the shift converts back to the folder exactly: every tensor in its place
    exact = write_original_sd_checkpoint(files["sd15"], files["whole"].parent / "exact.safetensors")
    assert np.array_equal(_pixels(load_text_to_image(str(exact), base=str(files["sd15"]), device="cpu", **TINY)),
                          base_pixels)


def test_a_single_file_takes_a_lora_as_its_base_folder_does(files, tmp_path, base_pixels):
    """--model FILE --base BASE --lora L: the LoRA is fused into the file's weights, whatever its
    layout: a whole-pipeline file and a UNet file holding the folder's weights give the folder's
    images with the LoRA exactly; the file and the LoRA are both recorded and both key the row."""
    from benchmark.models.text_to_image import load_text_to_image
    from submissions.leaderboard.board_model import Submission

    lora = str(files["lora"])
    with_lora = _pixels(load_text_to_image(str(files["sd15"]), loras=[lora], device="cpu", **TINY))
    assert np.abs(with_lora - base_pixels).mean() > 1  # the LoRA changes the images
    lora_sha = file_sha256(files["lora"] / "pytorch_lora_weights.safetensors")
    for file in (write_original_sd_checkpoint(files["sd15"], tmp_path / "exact.safetensors"),
                 write_unet_file(files["sd15"], tmp_path / "unet.safetensors")):
        model = load_text_to_image(str(file), base=str(files["sd15"]), loras=[lora], device="cpu", **TINY)
        assert np.array_equal(_pixels(model), with_lora), file.name
        sha = file_sha256(file)
        assert model.checkpoint["sha256"] == sha and [a["sha256"] for a in model.adapters] == [lora_sha]
        doc = {"model": {"id": model.model_id, "checkpoint": model.checkpoint, "adapters": list(model.adapters)}}
        key = Submission(doc, "x", file, None).key
        assert key.startswith(f"file:{sha[:16]}+") and lora_sha[:16] in key, key


def test_pipeline_choice_of_a_single_file_is_its_base_class(files, hub_files, tmp_path):
    """pipeline_choice answers the class that runs a single file: its base's, from the base's
    model_index.json (--base, the file's own Hub repo or its card's base_model); the file is not read."""
    from benchmark.models.text_to_image import pipeline_choice

    assert pipeline_choice(str(files["whole"]), base=str(files["sd15"])).name == "StableDiffusionPipeline"
    assert pipeline_choice(str(files["sdxl_unet"]), base=str(files["sdxl"])).name == "StableDiffusionXLPipeline"
    assert pipeline_choice(str(files["gguf"]), base=str(files["sd15"])).cls.__name__ == "StableDiffusionPipeline"
    assert pipeline_choice("hf://someone/tiny-sd15/model.safetensors").name == "StableDiffusionPipeline"
    assert pipeline_choice("hf://someone/finetune/finetune.safetensors").name == "StableDiffusionPipeline"
    not_read = tmp_path / "not-a-checkpoint.safetensors"  # only the base is read
    not_read.write_bytes(b"\0" * 16)
    assert pipeline_choice(str(not_read), base=str(files["sdxl"])).name == "StableDiffusionXLPipeline"
    with pytest.raises(MalformedSpecError, match="names no base model: give the diffusers model it fine-tunes"):
        pipeline_choice(str(not_read))
    with pytest.raises(MalformedSpecError, match="--base names the base of a single-file checkpoint"):
        pipeline_choice(str(files["sd15"]), base=str(files["sd15"]))


def _run(argv, capsys) -> tuple[int, list[str]]:
    code = exit_status(argv)
    _, err = capsys.readouterr()
    return code, [ln for ln in err.splitlines() if ln.startswith("t2ibench")]


def _submission(run):
    from submissions.leaderboard.board_model import Submission
    from submissions.leaderboard.wording import reference_label

    sub = Submission(json.loads((run / "results.json").read_text()), run.name, run / "results.json", run)
    return sub, reference_label(sub)


def test_a_single_file_and_a_gguf_file_are_audited_end_to_end_each_its_own_row(files, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    runs = {}
    for name, model in (("whole", files["whole"]), ("gguf", files["gguf"])):
        runs[name] = tmp_path / name
        code, lines = _run(["run", "--model", model, "--base", files["sd15"], "--out", runs[name], *FAST], capsys)
        assert code == 0, lines
    sha = file_sha256(files["whole"])
    config = json.loads((runs["whole"] / "run_config.json").read_text())
    results = json.loads((runs["whole"] / "results.json").read_text())
    assert config["model"]["checkpoint"]["sha256"] == results["model"]["checkpoint"]["sha256"] == sha
    assert results["model"]["id"] == str(files["whole"]) and config["request"]["model"]["base"] == str(files["sd15"])
    report = (runs["whole"] / "report" / "report.md").read_text()
    assert f"sha256 {sha[:12]}" in report and "Checkpoint" in report
    sub, label = _submission(runs["whole"])
    assert sub.key.startswith(f"file:{sha[:16]}#") and f"[file sha256 {sha[:12]}]" in label

    gguf = json.loads((runs["gguf"] / "results.json").read_text())
    quant = gguf["model"]["quantization"]
    assert (quant["backend"], quant["scheme"], quant["components"]) == ("gguf", "Q8_0", ["unet"])
    assert gguf["settings"]["quantization"]["scheme"] == "Q8_0"
    assert gguf["model"]["checkpoint"]["layout"] == "denoiser"
    assert "gguf 0." in (runs["gguf"] / "report" / "report.md").read_text()
    sub_q, label_q = _submission(runs["gguf"])
    assert "+quantized=gguf:Q8_0" in sub_q.key and "[quantized gguf:Q8_0]" in label_q and sub_q.key != sub.key
    from submissions.validate import validate_results

    assert not [p for p in validate_results(gguf) if "schema" in p.lower()]


def test_the_model_is_the_file_wherever_it_lies(files, tmp_path):
    """Two copies of one file are one model (one row key); the base folder named is only where its
    configs come from."""
    from submissions.leaderboard.board_model import Submission

    def key(path):
        doc = {"model": {"id": str(path), "revision": None, "checkpoint": {"sha256": file_sha256(path)}}}
        return Submission(doc, "x", path, None).key

    copy = tmp_path / "elsewhere.safetensors"
    shutil.copy(files["whole"], copy)
    assert key(copy) == key(files["whole"])


@pytest.fixture
def hub_files(files, tmp_path, monkeypatch):
    """someone/tiny-sd15: a diffusers repo keeping a single file beside its folders (as
    stable-diffusion-v1-5 does); someone/finetune: one file whose card names that repo as base_model."""
    cache = tmp_path / "hub"
    repo = tmp_path / "repo"
    shutil.copytree(files["sd15"], repo)
    shutil.copy(files["whole"], repo / "model.safetensors")
    install_in_hub_cache(repo, cache, "someone/tiny-sd15", commit=COMMIT)
    finetune = tmp_path / "finetune"
    finetune.mkdir()
    shutil.copy(files["whole"], finetune / "finetune.safetensors")
    (finetune / "README.md").write_text("---\nbase_model: someone/tiny-sd15\n---\nA fine-tune.\n")
    install_in_hub_cache(finetune, cache, "someone/finetune", commit=COMMIT)
    return use_hub_cache_offline(monkeypatch, cache)


def test_hub_files_find_their_base_offline(hub_files, files):
    from benchmark.models.text_to_image import plan_settings

    own = plan_settings("hf://someone/tiny-sd15/model.safetensors", device="cpu").model_records["checkpoint"]
    assert (own["id"], own["repo"], own["file"], own["revision"]) == (
        "hf://someone/tiny-sd15/model.safetensors", "someone/tiny-sd15", "model.safetensors", COMMIT)
    assert own["base"] == "someone/tiny-sd15" and own["base_from"] == "the file's own Hub repo"
    url = plan_settings("https://huggingface.co/someone/finetune/blob/main/finetune.safetensors",
                        device="cpu").model_records["checkpoint"]
    assert url["id"] == "hf://someone/finetune/finetune.safetensors" and url["base"] == "someone/tiny-sd15"
    assert url["base_from"] == "base_model of the model card of someone/finetune"
    assert url["sha256"] == file_sha256(files["whole"]) and url["base_revision"] == COMMIT


def _refusals(files, tmp_path):
    lonely = tmp_path / "lonely" / "model.safetensors"
    lonely.parent.mkdir()
    shutil.copy(files["whole"], lonely)
    pickle = tmp_path / "model.ckpt"
    pickle.write_bytes(b"not read")
    sd15, run = files["sd15"], ["run", "--out", tmp_path / "run", "--quiet"]
    return [
        (run + ["--model", lonely], "names no base model: give the diffusers model it fine-tunes with --base"),
        (run + ["--model", pickle], "is a pickle checkpoint, which can run code"),
        (run + ["--model", "hf://org/name/model.bin"], "is a pickle checkpoint, which can run code"),
        (run + ["--model", lonely, "--base", sd15, "--revision", "v1"], "does not apply to a single-file checkpoint"),
        (run + ["--model", sd15, "--base", sd15], "--base names the base of a single-file checkpoint"),
        (run + ["--model", lonely, "--base", tmp_path / "nowhere"], "does not exist"),
        (run + ["--model", "./no-such-file.safetensors", "--base", sd15], "does not exist"),
        (run + ["--model", files["sdxl_unet"], "--base", sd15], "does not fit StableDiffusionPipeline's unet"),
        (run + ["--model", files["whole"], "--base", files["sdxl"]], "StableDiffusionXLPipeline's unet"),
        (run + ["--model", sd15, "--quantize", "bnb:4bit"], "bitsandbytes quantizer runs on cuda, xpu, mps only"),
        (run + ["--model", sd15, "--quantize", "gguf"], "GGUF weights are quantized files"),
        (run + ["--model", sd15, "--quantize", "torchao:int3"], "is not a quantization this loader applies"),
        (run + ["--model", files["whole"], "--base", sd15, "--quantize", "torchao:int8wo"],
         "needs the torchao package" if importlib.util.find_spec("torchao") is None
         else "a whole-pipeline single file is converted as it loads"),
        (run + ["--model", files["gguf"], "--base", sd15, "--quantize", "torchao:int8wo"],
         "needs the torchao package" if importlib.util.find_spec("torchao") is None
         else "a GGUF file is quantized already"),
        (run + ["--model", "builtin:tiny-sd", "--lora-unet-only"], "--lora-unet-only goes with --lora"),
        (run + ["--model", files["gguf"], "--base", sd15, "--lora", files["lora"]],
         "--lora with a GGUF file: a LoRA is fused into the denoiser's weights"),
    ]


def test_each_bad_single_file_or_quantization_is_one_line(files, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for argv, message in _refusals(files, tmp_path):
        code, lines = _run(argv, capsys)
        assert code == 2, (argv, lines)
        assert len(lines) == 1 and message in lines[0], (argv, lines)
        assert not (tmp_path / "run").exists()


@pytest.mark.skipif(importlib.util.find_spec("torchao") is None, reason="torchao is not installed ([quantize] extra)")
def test_torchao_int8_quantizes_the_unet_and_is_recorded(files, base_pixels):
    import torch

    from benchmark.models.text_to_image import load_text_to_image

    model = load_text_to_image(str(files["sd15"]), quantize="torchao:int8wo", device="cpu", **TINY)
    assert {type(m.weight).__name__ for m in model.pipe.unet.modules() if isinstance(m, torch.nn.Linear)} == {
        "Int8Tensor"}
    record = model.quantization
    assert (record["backend"], record["scheme"], record["config"], record["components"]) == (
        "torchao", "int8wo", "Int8WeightOnlyConfig", ["unet"])
    assert model.settings["quantization"] == record
    assert 0 < np.abs(_pixels(model) - base_pixels).mean() < 5  # the same model, rounded weights


def test_a_text_encoder_lora_applies_its_unet_part_alone_on_request(files, tmp_path, capsys):
    """--lora-unet-only: the UNet layers change the images, the text encoders' are skipped and
    counted in the record; without the flag a LoRA whose text-encoder layers cannot load is
    refused in one line naming the flag (never a silent partial load)."""
    import importlib.metadata

    from diffusers import AutoPipelineForText2Image
    from packaging.version import Version
    from transformers.integrations.peft import MIN_PEFT_VERSION

    from benchmark.models.text_to_image import check_text_to_image, load_text_to_image

    lora = make_tiny_lora(AutoPipelineForText2Image.from_pretrained(files["sdxl"]), tmp_path / "te-lora",
                          text_encoders=True)
    base = _pixels(load_text_to_image(str(files["sdxl"]), device="cpu", **TINY))
    model = load_text_to_image(str(files["sdxl"]), loras=[str(lora)], lora_unet_only=True, device="cpu", **TINY)
    (record,) = model.adapters
    assert record["skipped"] == {"text_encoder": 6, "text_encoder_2": 6}  # q, k, v of each encoder's 2 layers
    assert np.abs(_pixels(model) - base).mean() > 1
    assert not any("lora" in name for name, _ in model.pipe.unet.named_parameters())  # fused, then unloaded
    if Version(importlib.metadata.version("peft")) < Version(MIN_PEFT_VERSION):
        with pytest.raises(MalformedSpecError, match="or pass --lora-unet-only to apply its UNet / transformer "
                                                     "layers alone"):
            check_text_to_image(str(files["sdxl"]), device="cpu", loras=[str(lora)])
    unet_lora = make_tiny_lora(AutoPipelineForText2Image.from_pretrained(files["sdxl"]), tmp_path / "unet-lora",
                               text_encoders=False)
    plain = load_text_to_image(str(files["sdxl"]), loras=[str(unet_lora)], lora_unet_only=True, device="cpu", **TINY)
    assert "skipped" not in plain.adapters[0]  # nothing to skip: recorded as a plain LoRA


def test_a_transformer_lora_applies_its_transformer_part_alone_on_request(tmp_path):
    """--lora-unet-only on a transformer pipeline (tiny FLUX.1 schnell): a LoRA of its transformer and
    CLIP text encoder gives, with the flag, exactly the images of its transformer layers loaded alone
    (the same file without the text encoder's layers), changes the images, and counts what it skipped."""
    from diffusers import AutoPipelineForText2Image
    from safetensors import safe_open
    from safetensors.torch import save_file

    from tiny_pipelines import CALL_ARGUMENTS

    from benchmark.models.text_to_image import load_text_to_image

    flux = build_family("flux_schnell", tmp_path / "flux")
    lora = make_tiny_lora(AutoPipelineForText2Image.from_pretrained(flux), tmp_path / "te-lora", text_encoders=True)
    with safe_open(str(lora / "pytorch_lora_weights.safetensors"), "pt") as fh:
        assert {k.split(".")[0] for k in fh.keys()} == {"transformer", "text_encoder"}
        alone = {k: fh.get_tensor(k) for k in fh.keys() if k.startswith("transformer.")}
        metadata = fh.metadata()
    (tmp_path / "transformer-lora").mkdir()
    save_file(alone, str(tmp_path / "transformer-lora" / "pytorch_lora_weights.safetensors"), metadata=metadata)
    call = CALL_ARGUMENTS["flux_schnell"]
    base = _pixels(load_text_to_image(str(flux), device="cpu", **call))
    model = load_text_to_image(str(flux), loras=[str(lora)], lora_unet_only=True, device="cpu", **call)
    (record,) = model.adapters
    assert record["skipped"] == {"text_encoder": 6}  # q, k, v of the encoder's 2 layers
    assert not any("lora" in name for name, _ in model.pipe.transformer.named_parameters())  # fused, unloaded
    pixels = _pixels(model)
    assert np.abs(pixels - base).mean() > 1
    plain = load_text_to_image(str(flux), loras=[str(tmp_path / "transformer-lora")], device="cpu", **call)
    assert np.array_equal(pixels, _pixels(plain))
