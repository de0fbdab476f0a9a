"""Generation stage of the runner: atomic batches, resume after kill -9, determinism,
sharding under ``accelerate launch``, the run folder as a Hub-layout image dataset.

End-to-end tests use ``builtin:tiny-sd`` when ``benchmark.models`` provides it, else
the stand-in conv net of ``tests/_gen_worker.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import _gen_worker as worker
from audit_requests import audit_request, generate_into
from benchmark.runner import (
    VOLATILE_COLUMNS,
    RunFolderError,
    build_probes,
    limit_probes,
    read_manifest,
    run_generation,
    scan_batches,
)

REPO = Path(__file__).resolve().parents[1]
WORKER = Path(worker.__file__).resolve()
SUITES = ["gep_neutral", "gep_occupation"]
LIMIT = 10  # 20 probes: 10 of each suite


def _builtin_available() -> bool:
    try:
        from benchmark.models import load_text_to_image  # noqa: F401
    except ImportError:
        return False
    return True


E2E_SPEC = "builtin:tiny-sd" if _builtin_available() else worker.STANDIN_SPEC


@pytest.fixture
def standin_loader(monkeypatch):
    """``benchmark.models.load_text_to_image`` that also builds the stand-in (for this test only)."""
    worker.install_loader(monkeypatch)


def comparable(manifest: pd.DataFrame) -> pd.DataFrame:
    """The manifest without the columns that depend on ranks, batch sizes or timing."""
    df = manifest.drop(columns=[c for c in VOLATILE_COLUMNS if c in manifest.columns])
    df = df.sort_values("probe_index").reset_index(drop=True)
    return df.map(lambda v: tuple(v) if hasattr(v, "__len__") and not isinstance(v, str) else v)


def assert_same_run(a: Path, b: Path) -> None:
    ma, mb = read_manifest(a), read_manifest(b)
    pd.testing.assert_frame_equal(comparable(ma), comparable(mb))
    # The bytes on disk are the bytes the manifest describes.
    for run, m in ((a, ma), (b, mb)):
        for path, sha in zip(m["image_path"], m["sha256"]):
            assert hashlib.sha256((run / path).read_bytes()).hexdigest() == sha


def run_worker(run_dir: Path, *args: str, launcher: list[str] | None = None, env: dict | None = None,
               **popen) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", **(env or {})}
    cmd = (launcher or [sys.executable]) + [str(WORKER), str(run_dir), "--model", E2E_SPEC,
                                            "--suites", ",".join(SUITES), "--limit", str(LIMIT), *args]
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            **popen)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """An uninterrupted single-process run (batch size 2) of the end-to-end model."""
    run_dir = tmp_path_factory.mktemp("reference") / "run"
    with pytest.MonkeyPatch.context() as mp:
        worker.install_loader(mp)
        summary = run_generation(audit_request(run_dir, E2E_SPEC, suites=SUITES, limit=LIMIT, batch_size=2))
    assert summary.n_generated == summary.n_done == 2 * LIMIT
    return run_dir


# --------------------------------------------------------------------------- limit


def test_limit_keeps_each_suite_scorable():
    full = build_probes(["gep_neutral", "gep_explicit", "gep_occupation"])
    for n in (2, 7, 40):
        kept = limit_probes(full, n)
        assert kept.groupby("suite").size().to_dict() == {"gep_neutral": n, "gep_explicit": n, "gep_occupation": n}
        # Both genders as soon as two prompts are kept, not the first block of the list.
        for suite in ("gep_neutral", "gep_explicit"):
            assert set(kept[kept.suite == suite]["gender"]) == {"woman", "man"}
        assert set(kept[kept.suite == "gep_occupation"]["gender"]) >= ({"unspecified", "female"} if n == 2 else
                                                                        {"unspecified", "female", "male"})
        # Rows keep suite order; a smaller limit is a subset of a larger one.
        order = {pid: i for i, pid in enumerate(full["probe_id"])}
        assert list(kept["probe_id"].map(order)) == sorted(kept["probe_id"].map(order))
    small, large = set(limit_probes(full, 7)["probe_id"]), set(limit_probes(full, 40)["probe_id"])
    assert small <= large
    # gep_neutral has 32 prompts x 5 samples: 40 = every prompt once, then 8 prompts twice.
    counts = limit_probes(full, 40).query("suite == 'gep_neutral'").groupby("prompt").size()
    assert len(counts) == 32 and sorted(counts.unique()) == [1, 2]
    assert limit_probes(full, None).equals(full)
    with pytest.raises(ValueError):
        limit_probes(full, 0)


# --------------------------------------------------------------------------- determinism, layout, dataset


def test_determinism_and_batch_size(tmp_path):
    probes = build_probes(SUITES)
    runs = {}
    for name, bs in (("a", 3), ("b", 3), ("c", 1)):
        summary = generate_into(tmp_path / name, worker.StandInModel(), probes, batch_size=bs, limit=LIMIT)
        assert summary.n_generated == summary.n_done == 2 * LIMIT
        runs[name] = tmp_path / name
    assert_same_run(runs["a"], runs["b"])
    assert_same_run(runs["a"], runs["c"])
    # Byte-identical metadata too, apart from timing.
    a, c = read_manifest(runs["a"]), read_manifest(runs["c"])
    assert list(a["sha256"]) == list(c["sha256"])
    # Layout: one dir per batch named by its first probe's global index; nothing left over.
    batches = sorted(p.name for p in (runs["a"] / "images").iterdir())
    assert batches == [f"b{i:06d}" for i in range(0, 2 * LIMIT, 3)]
    assert len(list((runs["c"] / "images").iterdir())) == 2 * LIMIT
    assert not (runs["a"] / ".partial").exists()
    assert {p.name for p in runs["a"].iterdir()} == {"README.md", "run_config.json", "images", "manifest.parquet",
                                                   "image_checks.jsonl"}
    # A second run into a finished folder generates nothing.
    again = generate_into(runs["a"], worker.StandInModel(), probes, batch_size=5, limit=LIMIT)
    assert again.n_generated == 0 and again.n_done_before == 2 * LIMIT
    assert_same_run(runs["a"], runs["b"])


def test_background_writes_equal_inline_writes_and_surface_errors(tmp_path, monkeypatch):
    probes = build_probes(SUITES)
    for name, overlap in (("inline", False), ("overlap", True)):
        generate_into(tmp_path / name, worker.StandInModel(), probes, batch_size=3, limit=LIMIT,
                 overlap_writes=overlap)
    assert_same_run(tmp_path / "inline", tmp_path / "overlap")
    assert list(read_manifest(tmp_path / "inline")["sha256"]) == list(read_manifest(tmp_path / "overlap")["sha256"])

    # A failing write on the background thread stops the run with its error; the batches
    # written before it stay complete.
    from benchmark.contract import run_folder as rf

    real_write_batch, calls = rf.write_batch, []

    def failing_write_batch(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk full")
        return real_write_batch(*args, **kwargs)

    monkeypatch.setattr(rf, "write_batch", failing_write_batch)
    with pytest.raises(OSError, match="disk full"):
        generate_into(tmp_path / "failing", worker.StandInModel(), probes, batch_size=3, limit=LIMIT)
    assert len(scan_batches(tmp_path / "failing")) == 6  # the first two batches of 3


def test_manifest_rows_and_run_config(tmp_path):
    probes = build_probes(SUITES)
    generate_into(tmp_path, worker.StandInModel(), probes, batch_size=4, limit=LIMIT)
    m = read_manifest(tmp_path)
    expected = limit_probes(probes, LIMIT)
    assert list(m["probe_id"]) == list(expected["probe_id"])
    assert list(m["probe_index"]) == list(range(len(expected)))
    assert list(m["seed"]) == list(expected["seed"])
    row = m.iloc[0]
    assert row["model_id"] == worker.STANDIN_SPEC and row["file_name"] == "000000.png"
    assert json.loads(row["settings"]) == {"dtype": "float32", "height": 24, "steps": 2, "width": 24}
    assert row["image_path"] == "images/b000000/000000.png"
    # Probe fields of every suite are there (null where a suite lacks the field).
    occ = m[m.suite == "gep_occupation"]
    assert set(occ["occupation"]) == {"lawyer"} and occ["context"].isna().all()
    cfg = json.loads((tmp_path / "run_config.json").read_text())
    assert cfg["suites"] == SUITES and cfg["limit_per_suite"] == LIMIT and cfg["n_probes"] == 2 * LIMIT
    assert cfg["model"]["spec"] == worker.STANDIN_SPEC and cfg["batch_size"] == 4
    assert "device" not in cfg["settings"]


def test_run_folder_loads_as_image_dataset(tmp_path):
    import datasets

    run_dir = tmp_path / "run"
    generate_into(run_dir, worker.StandInModel(), build_probes(SUITES), batch_size=3, limit=LIMIT)
    # Files of later stages must not leak into the image config.
    (run_dir / "labels").mkdir()
    pd.DataFrame({"probe_id": ["x"], "label": [1]}).to_parquet(run_dir / "labels" / "gender.parquet")
    (run_dir / "embeddings").mkdir()
    (run_dir / "embeddings" / "clip.npy").write_bytes(b"\x93NUMPY")
    (run_dir / "results.json").write_text("{}")
    ds = datasets.load_dataset(str(run_dir), split="train", cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == 2 * LIMIT
    ds = ds.sort("probe_index")
    m = read_manifest(run_dir)
    assert ds["probe_id"] == list(m["probe_id"])
    first = ds[0]
    assert first["image"].size == (24, 24)
    assert first["gender"] == "woman" and first["suite"] == "gep_neutral"
    assert first["annotated_attributes"] == list(m["annotated_attributes"][0])
    assert isinstance(ds.features["image"], datasets.Image)
    assert ds[len(ds) - 1]["occupation"] == "lawyer" and ds[len(ds) - 1]["context"] is None


def test_card_says_builtin_images_are_meaningless(tmp_path):
    probes = build_probes(["gep_occupation"])
    model = worker.StandInModel()
    generate_into(tmp_path / "std", model, probes, batch_size=4, limit=4)
    body = (tmp_path / "std" / "README.md").read_text().split("---\n", 2)[2].lstrip()
    assert not body.lower().startswith("**these images come from a tiny random-weight model")
    for name, spec, flag in (("spec", "builtin:tiny-sd", False), ("flag", None, True)):
        model.is_builtin = flag  # TextToImageModel.is_builtin, or a builtin: spec
        generate_into(tmp_path / name, model, probes, batch_size=4, limit=4, spec=spec)
        body = (tmp_path / name / "README.md").read_text().split("---\n", 2)[2].lstrip()
        first_line = body.splitlines()[0]
        assert "tiny random-weight model" in first_line and "meaningless" in first_line


# --------------------------------------------------------------------------- errors and cleanup


def test_rerun_with_other_arguments_is_one_line_error(tmp_path, standin_loader):
    probes = build_probes(SUITES)
    run = tmp_path / "run"
    generate_into(run, worker.StandInModel(), probes, batch_size=4, limit=4)
    cases = [
        lambda: generate_into(run, worker.StandInModel(), probes, batch_size=4, limit=5),
        lambda: generate_into(run, worker.StandInModel(steps=3), probes, batch_size=4, limit=4),
        lambda: generate_into(run, worker.StandInModel(), build_probes(["gep_neutral"]), limit=4),
        lambda: run_generation(audit_request(run, worker.STANDIN_SPEC, suites=["gep_neutral"], limit=4)),
        lambda: run_generation(audit_request(run, worker.STANDIN_SPEC, suites=SUITES, limit=4, settings={"height": 16})),
    ]
    for case in cases:
        with pytest.raises(RunFolderError) as info:
            case()
        msg = str(info.value)
        assert "\n" not in msg and "other generation arguments" in msg and "--out" in msg
    with pytest.raises(RunFolderError, match="limit_per_suite was 4, now 5"):
        cases[0]()
    # A folder that is not a run folder is refused.
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(RunFolderError, match="not a run folder"):
        generate_into(other, worker.StandInModel(), probes, limit=4)
    # A different batch size is not a different run: images do not depend on it.
    again = run_generation(audit_request(run, worker.STANDIN_SPEC, suites=SUITES, limit=4, batch_size=7))
    assert again.n_generated == 0


def test_run_generation_checks_folder_before_loading_model(tmp_path, monkeypatch, standin_loader):
    run_generation(audit_request(tmp_path, worker.STANDIN_SPEC, suites=SUITES, limit=2))
    import benchmark.models as models

    def boom(*a, **k):
        raise AssertionError("model loaded before the run folder was checked")

    monkeypatch.setattr(models, "load_text_to_image", boom)
    with pytest.raises(RunFolderError):
        run_generation(audit_request(tmp_path, worker.STANDIN_SPEC, suites=SUITES, limit=3))
    with pytest.raises(ValueError, match="unknown suite"):
        run_generation(audit_request(tmp_path / "new", worker.STANDIN_SPEC, suites=["no_such_suite"], limit=3))


def test_stray_partial_batch_is_removed(tmp_path):
    probes = build_probes(SUITES)
    generate_into(tmp_path / "ref", worker.StandInModel(), probes, batch_size=2, limit=LIMIT)
    run = tmp_path / "run"
    shutil.copytree(tmp_path / "ref", run)
    # Simulate a kill mid-batch: two finished batches lost, one half-written batch left in .partial.
    shutil.rmtree(run / "images" / "b000004")
    stray = run / ".partial" / "b000004.r0.99999"
    shutil.move(run / "images" / "b000006", stray)
    (stray / "metadata.jsonl").write_text('{"file_name": "000006.png", "probe_id": "trunc')
    (run / "manifest.parquet").unlink()
    summary = generate_into(run, worker.StandInModel(), probes, batch_size=2, limit=LIMIT)
    assert summary.removed_partial == ["b000004.r0.99999"]
    assert summary.n_generated == 4 and summary.n_done_before == 2 * LIMIT - 4
    assert not (run / ".partial").exists()
    assert_same_run(tmp_path / "ref", run)


def test_half_batch_in_images_is_reported(tmp_path):
    probes = build_probes(["gep_occupation"])
    generate_into(tmp_path, worker.StandInModel(), probes, batch_size=2, limit=4)
    (tmp_path / "images" / "b000002" / "000003.png").unlink()
    with pytest.raises(RunFolderError, match="missing"):
        scan_batches(tmp_path)


# --------------------------------------------------------------------------- processes


def test_resume_after_kill_9(tmp_path, reference, standin_loader):
    run_dir = tmp_path / "run"
    # The worker pauses after writing each batch into .partial/ and before renaming it into
    # images/; it is killed during such a pause once 3 of its 7 batches are in place, so the
    # kill leaves a complete-looking batch that must not count.
    proc = run_worker(run_dir, "--batch-size", "3", "--pause-before-rename", "0.5")
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"worker exited early:\n{proc.stdout.read()}")
            batches = list((run_dir / "images").glob("b*")) if (run_dir / "images").is_dir() else []
            partial = [p for p in (run_dir / ".partial").glob("b*") if (p / "metadata.jsonl").is_file()] \
                if (run_dir / ".partial").is_dir() else []
            if len(batches) >= 3 and partial:
                break
            time.sleep(0.02)
        else:
            raise AssertionError("the worker wrote no batches in time")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    before = scan_batches(run_dir)
    assert 3 * 3 <= len(before) < 2 * LIMIT
    assert list((run_dir / ".partial").iterdir()), "the kill should leave a stray partial batch"
    assert not (run_dir / "manifest.parquet").exists()
    # Run again with the same arguments (another batch size is allowed); in this process,
    # which saves a second model load in a fresh interpreter.
    summary = run_generation(audit_request(run_dir, E2E_SPEC, suites=SUITES, limit=LIMIT, batch_size=2))
    assert summary.n_done_before == len(before) and summary.n_generated == 2 * LIMIT - len(before)
    assert len(summary.removed_partial) == 1
    rows = scan_batches(run_dir, verify_sha256=True)
    assert sorted(r["probe_id"] for r in rows) == sorted(read_manifest(reference)["probe_id"])
    assert len({r["probe_id"] for r in rows}) == len(rows) == 2 * LIMIT
    # The batches finished before the kill are untouched.
    assert {r["probe_id"]: r["sha256"] for r in before}.items() <= {r["probe_id"]: r["sha256"] for r in rows}.items()
    assert not (run_dir / ".partial").exists()
    assert_same_run(reference, run_dir)


def test_two_processes_under_accelerate_equal_one(tmp_path, reference):
    accelerate = shutil.which("accelerate", path=str(Path(sys.executable).parent)) or shutil.which("accelerate")
    if accelerate is None:
        pytest.skip("accelerate is not installed")
    run_dir = tmp_path / "run"
    # `accelerate launch --cpu --num_processes 2` starts ONE process in accelerate 1.x (its
    # multi-CPU launch needs mpirun); `--multi_gpu` with no visible GPU starts 2 processes
    # through torch.distributed.run, which the runner joins with gloo on CPU.
    # CPU kernels round differently with different thread counts, so each process gets as many
    # threads as the reference run had (the launcher would otherwise set OMP_NUM_THREADS=1).
    import torch

    launcher = [accelerate, "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", "0",
                "--num_cpu_threads_per_process", str(torch.get_num_threads())]
    proc = run_worker(run_dir, "--batch-size", "2", launcher=launcher, env={"CUDA_VISIBLE_DEVICES": ""})
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    assert "rank 0/2" in out and "rank 1/2" in out, out
    m = read_manifest(run_dir)
    assert set(m["rank"]) == {0, 1}
    # Contiguous shards: rank 0 did the first half of the probe list, rank 1 the second.
    assert list(m["rank"]) == sorted(m["rank"])
    assert (m["rank"] == 0).sum() == LIMIT
    assert_same_run(reference, run_dir)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_nodes_under_torchrun_equal_one_process(tmp_path, reference):
    """The multi-node form: two torchrun "nodes" on this machine (``--nnodes 2 --node_rank 0/1
    --master_addr 127.0.0.1``, one process each, gloo on the CPU) writing into one run folder, as
    two machines would on shared storage: the manifest and the PNG bytes equal one process's."""
    import torch

    run_dir, port = tmp_path / "run", _free_port()
    # each node's process gets as many threads as the reference had (CPU kernels round by thread count)
    env = {"CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": str(torch.get_num_threads())}
    nodes = [run_worker(run_dir, "--batch-size", "2", env=env,
                        launcher=[sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
                                  "--nproc_per_node", "1", "--node_rank", str(rank), "--master_addr", "127.0.0.1",
                                  "--master_port", str(port)])
             for rank in (0, 1)]
    outs = []
    try:
        for proc in nodes:
            outs.append(proc.communicate(timeout=300)[0])
    finally:
        for proc in nodes:
            if proc.poll() is None:
                proc.kill()
    assert [proc.returncode for proc in nodes] == [0, 0], outs
    assert "rank 0/2" in outs[0] and "rank 1/2" in outs[1], outs
    m = read_manifest(run_dir)
    assert list(m["rank"]) == [0] * LIMIT + [1] * LIMIT  # node 0 the first half of the probes, node 1 the rest
    assert_same_run(reference, run_dir)
    assert ({p.relative_to(reference / "images").name: p.read_bytes() for p in (reference / "images").rglob("*.png")}
            == {p.relative_to(run_dir / "images").name: p.read_bytes() for p in (run_dir / "images").rglob("*.png")})


def test_end_to_end_run_folder(reference, tmp_path):
    """The single-process run of the end-to-end model: card, config and dataset."""
    import datasets

    cfg = json.loads((reference / "run_config.json").read_text())
    assert cfg["model"]["spec"] == E2E_SPEC and cfg["n_probes"] == 2 * LIMIT
    if E2E_SPEC.startswith("builtin:"):
        body = (reference / "README.md").read_text().split("---\n", 2)[2].lstrip()
        assert "tiny random-weight model" in body.splitlines()[0] and "meaningless" in body.splitlines()[0]
        assert cfg["model"]["builtin"] is True
    ds = datasets.load_dataset(str(reference), split="train", cache_dir=str(tmp_path / "cache")).sort("probe_index")
    m = read_manifest(reference)
    assert ds["probe_id"] == list(m["probe_id"]) and ds["sha256"] == list(m["sha256"])
    assert ds[0]["image"].mode == "RGB" and json.loads(ds[0]["settings"]) == cfg["settings"]


# --------------------------------------------------------------------------- the batch writer


def _writer_run(run_dir: Path, overlap: bool = True, **writer_options) -> Path:
    """A stand-in run through ``generate`` (batches of 3) with the batch writer built with ``writer_options``."""
    import functools
    import importlib

    from benchmark.runner.batch_writer import BatchWriter

    gen_module = importlib.import_module("benchmark.runner.generate")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gen_module, "BatchWriter", functools.partial(BatchWriter, **writer_options))
        generate_into(run_dir, worker.StandInModel(), build_probes(SUITES), batch_size=3, limit=LIMIT,
                 overlap_writes=overlap)
    return run_dir


def _pixels(run: Path) -> dict[str, bytes]:
    from PIL import Image

    m = read_manifest(run)
    return {pid: Image.open(run / path).convert("RGB").tobytes() for pid, path in zip(m["probe_id"], m["image_path"])}


def test_writer_bytes_do_not_depend_on_threads_or_overlap(tmp_path):
    """The same files and manifest with 1 or 3 encoder threads, in the background or inline."""
    runs = [_writer_run(tmp_path / f"t{threads}{'o' if overlap else 'i'}", threads=threads, overlap=overlap)
            for threads, overlap in ((1, True), (3, True), (3, False))]
    for other in runs[1:]:
        assert_same_run(runs[0], other)
        assert ({p.relative_to(runs[0]): p.read_bytes() for p in (runs[0] / "images").rglob("*.png")}
                == {p.relative_to(other): p.read_bytes() for p in (other / "images").rglob("*.png")})


def test_png_options_keep_pixels_and_the_old_options_write_the_old_bytes():
    """Lossless: the runner's PNG options (zlib's run-length strategy) and PIL's default decode to
    the same pixels; PNG_OPTIONS_BEFORE writes what the writer before wrote (``image.save(buf,
    "PNG")``); under the run-length strategy the zlib level changes no byte."""
    import io

    from PIL import Image

    from benchmark.runner.batch_writer import PNG_OPTIONS, PNG_OPTIONS_BEFORE, png_bytes

    image = worker.StandInModel(height=96, width=80).generate(["a photo of a nurse"], [3]).images[0]
    old = io.BytesIO()
    image.save(old, format="PNG")
    assert png_bytes(image, PNG_OPTIONS_BEFORE) == old.getvalue()
    new = png_bytes(image)
    assert new != old.getvalue()  # PIL applies the strategy (were the option ignored, these would be equal)
    assert Image.open(io.BytesIO(new)).tobytes() == Image.open(io.BytesIO(old.getvalue())).tobytes() == image.tobytes()
    assert {png_bytes(image, {**PNG_OPTIONS, "compress_level": level}) for level in range(1, 10)} == {new}


def test_a_run_started_by_the_old_writer_verifies_and_resumes(tmp_path, capsys):
    """Batches written with PIL's default PNG options by one thread (the writer before this one), the run killed,
    resumed by today's writer: the folder verifies, the old batches keep their bytes, and every
    image has the pixels of an uninterrupted run."""
    from benchmark.cli import main

    whole = _writer_run(tmp_path / "whole")
    from benchmark.runner.batch_writer import PNG_OPTIONS_BEFORE

    old = _writer_run(tmp_path / "old", threads=1, png_options=PNG_OPTIONS_BEFORE)
    run = tmp_path / "run"
    shutil.copytree(old, run)
    for name in ("b000009", "b000012", "b000015", "b000018"):  # the batches a kill lost
        shutil.rmtree(run / "images" / name)
    (run / "manifest.parquet").unlink()
    kept = {p.name: p.read_bytes() for p in (run / "images").rglob("*.png")}
    summary = generate_into(run, worker.StandInModel(), build_probes(SUITES), batch_size=3, limit=LIMIT)
    assert summary.n_done_before == 9 and summary.n_generated == 11 and summary.n_done == 2 * LIMIT
    capsys.readouterr()
    assert main(["verify", str(run)]) == 0 and capsys.readouterr().out.startswith("OK ")
    assert {p.name: p.read_bytes() for p in (run / "images").rglob("*.png") if p.name in kept} == kept
    assert _pixels(run) == _pixels(whole) == _pixels(old)
    sha = dict(zip(read_manifest(run)["probe_id"], read_manifest(run)["sha256"]))
    new_sha = dict(zip(read_manifest(whole)["probe_id"], read_manifest(whole)["sha256"]))
    old_sha = dict(zip(read_manifest(old)["probe_id"], read_manifest(old)["sha256"]))
    assert [sha[p] == old_sha[p] for p in sha] == [i < 9 for i in range(2 * LIMIT)]
    assert [sha[p] == new_sha[p] for p in sha] == [i >= 9 for i in range(2 * LIMIT)]


def test_an_encoding_error_stops_the_run_and_keeps_finished_batches(tmp_path, monkeypatch):
    from benchmark.runner import batch_writer

    real, calls = batch_writer.png_bytes, []

    def failing(image, options=None):
        calls.append(1)
        if len(calls) == 8:  # an image of the third batch of 3
            raise OSError("encoder failed")
        return real(image, options)

    monkeypatch.setattr(batch_writer, "png_bytes", failing)
    with pytest.raises(OSError, match="encoder failed"):
        generate_into(tmp_path, worker.StandInModel(), build_probes(SUITES), batch_size=3, limit=LIMIT)
    assert len(scan_batches(tmp_path)) == 6 and not list((tmp_path / ".partial").glob("b*"))


KILL_SCRIPT = """
import os, sys, time
from pathlib import Path
sys.path[:0] = [{tests!r}, {repo!r}]
import _gen_worker as worker
from audit_requests import generate_into
from benchmark.runner import build_probes

log = open({log!r}, "a")

class Logged(worker.StandInModel):
    def generate(self, prompts, seeds):
        log.write("start\\n"); log.flush()
        return super().generate(prompts, seeds)

real_rename = os.rename

def slow_rename(src, dst, *a, **k):  # a slow disk: each batch takes 0.4 s to commit
    if Path(src).parent.name == ".partial":
        time.sleep(0.4)
    return real_rename(src, dst, *a, **k)

os.rename = slow_rename
generate_into({run!r}, Logged(), build_probes({suites!r}), batch_size=2, limit={limit})
"""


def test_a_kill_loses_at_most_the_batch_being_written_and_the_one_after_it(tmp_path):
    """The model is fast and the disk slow: the generating thread waits for the writer instead
    of running ahead. Killed mid-run, the model had started at most two batches more than are
    on disk (one being written, one generated after it); the rerun completes the run."""
    run, log = tmp_path / "run", tmp_path / "calls.log"
    script = tmp_path / "kill_me.py"
    script.write_text(KILL_SCRIPT.format(tests=str(WORKER.parent), repo=str(REPO), log=str(log), run=str(run),
                                         suites=SUITES, limit=LIMIT), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while len(list((run / "images").glob("b*")) if (run / "images").is_dir() else []) < 3:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the run ended or stalled before 3 batches:\n{proc.stdout.read()}")
            time.sleep(0.02)
        time.sleep(0.3)  # mid-batch
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    started = log.read_text().count("start")
    committed = len(list((run / "images").glob("b*")))
    assert 3 <= committed < LIMIT and started - committed <= 2, (started, committed)
    assert len(list((run / ".partial").glob("b*"))) <= 1
    resumed = generate_into(run, worker.StandInModel(), build_probes(SUITES), batch_size=2, limit=LIMIT)
    assert resumed.n_done_before == 2 * committed and resumed.n_done == 2 * LIMIT
    reference = generate_into(tmp_path / "ref", worker.StandInModel(), build_probes(SUITES), batch_size=2, limit=LIMIT)
    assert reference.n_done == 2 * LIMIT
    assert_same_run(tmp_path / "ref", run)
