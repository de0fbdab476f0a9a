"""The benchmark scripts of bench/ run in their small CPU modes and print well-formed tables.

Speed is never asserted here (the scripts measure it); only that each script exits 0, its
table has the expected rows and columns, and its numbers are finite and positive.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_script(name: str, *args: str, tmp_path: Path, timeout: int = 240) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "T2IBENCH_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / name), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def finite_positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def test_scoring_cpu_small(tmp_path):
    out = tmp_path / "out"
    text = run_script("scoring_cpu.py", "--scale", "0.03", "--n-resamples", "20", "--out", str(out),
                      tmp_path=tmp_path)
    assert "| suite" in text and "seconds" in text and "total" in text
    doc = json.loads((out / "scoring_cpu.json").read_text())
    names = [r["row"] for r in doc["rows"]]
    for suite in ("gep_neutral", "gep_explicit", "dalleval_bias", "pst_paired_occupation", "mcas_targets",
                  "paintskills_count"):
        assert suite in names and suite in text
    assert names[-1] == "total"
    total = doc["rows"][-1]
    assert finite_positive(total["seconds"]) and total["images"] == doc["n_images"] > 0
    assert all(math.isfinite(r["seconds"]) and r["seconds"] >= 0 for r in doc["rows"])
    scored = [r for r in doc["rows"] if r["status"] == "scored"]
    assert len(scored) >= 9 and all(finite_positive(r["seconds"]) for r in scored if r["scores"])
    # the label files a full audit has, all written, every suite scored
    from benchmark.runner.annotate import LABEL_FILES

    assert set(doc["label_rows"]) == {spec.relpath for spec in LABEL_FILES.values()}
    assert {r["row"] for r in doc["rows"] if r["status"] == "scored"} >= {"paintskills_object", "paintskills_spatial"}


def test_scoring_cpu_rejects_bad_scale(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "scoring_cpu.py"), "--scale", "0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--scale must be positive" in proc.stderr


def test_runner_overhead_small(tmp_path):
    out = tmp_path / "out"
    text = run_script("runner_overhead.py", "--n-images", "2", "--batch-size", "2", "--sizes", "32", "--repeats", "1",
                      "--rounds", "1", "--threads", "2", "--simulate", "64", "0.01", "--out", str(out),
                      tmp_path=tmp_path)
    doc = json.loads((out / "runner_overhead.json").read_text())
    steps = {r["step"].strip(): r for r in doc["rows"]}
    for key in ("bare pipeline calls", "runner: model calls (generate stage)", "of which PNG encode",
                "of which sha256", "runner: total wall"):
        assert key in steps and key in text
        assert finite_positive(steps[key]["ms_per_image"])
    assert math.isfinite(steps["runner overhead (total - bare)"]["ms_per_image"])
    assert [r["size"] for r in doc["png"]] and all(finite_positive(r["png_ms"]) for r in doc["png"])
    assert "PNG ms" in text and "sha256 ms" in text
    assert [r["writes"].split()[0] for r in doc["overlap"]] == ["inline", "background"]
    assert all(finite_positive(r["images_per_s"]) and 0 < r["accelerator_busy_percent"] <= 100.5
               for r in doc["overlap"])


@pytest.mark.parametrize("models", [["sd15", "sdxl", "clip"]])
def test_generation_tiny(tmp_path, models):
    out = tmp_path / "out"
    text = run_script("generation.py", "--tiny", "--models", *models, "--configs", "runner,batch1-fp16,sdpa",
                      "--n-images", "1", "--steps", "1", "--clip-images", "4", "--peak-tflops", "1",
                      "--out", str(out), tmp_path=tmp_path)
    doc = json.loads((out / "generation.json").read_text())
    for col in ("images/s", "s/image", "peak GiB", "% of floor", "vs batch1-fp16"):
        assert col in text
    assert "torch" in text and "diffusers" in text
    rows = doc["rows"]
    assert not [r for r in rows if r["error"]], [r["error"] for r in rows if r["error"]]
    got = {(r["model"], r["config"]) for r in rows}
    for m in ("sd15", "sdxl"):
        for c in ("runner", "batch1-fp16", "sdpa"):
            assert (m, c) in got
        assert finite_positive(doc["floors"][m]["per_image"]) and finite_positive(doc["floors"][m]["floor_images_per_s"])
    assert {("clip", "clip-pil"), ("clip", "clip-tensor")} <= got
    for r in rows:
        assert finite_positive(r["images_per_s"]) and finite_positive(r["seconds"]) and r["images"] >= 1
        assert finite_positive(r["pct_of_floor"])
        if r["model"] != "clip":
            assert finite_positive(r["speedup"])


def test_generation_flops_of_published_sd15_config():
    """The floor arithmetic on the real SD 1.5 config (meta device, no weights): its PNDM
    scheduler makes 51 UNet evaluations for 50 steps, about 84.5 TFLOP per image."""
    sys.path.insert(0, str(ROOT))
    from bench.generation import flops_per_image, load_config

    f = flops_per_image(load_config("sd15"), steps=50)
    assert f["steps"] == 50 and f["unet_evaluations"] == 51
    assert f["per_image"] == pytest.approx(f["unet_forward"] * 2 * 51 + f["vae_decode"] + f["text"] * 2)
    assert 84e12 < f["per_image"] < 85e12  # 0.80 TFLOP UNet x 2 x 51 + 2.5 TFLOP VAE
    assert 0.7e12 < f["unet_forward"] < 0.9e12 and 2e12 < f["vae_decode"] < 3e12


@pytest.mark.parametrize("model, steps, evaluations", [("sd15", 2, 3), ("sd2", 2, 2), ("sdxl", 2, 2)])
def test_unet_evaluations_are_the_pipelines_own(tmp_path, model, steps, evaluations):
    """The count the floor uses equals the UNet calls a real pipeline makes (a hook on the
    UNet of the tiny version of each published config, same scheduler)."""
    sys.path.insert(0, str(ROOT))
    import diffusers
    import torch

    from bench.generation import build_pipeline_folder, load_config, tiny_config, unet_evaluations

    cfg = tiny_config(load_config(model))
    assert unet_evaluations(cfg, steps) == evaluations
    folder = build_pipeline_folder(cfg, tmp_path / model, "cpu")
    pipe = diffusers.DiffusionPipeline.from_pretrained(folder)
    calls = []
    pipe.unet.register_forward_hook(lambda mod, args, out: calls.append(1))
    with torch.no_grad():
        pipe(prompt="a photo", num_inference_steps=steps, guidance_scale=7.5, output_type="latent",
             generator=torch.Generator().manual_seed(0), height=64, width=64)
    assert len(calls) == evaluations


def test_generation_rejects_gpu_without_gpu(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "generation.py"), "--device", "cuda"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "no CUDA GPU" in proc.stderr
