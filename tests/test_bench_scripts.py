"""The benchmark scripts of bench/ run in their small CPU modes and print well-formed tables.

Speed is never asserted here (the scripts measure it); only that each script exits 0, its
table has the expected rows and columns, and its numbers are finite and positive.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_here import exit_status

ROOT = Path(__file__).resolve().parents[1]


def run_script(name: str, *args: str, tmp_path: Path, timeout: int = 240, cache: Path | None = None) -> str:
    """``bench/NAME ARGS`` in a fresh Python; its built-in tiny models cached in ``cache`` (the
    session's, conftest's ``cache`` fixture: built once, loaded back) or in the test's own folder."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "T2IBENCH_CACHE": str(cache or tmp_path / "cache"),
           "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / name), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def refusal(name: str, *args: str, capsys) -> tuple[int, str]:
    """(exit status, stderr) of ``bench/NAME ARGS`` refusing its arguments: the script's main() in
    this process (its usage errors come before any work; a fresh Python per case cost 2-4 s of
    imports). argparse's errors exit through SystemExit, the script's own return 2."""
    sys.path.insert(0, str(ROOT))
    main = importlib.import_module(f"bench.{name.removesuffix('.py')}").main
    return exit_status(args, main), capsys.readouterr().err


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


def test_human_correction_small(tmp_path):
    out = tmp_path / "out"
    text = run_script("human_correction.py", "--reps", "20", "--n-resamples", "40", "--quick", "--plan-reps", "10",
                      "--out", str(out), tmp_path=tmp_path)
    assert "| 8 groups of 250 | share | photo | 50 of 2000 |" in text and "| mad | painting | 200 of 2000 |" in text
    assert "runs' own resample plan" in text
    doc = json.loads((out / "human_correction.json").read_text())
    assert len(doc["rows"]) == 8 and len(doc["plan_check"]) == 2
    for row in doc["rows"] + doc["plan_check"]:
        cov = row.get("corrected_coverage")
        assert cov is None or 0 <= cov <= 1
        assert row["not_enough"] == (row["reps"] if row["statistic"] == "mad" and row["n_human"] == 50 else 0)


def test_scoring_cpu_rejects_bad_scale(capsys):
    code, err = refusal("scoring_cpu.py", "--scale", "0", capsys=capsys)
    assert code == 2 and "--scale must be positive" in err


def test_runner_overhead_small(tmp_path, cache):
    out = tmp_path / "out"
    text = run_script("runner_overhead.py", "--n-images", "2", "--batch-size", "2", "--sizes", "32", "--repeats", "1",
                      "--rounds", "1", "--threads", "2", "--simulate", "64", "0.01", "--simulate-images", "4",
                      "--out", str(out), tmp_path=tmp_path, cache=cache)
    doc = json.loads((out / "runner_overhead.json").read_text())
    steps = {r["step"].strip(): r for r in doc["rows"]}
    for key in ("bare pipeline calls", "runner: model calls (generate stage)", "of which PNG encode",
                "of which sha256", "runner: total wall"):
        assert key in steps and key in text
        assert finite_positive(steps[key]["ms_per_image"])
    assert math.isfinite(steps["runner overhead (total - bare)"]["ms_per_image"])
    assert [r["size"] for r in doc["png"]] and all(finite_positive(r["png_ms"]) for r in doc["png"])
    assert "PNG ms" in text and "sha256 ms" in text and "check ms" in text
    checked = [r for r in doc["png"] if r["image"] != "photos"]
    assert checked and all(finite_positive(r["check_ms"]) for r in checked)
    # the writer before this change, the encoder pool at zlib 6 and 1, the runner's default; side by side
    writers = [r["writes"] for r in doc["overlap"]]
    assert len(writers) == 4 and writers[0].startswith("before") and writers[3].endswith("Z_RLE (runner default)")
    assert {r["size"] for r in doc["overlap"]} == {64} and "busy (call)" in text and "busy (loop)" in text
    assert all(finite_positive(r["images_per_s"]) and 0 < r["accelerator_busy_percent"] <= r["loop_busy_percent"]
               <= 100.5 and finite_positive(r["write_stage_s"]) for r in doc["overlap"])
    assert {r["png"] for r in doc["png"]} == {"zlib 1", "zlib 6 (PIL default; before)", "Z_RLE (runner)"}
    assert {r["image"] for r in doc["png"]} == {"photo 1", "photo 2", "smooth", "noise", "flat", "photos"}
    assert {r["threads"] for r in doc["png"]} == {1, 2}
    assert "load average" in doc["header"]


def test_startup_time_small(tmp_path):
    out = tmp_path / "out"
    text = run_script("startup_time.py", "--commands", "scores", "--repeats", "1", "--out", str(out), tmp_path=tmp_path)
    doc = json.loads((out / "startup_time.json").read_text())
    [row] = doc["rows"]
    assert row["command"] == "scores" and "| scores" in text and "load average" in doc["header"]
    for setting in ("frozen", "as-is"):
        assert all(finite_positive(row[f"{setting}_{k}"]) for k in ("wall_s", "cpu_s", "peak_rss_mb"))
    assert finite_positive(row["cpu_ratio"]) and finite_positive(row["wall_ratio"])


def test_runner_overhead_simulate_only(tmp_path):
    out = tmp_path / "out"
    text = run_script("runner_overhead.py", "--simulate-only", "--simulate-images", "4", "--batch-size", "2",
                      "--rounds", "1", "--simulate", "32", "0.005", "--simulate", "48", "0.005", "--out", str(out),
                      tmp_path=tmp_path)
    doc = json.loads((out / "runner_overhead.json").read_text())
    assert [r["size"] for r in doc["overlap"]] == [32] * 4 + [48] * 4
    assert doc["rows"] == [] and doc["png"] == [] and "PNG ms" not in text
    assert doc["simulate_images"] == 4 and "(4 images, batch 2;" in text


@pytest.mark.parametrize("models", [["sd15", "sdxl", "flux-dev", "sd35-medium", "clip"]])
def test_generation_tiny(tmp_path, models):
    out = tmp_path / "out"
    text = run_script("generation.py", "--tiny", "--models", *models, "--configs",
                      "runner,runner-no-compile,runner-batch4,batch1-fp16,sdpa,fused-qkv",
                      "--n-images", "1", "--steps", "1", "--clip-images", "4", "--peak-tflops", "1",
                      "--out", str(out), tmp_path=tmp_path)
    doc = json.loads((out / "generation.json").read_text())
    for col in ("images/s", "s/image", "peak GiB", "% of floor", "vs batch1-fp16", "denoiser fwd GFLOP/img",
                "denoiser evals", "guidance batch"):
        assert col in text
    assert "UNet fwd" not in text and "UNet evals" not in text
    assert "torch" in text and "diffusers" in text
    rows = doc["rows"]
    assert not [r for r in rows if r["error"]], [r["error"] for r in rows if r["error"]]
    got = {(r["model"], r["config"]) for r in rows}
    for m in ("sd15", "sdxl"):
        for c in ("runner", "runner-no-compile", "runner-batch4", "batch1-fp16", "sdpa", "fused-qkv"):
            assert (m, c) in got
        assert finite_positive(doc["floors"][m]["per_image"]) and finite_positive(doc["floors"][m]["floor_images_per_s"])
    # the diffusion transformers: built in memory (no folder), two plain bf16 rows each, then the
    # runner's default path around the same pipeline (auto batch: 4 on a CPU, uncompiled there)
    for m in ("flux-dev", "sd35-medium"):
        assert [r["config"] for r in rows if r["model"] == m] == ["batch1-bf16", "batched-bf16", "runner"]
        assert [r["batch"] for r in rows if r["model"] == m] == [1, 2, 4] and f"| {m} | batch1-bf16 |" in text
        assert all(r["dtype"] == "bfloat16" for r in rows if r["model"] == m)
        runner = next(r for r in rows if r["model"] == m and r["config"] == "runner")
        assert runner["images"] == 4 and runner["extra"]["speed"] == {} and "auto batch" in runner["note"]
        assert runner["extra"]["batch_size_auto"]["rule"].startswith("auto: 4")
    # their floors: one transformer forward per step for FLUX.1-dev (guidance is an embedding),
    # two (classifier-free guidance, the batch doubled) for SD 3.5; 1 step asked for
    for m, g in (("flux-dev", 1), ("sd35-medium", 2)):
        f = doc["floors"][m]
        assert f["steps"] == 1 and f["guidance_batch"] == g and f["denoiser_evaluations"] == 1
        assert f["per_image"] == pytest.approx(f["denoiser_forward"] * g * f["denoiser_evaluations"] + f["vae_decode"]
                                               + f["text"] * g)
        assert finite_positive(f["denoiser_forward"]) and finite_positive(f["text"])
    assert {("clip", "clip-pil"), ("clip", "clip-annotate"), ("clip", "clip-tensor")} <= got
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
    assert f["steps"] == 50 and f["denoiser_evaluations"] == 51 and f["guidance_batch"] == 2
    assert f["per_image"] == pytest.approx(f["denoiser_forward"] * 2 * 51 + f["vae_decode"] + f["text"] * 2)
    assert 84e12 < f["per_image"] < 85e12  # 0.80 TFLOP UNet x 2 x 51 + 2.5 TFLOP VAE
    assert 0.7e12 < f["denoiser_forward"] < 0.9e12 and 2e12 < f["vae_decode"] < 3e12


@pytest.mark.parametrize("model, steps, evaluations, batch", [("sd15", 2, 3, 2), ("sd2", 2, 2, 2), ("sdxl", 2, 2, 2),
                                                              ("flux-dev", 3, 3, 1), ("sd35-medium", 2, 2, 2)])
def test_denoiser_evaluations_are_the_pipelines_own(tmp_path, model, steps, evaluations, batch):
    """The count the floor uses equals the denoiser calls a real pipeline makes, at the batch
    it uses (a hook on the UNet / transformer of the tiny version of each published config,
    same scheduler; FLUX.1-dev: its own sigmas and dynamic shift, one latent per image, the
    guidance an embedding; SD 3.5: classifier-free, two), from a folder saved and loaded back."""
    sys.path.insert(0, str(ROOT))
    import diffusers
    import torch

    from bench.generation import build_pipeline_folder, denoiser_evaluations, guidance_batch, load_config, tiny_config

    cfg = tiny_config(load_config(model))
    assert denoiser_evaluations(cfg, steps) == evaluations and guidance_batch(cfg) == batch
    folder = build_pipeline_folder(cfg, tmp_path / model, "cpu")
    pipe = diffusers.DiffusionPipeline.from_pretrained(folder)
    assert type(pipe).__name__ == cfg["pipeline"]
    denoiser = pipe.transformer if "transformer" in cfg else pipe.unet
    batches = []
    denoiser.register_forward_hook(lambda mod, args, kwargs, out: batches.append(
        (args[0] if args else kwargs["hidden_states"]).shape[0]), with_kwargs=True)
    extra = {"max_sequence_length": cfg["max_sequence_length"]} if "max_sequence_length" in cfg else {}
    with torch.no_grad():
        pipe(prompt="a photo", num_inference_steps=steps, guidance_scale=cfg.get("guidance_scale", 7.5),
             output_type="latent", generator=torch.Generator().manual_seed(0), height=64, width=64, **extra)
    assert batches == [batch] * evaluations


def test_generation_flops_of_published_dit_configs():
    """FLUX.1-dev and SD 3.5 Medium at their real sizes (meta device): FLUX's 28 steps are 28
    forwards of one latent (~74 TFLOP each: 19 double- + 38 single-stream blocks over 4,096 image
    + 512 text tokens), SD 3.5's 40 steps 40 forwards of two (~11 TFLOP per latent)."""
    sys.path.insert(0, str(ROOT))
    from bench.generation import flops_per_image, load_config

    flux = flops_per_image(load_config("flux-dev"), steps=28)
    assert flux["denoiser_evaluations"] == 28 and flux["guidance_batch"] == 1
    assert flux["per_image"] == pytest.approx(flux["denoiser_forward"] * 28 + flux["vae_decode"] + flux["text"])
    assert 70e12 < flux["denoiser_forward"] < 80e12 and 2.0e15 < flux["per_image"] < 2.2e15
    assert 4.5e12 < flux["text"] < 5.5e12  # T5-XXL at 512 tokens (~4.7 TFLOP) + CLIP-L at 77
    sd35 = flops_per_image(load_config("sd35-medium"), steps=40)
    assert sd35["denoiser_evaluations"] == 40 and sd35["guidance_batch"] == 2
    assert sd35["per_image"] == pytest.approx(sd35["denoiser_forward"] * 2 * 40 + sd35["vae_decode"] + sd35["text"] * 2)
    assert 10e12 < sd35["denoiser_forward"] < 12.5e12 and 0.85e15 < sd35["per_image"] < 1.0e15


def test_generation_rejects_gpu_without_gpu(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    code, err = refusal("generation.py", "--device", "cuda", capsys=capsys)
    assert code == 2 and "no CUDA GPU" in err


def test_annotation_this_tree_only(tmp_path):
    """The annotation benchmark on a tiny run of this tree alone (--no-before: no git history
    needed): every suite annotated, the counters and the table well formed."""
    out = tmp_path / "out"
    text = run_script("annotation.py", "--no-before", "--limit", "1", "--image-size", "48", "--threads", "1",
                      "--repeats", "2", "--out", str(out), tmp_path=tmp_path, timeout=400)
    doc = json.loads((out / "annotation.json").read_text())
    assert (out / "annotation.md").read_text().strip() == text.strip()
    env = doc["environment"]
    assert env["cpu_cores"] >= 1 and env["threads"] == 1 and env["image_size"] == 48
    assert env["versions"]["torch"] in text and env["versions"]["transformers"] in text
    sys.path.insert(0, str(ROOT))
    from bench.annotation import SUITES

    assert env["images_per_suite"] == {s: 1 for s in SUITES} and env["n_images"] == len(SUITES)
    after = doc["figures"]["after"]
    assert "before" not in doc["figures"] and "| before" not in text
    # real work was counted through the libraries: VQA images (DALL-Eval + PST answer VQA
    # questions, one image per suite here), CLIP, detector (PaintSkills), PNGs
    vqa_suites = [s for s in SUITES if s.startswith(("dalleval", "pst"))]
    assert after["n_images"] == len(SUITES) and after["vqa_images"] == len(vqa_suites)
    assert after["vqa_items"] > after["vqa_images"]  # several questions per image
    assert after["lm"]["calls"] >= 1 and after["lm_sequences"] >= after["vqa_items"]
    assert after["clip_image_rows"] >= len(vqa_suites) and after["detector_rows"] >= 3
    # this tree decodes each PNG once (on the worker thread) and encodes each VQA image once
    assert after["png_decodes"] == after["png_unique"] == after["n_images"] == after["png_on_worker"]
    assert after["vision_rows"] == after["vqa_images"] and after["lm_batch_1_pending"] == 0
    assert finite_positive(after["wall_s"]) and finite_positive(after["model_s"]) and after["model_s"] < after["wall_s"]
    assert math.isclose(after["host_s"], after["wall_s"] - after["model_s"])
    assert after["repeats"] == 2 and after["host_ms_range"][0] <= after["host_ms_per_image"] <= after["host_ms_range"][1]
    assert "min - max of 2 runs" in text
    # the second folder, twice --limit: the per-extra-image rows
    m = after["marginal"]
    assert m["from"] == len(SUITES) and m["to"] == 2 * len(SUITES)
    assert all(math.isfinite(m[k]) for k in ("wall_ms_per_image", "model_ms_per_image", "host_ms_per_image"))
    # the printed table shows the measured figures
    printed = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in text.splitlines()
               if line.startswith("|")}
    assert printed["PNG decodes"] == f"{after['png_decodes']:,}" and printed["PNG decodes per image"] == "1.00"
    assert printed["VQA vision-encoder passes (images)"] == f"{after['vision_rows']:,}"
    assert printed["stage wall time, s"] == f"{after['wall_s']:.2f}"
    assert f"synthetic run: {len(SUITES)} images of 48 px" in text
    # the table: one row per metric, a header row and a rule, the "after" column only
    table = [line for line in text.splitlines() if line.startswith("|")]
    assert table[0].split("|")[2].strip() == "after" and set(table[1]) <= set("|-:")
    assert all(line.count("|") == 3 for line in table)
    metrics = [r["metric"] for r in doc["rows"]]
    for m in ("VQA vision passes per VQA image", "VQA LM calls at batch 1", "PNG decodes per image",
              "stage wall time, s", "model time, s", "host time per image, ms"):
        assert m in metrics and m in text
    assert any(m.startswith("images/s vqa_gender") for m in metrics)
    assert any(m.startswith("images/s detections") for m in metrics)
    # four targets and the per-extra-image one, each met / NOT met / not measured
    assert len(doc["targets"]) == 5 and text.count("target: ") == 5
    assert all(t["met"] in (True, False, None) for t in doc["targets"])
    assert [t["met"] for t in doc["targets"]] == [True, True, True, None, None]  # no before run: no host gain


def test_annotation_pending_batch_1_rule():
    sys.path.insert(0, str(ROOT))
    from bench.annotation import pending_batch_1

    assert pending_batch_1([]) == 0
    assert pending_batch_1([1]) == 0            # the stage's only sequence
    assert pending_batch_1([4, 1]) == 0         # the last sequence, nothing else pending
    assert pending_batch_1([1, 4]) == 1         # four more were pending
    assert pending_batch_1([1, 1, 1]) == 2
    assert pending_batch_1([3, 1, 2, 1]) == 1


@pytest.mark.parametrize("args, message", [(["--limit", "0"], "--limit must be >= 1"),
                                           (["--before-ref", "no-such-ref-x"], "is not a commit")])
def test_annotation_rejects_bad_input(args, message, capsys):
    code, err = refusal("annotation.py", *args, capsys=capsys)
    assert code == 2 and message in err
    assert "Traceback" not in err


def test_full_audit_tiny(tmp_path):
    """bench/full_audit.py on tiny configs: the real `t2ibench run` over one image of every
    suite with every default annotator built from bench/configs (shrunk); the table has a row
    per stage and per annotator and a finite projection (never a speed)."""
    out = tmp_path / "out"
    text = run_script("full_audit.py", "--tiny", "--images", "13", "--out", str(out), tmp_path=tmp_path, timeout=900)
    doc = json.loads((out / "full_audit.json").read_text())
    assert "RANDOM WEIGHTS" in text and "projected full audit (15,129 images" in text
    assert (out / "full_audit.md").read_text().strip() == text.strip()
    audit = doc["audit"]
    assert audit["n_full"] == 15129 and audit["limit"] == 1 and audit["n_images"] == 13
    assert audit["batch_size"] == 4 and audit["compile"] is False and audit["peak_gib"] is None
    stages = [r["stage"] for r in doc["rows"]]
    assert "generate/batches (wall)" in stages and "generate/load model" in stages
    assert {"annotate (stage)", "score", "report"} <= set(stages)
    annotators = [s for s in stages if s.startswith("annotate/") and "[" in s]
    # GEP's CLIP, the six Generated Bias CLIPs, the VQA and the detector each have a row
    assert len([s for s in annotators if "embed_images" in s or "mcas" in s or "clip" in s]) >= 7, stages
    assert any("vqa" in s for s in annotators) and any("detections" in s for s in annotators), stages
    for r in doc["rows"]:
        assert r["seconds"] >= 0 and math.isfinite(r["projected_full_s"])
        if r["images"]:
            assert r["s_per_image"] is not None and r["s_per_image"] >= 0
    assert finite_positive(doc["projected_total_s"])
    assert all(w >= 1 for w in audit["annotator_kinds_per_suite"].values())


def run_gpu_check(tmp_path: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """bench/gpu_check.sh with this interpreter first on PATH (the script calls python3)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "T2IBENCH_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1",
           "OUT": str(tmp_path / "out"), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", str(ROOT / "bench" / "gpu_check.sh"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_gpu_check_cpu_dry_path(tmp_path):
    """`gpu_check.sh --cpu`: the `modes` part at tiny sizes (the compile-modes / compile-vae rows on
    the runner's path at a static batch of 2, each compared with mode default's images; nothing is
    compiled on a CPU, so all are identical), then a part whose budget passes the deadline, not
    started and named with the command that runs it; the summary has the date, device, versions,
    the rows and the targets (never met on a CPU)."""
    proc = run_gpu_check(tmp_path, "--cpu", "modes", "dit", "--budget", "dit=99999", "--deadline-s", "600")
    assert proc.returncode == 1, proc.stderr[-3000:]  # not every part ran
    doc = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    text = (tmp_path / "out" / "gpu_check.md").read_text()
    assert [p["status"] for p in doc["parts"]][0] == "ok" and doc["parts"][1]["status"].startswith("not started")
    assert "Not run or not finished: `bash bench/gpu_check.sh dit`" in text and "CPU DRY RUN" in text
    assert doc["cpu"] is True and doc["device"].startswith("CPU") and doc["versions"]["diffusers"] != "missing"
    assert doc["date"][:4].isdigit() and doc["date"] in text
    generation = doc["parts"][0]["outputs"]["generation"]
    assert generation["complete"] is True
    rows = [r for r in generation["rows"] if r["config"] in ("compile-modes", "compile-vae")]
    assert not [r["error"] for r in rows if r["error"]]
    # compile-modes first: mode default is its first row, the reference of every row, measured once
    assert [r["note"].split(";")[0] for r in rows] == ["default", "reduce-overhead", "max-autotune-no-cudagraphs",
                                                       "default + VAE decoder", "reduce-overhead + VAE decoder"]
    for r in rows:
        assert r["batch"] == 2 and r["images"] == 2 and finite_positive(r["images_per_s"])
        assert r["extra"]["vs_default"] == {"identical": True, "images_compared": 2, "images_differing": 0,
                                            "max_abs_diff": 0}
        assert "images vs mode default: identical" in r["note"] and "CPU: not compiled" in r["note"]
    assert "| modes | sd15 | compile-vae | 2 |" in text
    assert [t["met"] for t in doc["targets"]] == [None] * 4 and text.count("not measured") == 4
    assert (tmp_path / "out" / "modes.log").read_text().strip()


def test_gpu_check_budget_stops_a_part(tmp_path):
    proc = run_gpu_check(tmp_path, "--cpu", "sd15", "--budget", "sd15=2", timeout=120)
    assert proc.returncode == 1
    part = json.loads((tmp_path / "out" / "gpu_check.json").read_text())["parts"][0]
    assert part["status"] == "timed out" and part["seconds"] < 60
    bad = run_gpu_check(tmp_path, "--cpu", "nonsense", timeout=60)
    assert bad.returncode == 2 and "unknown part 'nonsense'" in bad.stderr


def test_gpu_check_gpu_commands_name_only_known_options():
    """Every option a part passes its script on a GPU is one the script's parser knows: a misspelt
    flag would only show on a lent GPU, after minutes of its short lease (its CPU path is another
    argv)."""
    sys.path.insert(0, str(ROOT))
    from bench.gpu_check import PARTS

    helps = {}
    for part in PARTS:
        script = part.gpu[0]
        if script not in helps:
            proc = subprocess.run([sys.executable, str(ROOT / script), "--help"], cwd=ROOT, capture_output=True,
                                  text=True, timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})
            assert proc.returncode == 0, proc.stderr[-2000:]
            helps[script] = proc.stdout
        flags = [a for a in part.gpu[1:] if a.startswith("--")]
        assert flags and all(f in helps[script] for f in flags), (part.name, flags)
    assert "--runner-batches" in next(p for p in PARTS if p.name == "sdxl").gpu


def test_gpu_check_targets_verdicts():
    """The verdicts the summary prints, on figures as a GPU run would write them."""
    sys.path.insert(0, str(ROOT))
    from bench.gpu_check import targets

    def gen(part, *rows):
        return {"part": part, "outputs": {"generation": {"rows": [dict(r, error=None) for r in rows]}}}

    compiled = {"speed": {"compiled": ["transformer"]}}
    results = [gen("sd15", {"model": "sd15", "config": "runner", "images_per_s": 4.6, "pct_of_floor": 39.3}),
               gen("dit", {"model": "flux-dev", "config": "runner", "images_per_s": 0.21, "pct_of_floor": 44.6,
                           "extra": compiled},
                   {"model": "sd35-medium", "config": "runner", "images_per_s": 0.4, "pct_of_floor": 37.0,
                    "extra": {"speed": {"compiled": []}}}),
               {"part": "full-audit", "outputs": {"full_audit": {"projected_total_s": 3500.0,
                                                                 "audit": {"n_images": 1008}}}}]
    assert [t["met"] for t in targets(results, cpu=False)] == [True, True, False, True]
    results[0]["outputs"]["generation"]["rows"][0]["pct_of_floor"] = 37.9
    results[2]["outputs"]["full_audit"]["projected_total_s"] = 3700.0
    assert [t["met"] for t in targets(results, cpu=False)] == [False, True, False, False]
    assert [t["met"] for t in targets(results[:1], cpu=False)] == [False, None, None, None]
    assert [t["met"] for t in targets(results, cpu=True)] == [None] * 4


def test_generation_compare_images():
    """The compile-mode rows' verdict against mode default's images: identical, how many differ
    and by how many grey levels, or nothing to compare with."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from bench.generation import compare_images

    ref = {"a": np.zeros((4, 4, 3), np.int16), "b": np.full((4, 4, 3), 9, np.int16)}
    assert compare_images(dict(ref), ref) == {"identical": True, "images_compared": 2, "images_differing": 0,
                                              "max_abs_diff": 0}
    moved = {"a": ref["a"].copy(), "b": ref["b"].copy()}
    moved["b"][1, 2, 0] = 12
    assert compare_images(moved, ref) == {"identical": False, "images_compared": 2, "images_differing": 1,
                                          "max_abs_diff": 3}
    assert compare_images(moved, None)["identical"] is None


def test_compare_calibration_records_what_made_it(tmp_path):
    """The calibration bench on two null pairs at two images per prompt: the table it prints is the
    one it writes, and its JSON says what made it (the command, the date, the checkout's commit:
    bench/measured/ keeps runs of many commits, which docs/compare.md pools)."""
    out = tmp_path / "out"
    text = run_script("compare_calibration.py", "--null-reps", "2", "--power-reps", "0", "--pilots", "0",
                      "--sizes", "2", "--out", str(out), tmp_path=tmp_path)
    doc = json.loads((out / "compare_calibration.json").read_text())
    assert (out / "compare_calibration.md").read_text().strip() == text.strip()
    assert doc["command"] == f"python bench/compare_calibration.py --null-reps 2 --power-reps 0 --pilots 0 " \
                             f"--sizes 2 --out {out}"
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    assert (doc["commit"] or "").split(" + ")[0] == head  # None outside a git checkout, as head is ""
    assert {r["size"] for r in doc["null"]} == {"2 per prompt"} and all(r["n"] == 2 for r in doc["null"])
    assert not doc["power"] and not doc["pilot"]


def test_compare_calibration_keeps_a_power_sizes_steps_until_written(tmp_path, capsys):
    """bench/compare_calibration.py's progress file: each step a power size finishes is kept (and
    the MDD simulations recorded up to the null comparisons' end, beside it); a process begun again
    takes them back with the seconds worked; a file begun by another run (other seed) is refused
    before any work, one line and exit 1; written, the files go."""
    sys.path.insert(0, str(ROOT))
    from bench.compare_calibration import PowerProgress
    from bench.power_lean import Recording

    run = {"commit": "abc", "seed": 1, "power_reps": 100}
    first, recording = PowerProgress(tmp_path, "recipe", run), Recording()
    first.recording = recording
    unsigned = (np.full(48, np.nan), np.full((48, 3), np.nan))  # a score not judged by its distance from an ideal
    recording.simulated.append(((0.03, 0.01), False, np.arange(7.0), np.ones(9), np.arange(48) // 4, *unsigned))
    first["null"] = [{"key": ["gep_score_neutral"], "rows": [{"mdd": 0.02}]}]
    recording.simulated.append(((0.5, 0.1), False, np.zeros(7), np.zeros(9), np.arange(48) // 4, *unsigned))  # not kept
    first["row gep_score_neutral"] = {"mdd": 0.02, "rate": 0.8}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["progress-power-recipe.json", "progress-power-recipe.npz"]
    again = PowerProgress(tmp_path, "recipe", run)
    assert again.taken_back == ["null", "row gep_score_neutral"] and again["row gep_score_neutral"]["rate"] == 0.8
    assert again.seconds() >= json.loads(first.path.read_text())["seconds"]
    kept = again.simulated()
    assert len(kept["q"]) == 1 and kept["critical"].tolist() == [[0.03, 0.01]]
    status, err = refusal("compare_calibration.py", "--null-reps", "0", "--pilots", "0", "--power-sizes", "recipe",
                          "--power-reps", "100", "--seed", "2", "--out", str(tmp_path), capsys=capsys)
    assert status == 1 and "progress-power-recipe.json was begun by another run" in err and "seed 1 then, 2 now" in err
    assert len(err.strip().splitlines()) == 1
    again.remove()
    assert not list(tmp_path.iterdir())


def _power_lean_run(folder: Path, mdd_shift: float = 0.0, reading: str | None = None) -> float:
    """A run folder made by hand: three null comparisons simulated (q and swaps of known spread) and
    recorded by bench/power_lean.py's ``recorded_simulations``, the power row planting their median
    MDD (printed with ``reading``: a compare_calibration.json that records it; None: a
    power_lean.json of a run before runs recorded it), 100 changed comparisons with q ~ N(MDD, 0.01)
    against thresholds about 0.03. Returns the change they find in 80%."""
    sys.path.insert(0, str(ROOT))
    import benchmark.runner.planning as planning
    from bench.power_lean import recorded_simulations

    rng = np.random.default_rng(0)
    grid = np.asarray(planning.MDD_GRID)
    nulls = []
    with recorded_simulations() as recording:
        for i in range(3):
            q = (0.1 * grid + 0.01 * rng.standard_normal((48, 1))).astype(np.float32).astype(float)
            swaps = (0.01 * rng.standard_normal((48, 1)) * np.ones(len(planning.SWAP_GRID))).astype(np.float32)
            critical = (0.03 + 0.001 * i, 0.01)
            found = planning._change_found(q, swaps.astype(float), critical, 0.8, 24, groups=np.arange(48) // 4,
                                           reading=reading)
            nulls.append({"mdd": found["mdd"] + mdd_shift, "critical": critical[0], "se": critical[1]})
    arrays = recording.arrays()
    assert len(arrays["q"]) == 3 and arrays["q"].dtype == np.float32
    mdd = float(np.median([n["mdd"] for n in nulls]))
    tested, thresholds = mdd + 0.01 * rng.standard_normal(100), 0.03 + 0.001 * rng.standard_normal(100)
    row = {"size": "--limit 504", "score": "gep_score_neutral", "suite": "gep_neutral", "subset": None,
           "estimator": "C", "mdd": mdd, "n": 100, "null_comparisons": nulls,
           "comparisons": {"tested": list(tested), "threshold": list(thresholds), "threshold_first": list(thresholds)}}
    folder.mkdir()
    if reading is None:
        (folder / "power_lean.json").write_text(json.dumps({"commit": "test", "power": [row]}))
    else:
        (folder / "compare_calibration.json").write_text(json.dumps({"commit": "test", "mdd_reading": reading,
                                                                      "power": [row]}))
    np.savez_compressed(folder / "simulated.npz", **arrays)
    return float(np.quantile(thresholds - (tested - tested.mean()), 0.8))


def test_power_lean_rereads_saved_runs_and_refuses_another_methods(tmp_path, capsys):
    """bench/power_lean.py --reread: the printed MDD over the change the comparisons find in 80%,
    both readings' first-step power pooled, from its own runs and from bench/compare_calibration.py's
    (checked against the reading the run records); a run whose saved inputs no longer give its
    printed MDD (made by another method) is refused with one line and exit 1, not decomposed."""
    found = _power_lean_run(tmp_path / "recipe-s0")
    text = run_script("power_lean.py", "--reread", str(tmp_path / "recipe-s0"), tmp_path=tmp_path)
    doc = json.loads((tmp_path / "recipe-s0" / "power_lean.json").read_text())
    ratio = doc["power"][0]["mdd"] / found
    assert f"| recipe-s0 | gep_score_neutral (C) | {ratio:.3f} |" in text, text
    assert "| --limit 504 | harrell-davis |" in text and "| --limit 504 | normal |" in text
    found = _power_lean_run(tmp_path / "power-recipe-s1", reading="normal")
    text = run_script("power_lean.py", "--reread", str(tmp_path / "power-recipe-s1"), tmp_path=tmp_path)
    doc = json.loads((tmp_path / "power-recipe-s1" / "compare_calibration.json").read_text())
    assert f"| power-recipe-s1 | gep_score_neutral (C) | {doc['power'][0]['mdd'] / found:.3f} |" in text, text
    for args in ((tmp_path / "recipe-s2", 0.001, None),  # the MDD moved after the run
                 (tmp_path / "power-recipe-s3", 0.0, "normal")):  # a run that does not say its reading
        _power_lean_run(*args)
        if args[2]:
            doc = json.loads((args[0] / "compare_calibration.json").read_text())
            (args[0] / "compare_calibration.json").write_text(json.dumps({"power": doc["power"]}))
        status, err = refusal("power_lean.py", "--reread", str(args[0]), capsys=capsys)
        assert status == 1 and "no longer give the printed MDD" in err and len(err.strip().splitlines()) == 1
    status, err = refusal("power_lean.py", capsys=capsys)
    assert status == 2 and "--reread" in err


def test_power_lean_table_in_docs_is_the_saved_runs(tmp_path):
    """docs/compare.md's "Where the lean comes from" table is bench/power_lean.py --reread over
    the runs in bench/measured/power_lean/, line for line (a run added, or the method changed
    under them, fails here or in the script's own refusal)."""
    folders = sorted(p for p in (ROOT / "bench" / "measured" / "power_lean").iterdir() if p.is_dir())
    assert len(folders) >= 4
    text = run_script("power_lean.py", "--reread", *map(str, folders), tmp_path=tmp_path)
    for folder in folders:
        assert (folder / "power_lean.md").read_text() == run_script(
            "power_lean.py", "--reread", str(folder), tmp_path=tmp_path), folder
    page = (ROOT / "docs" / "compare.md").read_text(encoding="utf-8")
    assert not [line for line in text.splitlines() if line.strip() and line not in page]
