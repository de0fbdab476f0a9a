"""`t2ibench run --mcas-reference`: two tiny models (builtin:tiny-sd with other generation
settings, so other images) audited against one reference-attributes dataset built from a third
run. Both score MCAS against the very same attribute embeddings, which are not either model's
own; results.json, the report and the leaderboard name the reference; resuming against another
reference is refused in one line; the papers' protocol is unchanged without the flag."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import shutil
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from cli_here import exit_status

from benchmark.reference_attributes import data_fingerprint
from benchmark.contract.results import validate_results

LIMIT = 4  # per suite: 4 attribute images (both sets) and 4 target images
ENCODER = "builtin:tiny-clip"
# two "models": the tiny pipeline with other generation settings draws other images
MODEL_X = ["--set", "num_inference_steps=2"]
MODEL_Y = ["--set", "guidance_scale=3.0"]


def _cli(root, *args, module="benchmark.cli"):
    """The command line's ``main`` called in this process (no interpreter start per call): its exit
    code and what it printed on stderr, as a finished process would give them."""
    main = importlib.import_module(module).main
    err, saved_env = io.StringIO(), dict(os.environ)
    os.environ.update({"HF_HUB_OFFLINE": "1", "T2IBENCH_CACHE": str(root / "cache")})
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = exit_status(args, main)
    finally:  # --quiet sets progress-bar variables: the next test gets the environment it had
        os.environ.clear()
        os.environ.update(saved_env)
    return SimpleNamespace(returncode=code, stderr=err.getvalue())


def _run(root, out, *extra, suites=("mcas_attributes", "mcas_targets")):
    return _cli(root, "run", "--model", "builtin:tiny-sd", "--suites", *suites, "--limit", LIMIT, "--n-resamples", 20,
                "--quiet", "--out", out, *extra)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("mcas_reference")
    out = {"root": root}
    proc = _run(root, root / "trusted")  # the run the reference is built from
    assert proc.returncode == 0, proc.stderr[-2000:]
    proc = _cli(root, "--out", root / "ref", "--from-run", root / "trusted", "--allow-demo",
                module="dataset_builders.reference_attributes")
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name, model in (("x", MODEL_X), ("y", MODEL_Y)):
        own = _run(root, root / f"{name}_own", *model)  # the papers' protocol: the model's own attributes
        assert own.returncode == 0, own.stderr[-2000:]
        ref = _run(root, root / f"{name}_ref", *model, "--mcas-reference", root / "ref")
        assert ref.returncode == 0, ref.stderr[-2000:]
        out[name] = ref
    return out


def _results(run_dir):
    return json.loads((run_dir / "results.json").read_text())


def _attribute_embeddings(run_dir) -> tuple[list[str], np.ndarray]:
    """(probe ids, embeddings) of the attribute images a run's MCAS used, by probe id."""
    emb = pd.read_parquet(run_dir / "labels" / "embeddings.parquet")
    rows = emb[(emb["encoder"] == ENCODER) & emb["role"].str.startswith("attribute_") & (emb["kind"] == "image")]
    rows = rows.sort_values("probe_id")
    return list(rows["probe_id"]), np.stack(rows["embedding"].to_numpy())


def _mcas(results) -> dict:
    return next(e for e in results["scores"] if e["name"] == "mcas" and e["suite"] == "mcas_targets")


def test_both_models_score_mcas_against_the_reference(runs):
    root = runs["root"]
    identity = {"source": str(root / "ref"), "revision": None, "fingerprint": data_fingerprint(root / "ref")}
    values = []
    for name in ("x", "y"):
        run_dir = root / f"{name}_ref"
        results = _results(run_dir)
        assert validate_results(results) == []
        assert results["references"] == {"mcas": identity}
        assert json.loads((run_dir / "run_config.json").read_text())["mcas_reference"] == identity
        entry = _mcas(results)
        assert entry["defined"] and entry["n"] == LIMIT  # the model's own images: its targets
        values.append(entry["value"])
        # the attribute suite is not generated: fewer images than the model's own audit
        assert [s["name"] for s in results["suites"]] == ["mcas_targets"]
        assert results["suites"][0]["status"] == "scored"
        manifest = pd.read_parquet(run_dir / "manifest.parquet")
        assert set(manifest["suite"]) == {"mcas_targets"} and len(manifest) == LIMIT
        assert len(pd.read_parquet(root / f"{name}_own" / "manifest.parquet")) == 2 * LIMIT
        assert any("attribute images from the reference" in n for n in results["notes"])
        report = (run_dir / "report" / "report.md").read_text()
        assert "**MCAS reference**" in report and identity["fingerprint"][:12] in report
        assert "references" not in _results(root / f"{name}_own")
    assert values[0] != values[1]  # two models: other targets, other scores


def test_attribute_embeddings_are_the_references_not_the_models_own(runs):
    root = runs["root"]
    ids_x, ref_x = _attribute_embeddings(root / "x_ref")
    ids_y, ref_y = _attribute_embeddings(root / "y_ref")
    assert ids_x == ids_y and len(ids_x) == LIMIT and all(p.startswith("reference:") for p in ids_x)
    assert np.array_equal(ref_x, ref_y)
    own_ids, own_x = _attribute_embeddings(root / "x_own")
    _, own_y = _attribute_embeddings(root / "y_own")
    assert [p.rsplit(":", 1)[1] for p in ids_x] == own_ids  # the same prompts and seeds, other images
    assert not np.array_equal(ref_x, own_x) and not np.array_equal(ref_x, own_y)
    # they are the trusted run's images, embedded by the same encoder
    _, trusted = _attribute_embeddings(root / "trusted")
    assert np.allclose(ref_x, trusted, atol=1e-5)
    # cached in the run folder like the run's own image embeddings
    cached = root / "x_ref" / "embeddings" / "mcas-reference"
    cached_ids = json.loads((cached / "builtin-tiny-clip" / "ids.json").read_text())
    assert sorted(cached_ids) == ids_x
    assert np.array_equal(np.load(cached / "builtin-tiny-clip" / "images.npy")[np.argsort(cached_ids)], ref_x)


def test_annotate_again_reuses_the_cached_reference_embeddings(runs, tmp_path, monkeypatch):
    """With the label file gone, the annotate stage rebuilds the reference rows from the run
    folder's cache: the reference itself is not read again."""
    import benchmark.reference_attributes as ra
    from benchmark.runner.annotate import annotate_run

    run_dir = tmp_path / "x_ref"
    shutil.copytree(runs["root"] / "x_ref", run_dir)
    before = _attribute_embeddings(run_dir)
    (run_dir / "labels" / "embeddings.parquet").unlink()
    monkeypatch.setenv("T2IBENCH_CACHE", str(runs["root"] / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def refuse(*a, **k):
        raise AssertionError("the reference was read again")

    monkeypatch.setattr(ra, "read_folder", refuse)  # what every load of a reference reads the dataset with
    annotate_run(run_dir, progress=False, suites=["mcas_targets"])
    after = _attribute_embeddings(run_dir)
    assert after[0] == before[0] and np.array_equal(after[1], before[1])


def _one_line_error(proc, *needles):
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.strip().splitlines() if not ln.startswith("WARNING")]
    assert len(lines) == 1 and lines[0].startswith("t2ibench: error:"), proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def test_resume_needs_the_same_reference(runs):
    root = runs["root"]
    # the same reference: resumes (nothing left to generate)
    again = _run(root, root / "x_ref", *MODEL_X, "--mcas-reference", root / "ref")
    assert again.returncode == 0, again.stderr[-2000:]
    # another reference: built from model X's own run
    other = _cli(root, "--out", root / "ref_other", "--from-run", root / "x_own", "--allow-demo",
                 module="dataset_builders.reference_attributes")
    assert other.returncode == 0, other.stderr[-2000:]
    fp, fp_other = data_fingerprint(root / "ref")[:12], data_fingerprint(root / "ref_other")[:12]
    assert fp != fp_other
    _one_line_error(_run(root, root / "x_ref", *MODEL_X, "--mcas-reference", root / "ref_other"),
                    "audited against MCAS reference", fp, fp_other)
    _one_line_error(_run(root, root / "x_ref", *MODEL_X), fp, "no --mcas-reference")
    _one_line_error(_run(root, root / "x_own", *MODEL_X, "--mcas-reference", root / "ref"),
                    "the model's own MCAS attribute images", fp)


def test_bad_references_are_one_line_errors(runs, tmp_path):
    root = runs["root"]
    swatches_only = tmp_path / "swatches"
    assert _cli(root, "--out", swatches_only, module="dataset_builders.reference_attributes").returncode == 0
    (tmp_path / "empty").mkdir()
    cases = [
        (("--mcas-reference", tmp_path / "missing"), "neither a folder nor a Hub dataset id"),
        (("--mcas-reference", tmp_path / "empty"), "no README.md"),
        (("--mcas-reference", swatches_only), "no mcas_image_attributes config"),
        (("--mcas-reference", "org/no-such-reference"), "offline"),
        (("--mcas-reference", root / "ref", "--mcas-reference-revision", "v1"), "Hub dataset only"),
        (("--mcas-reference-revision", "v1"), "needs --mcas-reference"),
    ]
    for k, (args, needle) in enumerate(cases):
        out = tmp_path / f"run{k}"
        _one_line_error(_run(root, out, *args), needle)
        assert not out.exists()  # refused before the run folder is made
    _one_line_error(_run(root, tmp_path / "gep", "--mcas-reference", root / "ref", suites=("gep_neutral",)),
                    "needs an MCAS target suite")


def test_leaderboard_gives_each_reference_its_own_row(runs, tmp_path):
    from submissions.leaderboard import detail, results_files, wording

    root = runs["root"]
    board_dir = tmp_path / "board"
    for name in ("x_own", "x_ref"):
        (board_dir / name).mkdir(parents=True)
        shutil.copy(root / name / "results.json", board_dir / name / "results.json")
    board = results_files.load_folder(board_dir)
    assert not board.skipped and not board.conflicts
    rows = board.rows()
    assert len(rows) == 2
    fp = data_fingerprint(root / "ref")
    by_ref = {r.latest.reference_fingerprint: r for r in rows}
    assert set(by_ref) == {None, fp}
    assert by_ref[fp].key.endswith(f"|mcas-reference={fp}") and "mcas-reference" not in by_ref[None].key
    labels = wording.model_labels(rows)
    assert labels[by_ref[fp].key].endswith(f"[MCAS ref {fp[:8]}]") and "MCAS ref" not in labels[by_ref[None].key]
    assert "lb-badge-mcas-ref" in wording.badges_html(by_ref[fp].latest)
    assert "lb-badge-mcas-ref" not in wording.badges_html(by_ref[None].latest)
    assert fp[:12] in detail.detail_markdown(by_ref[fp])
