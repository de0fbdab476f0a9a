"""Models as people publish them, audited end to end by ``t2ibench run``: a LoRA on a local base
(--lora: images change, the adapter recorded in run_config.json, results.json, the report and the
leaderboard's row key; ``t2ibench compare BASE BASE+LORA`` pairs them), a fine-tune whose card
names ``base_model: stabilityai/sdxl-turbo`` generated at SDXL-Turbo's settings with that source
recorded, and an image-to-image folder refused in preflight. Tiny random-weight models: the
scores are meaningless."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tiny_pipelines import build_family, make_tiny_lora

from benchmark.cli import main
from benchmark.contract.digest import file_sha256
from benchmark.present.text import md_escape

SUITES = ["gep_neutral", "pst_single"]
FAST = ["--set", "num_inference_steps=2", "--set", "height=64", "--set", "width=64", "--n-resamples", "40",
        "--encoder", "builtin:tiny-clip", "--vqa", "builtin:tiny-vqa", "--quiet"]
TURBO = "stabilityai/sdxl-turbo"


def t2ibench(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "benchmark.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=900, env=env)


@pytest.fixture(scope="module")
def base_and_lora(tmp_path_factory):
    from diffusers import AutoPipelineForText2Image

    root = tmp_path_factory.mktemp("lora-audit")
    base = build_family("sd15", root / "base")
    lora = make_tiny_lora(AutoPipelineForText2Image.from_pretrained(base), root / "lora", text_encoders=False)
    return base, lora


def t2ibench_here(*args) -> int:
    """The CLI in this process (exit status): for the audits whose files the tests read, where a
    fresh interpreter per command would only add its start-up; the one-line errors are checked
    in a subprocess (``t2ibench``)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        return main([str(a) for a in args])


@pytest.fixture(scope="module")
def runs(base_and_lora, tmp_path_factory):
    base, lora = base_and_lora
    root = tmp_path_factory.mktemp("runs")
    out = {}
    for name, extra in (("base", []), ("lora", ["--lora", lora])):
        run = root / name
        assert t2ibench_here("run", "--model", base, "--out", run, "--suites", *SUITES, "--limit", "6", *FAST,
                             *extra) == 0
        out[name] = run
    return out


def test_a_lora_changes_the_images_and_is_recorded_everywhere(runs, base_and_lora):
    _, lora = base_and_lora
    sha = file_sha256(lora / "pytorch_lora_weights.safetensors")
    base_png = sorted((runs["base"] / "images").rglob("*.png"))
    lora_png = sorted((runs["lora"] / "images").rglob("*.png"))
    assert len(base_png) == len(lora_png) == 12
    assert sum(a.read_bytes() != b.read_bytes() for a, b in zip(base_png, lora_png)) == 12  # every image changed

    config = json.loads((runs["lora"] / "run_config.json").read_text())
    [adapter] = config["model"]["adapters"]
    assert (adapter["kind"], adapter["sha256"], adapter["scale"]) == ("lora", sha, 1.0)
    assert config["request"]["model"]["adapters"] == [str(lora)]
    assert "adapters" not in json.loads((runs["base"] / "run_config.json").read_text())["model"]

    results = json.loads((runs["lora"] / "results.json").read_text())
    assert results["model"]["adapters"][0]["sha256"] == sha
    assert results["setting_sources"]["num_inference_steps"] == "--set"
    # the base folder has no card and names no base_model: each setting nobody chose says so
    base_results = json.loads((runs["base"] / "results.json").read_text())
    assert base_results["setting_sources"]["guidance_scale"] == "no card row: pipeline default"
    assert "guidance\\_scale=7.5 (no card row: pipeline default)" in (runs["base"] / "report" / "report.md").read_text()
    report = (runs["lora"] / "report" / "report.md").read_text()
    assert adapter["name"] == lora.name  # its folder's name, not pytorch_lora_weights.safetensors
    assert md_escape(f"LoRA {adapter['name']} at scale 1 (sha256 {sha[:12]})") in report
    assert "num\\_inference\\_steps=2 (--set)" in report

    # two rows on the leaderboard: the base and the base with its LoRA
    from submissions.leaderboard.board_model import Submission

    keys = {Submission(json.loads((runs[n] / "results.json").read_text()), n, runs[n] / "results.json", runs[n]).key
            for n in ("base", "lora")}
    assert len(keys) == 2 and any(f"+lora={sha[:16]}x1" in k for k in keys)


def test_compare_pairs_a_base_and_its_lora(runs, tmp_path):
    out = tmp_path / "compare.json"
    assert t2ibench_here("compare", runs["base"], runs["lora"], "--n-resamples", "40", "--out", out, "--quiet") == 0
    doc = json.loads(out.read_text())
    assert [p["kind"] for p in doc["pairings"]] == ["paired by (probe, seed)"], doc["pairings"]
    assert doc["scores"], "no score compared"


def test_a_rerun_with_another_lora_is_refused_naming_the_option(runs, base_and_lora):
    base, _ = base_and_lora
    proc = t2ibench("run", "--model", base, "--out", runs["lora"], "--suites", *SUITES, "--limit", "6", *FAST)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("t2ibench: error: ")
    assert "--lora" in proc.stderr and "(this folder)" in proc.stderr


def test_a_finetune_of_sdxl_turbo_runs_at_its_base_models_settings(tmp_path):
    folder = tmp_path / "my-turbo-finetune"
    shutil.copytree(build_family("sdxl", tmp_path / "sdxl"), folder)
    (folder / "README.md").write_text(f"---\nbase_model: {TURBO}\nlicense: other\n---\n\nA tiny fine-tune.\n")
    run = tmp_path / "run"
    assert t2ibench_here("generate", "--model", folder, "--out", run, "--suites", "gep_neutral", "--limit", "1",
                         "--set", "height=64", "--set", "width=64", "--quiet") == 0
    config = json.loads((run / "run_config.json").read_text())
    assert (config["settings"]["num_inference_steps"], config["settings"]["guidance_scale"]) == (1, 0.0)
    source = config["setting_sources"]["num_inference_steps"]
    assert source.startswith(f"model card of base_model {TURBO}") and config["setting_sources"]["guidance_scale"] == source
    assert config["settings"]["guidance"]["classifier_free"] is False


def test_an_img2img_folder_is_refused_in_preflight(tmp_path):
    folder = tmp_path / "refiner"
    shutil.copytree(build_family("sd15", tmp_path / "sd15"), folder)
    index = json.loads((folder / "model_index.json").read_text())
    index["_class_name"] = "StableDiffusionImg2ImgPipeline"
    (folder / "model_index.json").write_text(json.dumps(index))
    run = tmp_path / "run"
    proc = t2ibench("run", "--model", folder, "--out", run, "--suites", "gep_neutral", "--limit", "1", "--quiet")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("t2ibench: error: ") and "image-to-image" in lines[0], lines
    assert not run.exists()
