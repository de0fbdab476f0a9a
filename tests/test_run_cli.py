"""`t2ibench run` end to end on the built-in tiny models, every suite, and the one-line
errors it gives before any heavy work."""

import json
import os
import subprocess
import sys

import datasets
import pandas as pd
import pytest
import torch

from benchmark.cli import main
from benchmark.probes import list_suites
from benchmark.contract.results import BUILTIN_WARNING, validate_results


def t2ibench(*args, env=None, timeout=600):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "benchmark.cli", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout)


@pytest.fixture(scope="module")
def cache_env(tmp_path_factory):
    return {"T2IBENCH_CACHE": str(tmp_path_factory.mktemp("t2ibench_cache")), "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, cache_env):
    """One run of every suite, shared by the tests that read it. Without --quiet: its stderr is
    also what test_a_run_prints_only_its_own_progress checks (every suite's models loaded)."""
    run_dir = tmp_path_factory.mktemp("runs") / "tiny"
    args = ("run", "--model", "builtin:tiny-sd", "--out", str(run_dir), "--limit", "4", "--batch-size", "4",
            "--n-resamples", "50")
    proc = t2ibench(*args, env=cache_env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run_dir, args, proc


def test_every_suite_is_generated_annotated_and_scored(tiny_run):
    run_dir, _, proc = tiny_run
    manifest = pd.read_parquet(run_dir / "manifest.parquet")
    assert set(manifest["suite"]) == set(list_suites())
    assert (manifest.groupby("suite").size() <= 4).all()
    for name in ("gender", "attributes", "skin_tone", "embeddings", "detections"):
        assert (run_dir / "labels" / f"{name}.parquet").is_file(), name
    results = json.loads((run_dir / "results.json").read_text())
    assert next(iter(results)) == "warning" and results["warning"] == BUILTIN_WARNING
    assert validate_results(results) == []
    scored = {e["suite"] for e in results["scores"]}
    # Every family produces score entries (defined or with the reason they are undefined).
    for suite in ("gep_neutral", "gep_explicit", "gep_occupation", "dalleval_bias", "pst_single",
                  "pst_paired_occupation", "pst_paired_power", "mcas_targets", "paintskills_object",
                  "paintskills_count", "paintskills_spatial"):
        assert suite in scored, suite
    for e in results["scores"]:
        assert e["value"] is not None or e.get("reason"), e
    assert proc.stdout.splitlines()[0] == f"WARNING: {BUILTIN_WARNING}"
    report = (run_dir / "report" / "report.md").read_text()
    assert BUILTIN_WARNING in report.splitlines()[0]
    assert (run_dir / "report" / "report.html").is_file()


def test_run_folder_loads_as_an_image_dataset(tiny_run):
    run_dir, _, _ = tiny_run
    ds = datasets.load_dataset(str(run_dir), split="train")
    manifest = pd.read_parquet(run_dir / "manifest.parquet")
    assert ds.num_rows == len(manifest)
    assert sorted(ds["probe_id"]) == sorted(manifest["probe_id"])
    assert ds[0]["image"].size[0] > 0


def test_rerun_resumes_without_regenerating_and_scores_the_same(tiny_run, cache_env, monkeypatch):
    run_dir, args, _ = tiny_run
    before = pd.read_parquet(run_dir / "manifest.parquet")
    first = json.loads((run_dir / "results.json").read_text())
    # The rerun and the score stage in this process (what is checked is the files and numbers
    # they leave; the command line's own output is checked on the module's run).
    for k, v in cache_env.items():
        monkeypatch.setenv(k, v)
    assert main(list(args)) == 0
    after = pd.read_parquet(run_dir / "manifest.parquet")
    assert after["sha256"].tolist() == before["sha256"].tolist()
    second = json.loads((run_dir / "results.json").read_text())
    assert [(e["name"], e["suite"], e["value"]) for e in second["scores"]] == \
        [(e["name"], e["suite"], e["value"]) for e in first["scores"]]
    # The scoring stage alone, from the files, gives the same numbers again.
    assert main(["score", str(run_dir), "--n-resamples", "50"]) == 0
    third = json.loads((run_dir / "results.json").read_text())
    assert [e["value"] for e in third["scores"]] == [e["value"] for e in first["scores"]]


def _one_line_error(proc, *fragments):
    assert proc.returncode == 2, (proc.stdout[-1000:], proc.stderr[-2000:])
    lines = [ln for ln in proc.stderr.strip().splitlines() if not ln.startswith("WARNING:")]
    assert len(lines) == 1 and lines[0].startswith("t2ibench: error: "), proc.stderr[-2000:]
    for f in fragments:
        assert f in lines[0], lines[0]


@pytest.mark.parametrize("model,extra,fragments", [
    ("builtin:tiny-sd", ["--suites", "no_such_suite"], ["unknown suite 'no_such_suite'"]),
    ("builtin:nope", [], ["builtin:nope"]),
    ("python:", [], ["python:"]),
    ("someorg/not-a-cached-model", [], ["someorg/not-a-cached-model"]),
])
def test_clear_errors_before_any_work(tmp_path, cache_env, model, extra, fragments):
    out = tmp_path / "run"
    proc = t2ibench("run", "--model", model, "--out", str(out), "--limit", "2", *extra, env=cache_env)
    _one_line_error(proc, *fragments)
    assert not (out / "images").exists() or not any((out / "images").iterdir())


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error for a machine without a GPU")
def test_gpu_asked_for_but_absent(tmp_path, cache_env):
    proc = t2ibench("run", "--model", "builtin:tiny-sd", "--out", str(tmp_path / "r"), "--limit", "2",
                    "--device", "cuda", env=cache_env)
    _one_line_error(proc, "cuda")


def test_stage_commands_refuse_a_folder_that_is_not_a_run(tmp_path):
    for cmd in ("annotate", "score", "report"):
        _one_line_error(t2ibench(cmd, str(tmp_path)), "not a run folder")


def test_two_runs_in_folders_of_the_same_name_load_their_own_images(tmp_path, cache_env, monkeypatch):
    # datasets keys its cache of a local folder by folder name and card: the card's download
    # size (dataset_info) keeps two runs (or one run before and after a resume) apart.
    # Generated in this process (what is checked is datasets' cache, not the command line).
    for k, v in cache_env.items():
        monkeypatch.setenv(k, v)
    counts = {}
    for parent, limit in (("a", "1"), ("b", "3")):
        out = tmp_path / parent / "tiny"
        assert main(["generate", "--model", "builtin:tiny-sd", "--out", str(out), "--suites", "gep_neutral",
                     "--limit", limit, "--quiet"]) == 0
        ds = datasets.load_dataset(str(out), split="train")
        counts[parent] = ds.num_rows
        assert all(img is not None for img in ds["image"])
    assert counts == {"a": 1, "b": 3}


def test_a_run_prints_only_its_own_progress(tiny_run):
    """Issue 41: `make demo` printed diffusers' and transformers' loading bars ("Loading pipeline
    components...", "Loading weights") and torch's deprecation warning between its own lines;
    without --quiet, a run shows its own stage bars and lines only. The module's run of every
    suite is made without --quiet for this check."""
    _, args, proc = tiny_run
    assert "--quiet" not in args
    lines = [ln for ln in proc.stderr.replace("\r", "\n").splitlines() if ln.strip()]
    assert any(ln.startswith("generate:") for ln in lines) and any(ln.startswith("annotate") for ln in lines)
    loud = [ln for ln in lines if "Loading" in ln or "Warning" in ln or "warnings.warn" in ln]
    assert loud == [], loud
