"""The task registry and the three ways a user extends the benchmark, each through `t2ibench run`:

* a probe variant (a YAML file, no code): GEP with a third group, audited from a probe folder;
* a new suite of an existing task (a config plus one `register_suite` call in a plugin);
* a new task (a plugin with its own suite, label file, annotator, score and scorer).

Also: the run folder and results.json record the probe set; a config a task cannot score is
refused in one line; the Hub path of `--probes`; the mcas evaluate module reproduces the
number in results.json from the run's embeddings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from benchmark.cli import main
from benchmark.probes import load_config
from benchmark.probes.source import open_probe_set, rows_fingerprint

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = Path(__file__).resolve().parent / "plugins"


def t2ibench(*args: str, cache: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "T2IBENCH_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(PLUGINS), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "benchmark.cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


@pytest.fixture(scope="module")
def model_cache(tmp_path_factory) -> Path:
    """The built-in tiny models' cache of this worker (conftest's ``cache`` fixture and the doc
    examples use the same folder): each tiny model is built once per worker, not once per file."""
    return tmp_path_factory.getbasetemp() / "t2ibench-cache"


def entries(results: dict, name: str) -> list[dict]:
    return [e for e in results["scores"] if e["name"] == name]


# --------------------------------------------------------------------------- the registry


def test_every_builtin_suite_has_exactly_one_task():
    from benchmark.probes import get_suite, list_suites
    from benchmark.tasks import list_tasks, task_of_family

    assert [t.name for t in list_tasks()][:5] == ["gep", "dalleval", "pst", "mcas", "paintskills"]
    for suite in list_suites():
        task = task_of_family(get_suite(suite).family)
        assert task is not None, suite


@pytest.mark.parametrize("stage", sorted(p.name for p in (ROOT / "benchmark" / "runner").glob("*.py")))
def test_no_suite_or_label_list_outside_the_registries(stage):
    """The runner names no paper: no suite, no suite list, no paper's detail table in its code
    (the report's sections, figures, tables, image layouts and extra labels come from the tasks)."""
    import re

    from benchmark.probes import list_suites

    names = [*list_suites(), "GEP_SUITES", "PAIRED_SUITES", "MCAS_SUITES", "PST_SUITES", "gep_vectors",
             "pst_micro_sts", "mcas_per_target", "mcas_per_category", "dalleval_gender", "dalleval_attributes"]
    text = (ROOT / "benchmark" / "runner" / stage).read_text()
    found = [n for n in names if re.search(rf"\b{n}\b", text)]
    assert not found, f"{stage} names {found}"


# --------------------------------------------------------------------------- probe sets


def test_builtin_and_folder_probes_have_the_same_fingerprint(tmp_path):
    from benchmark.probes.dataset import build_probe_dataset

    build_probe_dataset(tmp_path / "p", ["gep_neutral", "pst_single"])
    folder = open_probe_set(tmp_path / "p")
    builtin = open_probe_set()
    assert folder.kind == "folder" and builtin.kind == "builtin"
    rec_f, rec_b = folder.record(["gep_neutral", "pst_single"]), builtin.record(["gep_neutral", "pst_single"])
    assert rec_f["fingerprint"] == rec_b["fingerprint"] and len(rec_f["fingerprint"]) == 64
    assert rec_f["suites"] == {"gep_neutral": "gep", "pst_single": "pst"}
    assert rec_f["configs"]["gep"] == load_config("gep")
    with pytest.raises(ValueError, match="unknown suite 'dalleval_bias'"):
        folder.record(["dalleval_bias"])
    # one changed prompt changes the fingerprint
    t = builtin.table(["gep_neutral"]).copy()
    t.loc[0, "prompt"] = "A woman sitting at a bench."
    assert rows_fingerprint(t) != rows_fingerprint(builtin.table(["gep_neutral"]))


def test_probe_source_errors(tmp_path):
    with pytest.raises(ValueError, match="not a probe dataset"):
        open_probe_set(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        open_probe_set("./no/such/folder")
    with pytest.raises(ValueError, match="does not apply to the local folder"):
        open_probe_set(tmp_path, revision="main")


def test_hub_probe_source_is_downloaded_at_its_resolved_commit(tmp_path, monkeypatch):
    """A Hub dataset ID is downloaded at the commit its revision resolves to, which the record keeps."""
    import huggingface_hub

    from benchmark.probes.dataset import build_probe_dataset

    build_probe_dataset(tmp_path / "snapshot", ["pst_single"])
    calls = {}

    class Info:
        sha = "a" * 40

    def dataset_info(self, repo_id, revision=None, **kw):
        calls["info"] = (repo_id, revision)
        return Info()

    def snapshot_download(repo_id, repo_type=None, revision=None, allow_patterns=None, **kw):
        calls["download"] = (repo_id, repo_type, revision)
        return str(tmp_path / "snapshot")

    monkeypatch.setattr(huggingface_hub.HfApi, "dataset_info", dataset_info)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    ps = open_probe_set("acme/t2i-bias-probes", "v1.0")
    assert calls == {"info": ("acme/t2i-bias-probes", "v1.0"), "download": ("acme/t2i-bias-probes", "dataset", "a" * 40)}
    rec = ps.record(["pst_single"])
    assert (rec["kind"], rec["source"], rec["revision"]) == ("hub", "acme/t2i-bias-probes", "a" * 40)
    assert len(ps.table(["pst_single"])) == 336


# --------------------------------------------------------------------------- case 1: a probe variant


@pytest.fixture(scope="module")
def nonbinary_run(tmp_path_factory, model_cache):
    """GEP neutral with a third group: a YAML variant, a probe folder, an audit of the folder."""
    root = tmp_path_factory.mktemp("variant")
    config = load_config("gep")
    config["genders"].append({"name": "non-binary person", "indicator": "A non-binary person"})
    config["classifier_people"] = [*config["classifier_people"], "A non-binary person"]
    (root / "gep_nonbinary.yaml").write_text(yaml.safe_dump(config))
    # the probe folder in this process (`t2ibench probes build` loads no model: a process would only add start-up)
    assert main(["probes", "build", "--out", str(root / "probes"), "--suites", "gep_neutral", "--config",
                 f"gep={root / 'gep_nonbinary.yaml'}"]) == 0
    run = t2ibench("run", "--model", "builtin:tiny-sd", "--probes", str(root / "probes"), "--suites", "gep_neutral",
                   "--limit", "48", "--n-resamples", "50", "--quiet", "--out", str(root / "run"), cache=model_cache)
    assert run.returncode == 0, run.stderr[-3000:]
    return root / "run"


def test_variant_probe_set_scores_every_pair_of_groups(nonbinary_run):
    results = json.loads((nonbinary_run / "results.json").read_text())
    manifest = pd.read_parquet(nonbinary_run / "manifest.parquet")
    assert set(manifest["gender"]) == {"woman", "man", "non-binary person"}
    assert manifest["prompt"].str.startswith("A non-binary person").sum() == 16
    gep = entries(results, "gep_score_neutral")
    subsets = {e["subset"] for e in gep}
    assert subsets == {None, "woman vs non-binary person", "man vs non-binary person"}
    for e in gep:
        assert e["estimator"] in ("C", "CC", "CLS")
    new = [e for e in gep if e["subset"] and "non-binary" in e["subset"] and e["estimator"] == "CLS"]
    assert len(new) == 2 and all(e["defined"] and 0 <= e["value"] <= 1 for e in new)
    # the CLS training sentences of the variant include its third indicator
    vectors = pd.read_parquet(nonbinary_run / "scores" / "gep_vectors.parquet")
    assert {("woman", "non-binary person"), ("man", "non-binary person"), ("woman", "man")} <= set(
        zip(vectors["group_a"], vectors["group_b"]))


def test_variant_run_records_where_its_probes_came_from(nonbinary_run):
    config = json.loads((nonbinary_run / "run_config.json").read_text())
    results = json.loads((nonbinary_run / "results.json").read_text())
    probes = config["probes"]
    assert probes["kind"] == "folder" and probes["source"].endswith("probes")
    assert probes["configs"]["gep"]["genders"][-1]["name"] == "non-binary person"
    assert results["probes"] == {k: probes[k] for k in ("kind", "source", "revision", "fingerprint")}
    assert probes["fingerprint"] != open_probe_set().record(["gep_neutral"])["fingerprint"]


def test_pst_config_that_is_not_binary_is_refused_in_one_line(tmp_path, model_cache):
    from benchmark.probes.dataset import build_probe_dataset

    build_probe_dataset(tmp_path / "p", ["pst_single"])
    manifest = json.loads((tmp_path / "p" / "probe_set.json").read_text())
    manifest["configs"]["pst"]["occupations"]["non-binary"] = ["artist"]
    (tmp_path / "p" / "probe_set.json").write_text(json.dumps(manifest))
    proc = t2ibench("run", "--model", "builtin:tiny-sd", "--probes", str(tmp_path / "p"), "--out",
                    str(tmp_path / "run"), "--quiet", cache=model_cache)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.strip().splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("t2ibench: error:") and "binary by definition" in errors[0], \
        proc.stderr
    assert not (tmp_path / "run").exists()


# --------------------------------------------------------------------------- cases 2 and 3: plugins


@pytest.fixture(scope="module")
def plugin_run(tmp_path_factory, model_cache):
    """The plugins' suites, and MCAS's two suites for the mcas module's test below: one audit
    instead of two (each test reads only its own suites; --limit 16 leaves the plugins' 8 and 16)."""
    out = tmp_path_factory.mktemp("plugins") / "run"
    proc = t2ibench("--plugin", "toy_task", "--plugin", "gep_short_suite", "run", "--model", "builtin:tiny-sd",
                    "--suites", "toy_brightness", "gep_neutral_short", "mcas_attributes", "mcas_targets", "--limit",
                    "16", "--n-resamples", "100", "--quiet", "--out", str(out), cache=model_cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_a_new_task_from_a_plugin_runs_end_to_end(plugin_run):
    from PIL import Image

    results = json.loads((plugin_run / "results.json").read_text())
    (toy,) = entries(results, "toy_brightness")
    manifest = pd.read_parquet(plugin_run / "manifest.parquet")
    rows = manifest[manifest["suite"] == "toy_brightness"]
    assert len(rows) == 8
    expected = np.mean([np.asarray(Image.open(plugin_run / p).convert("RGB"), dtype=np.float64).mean()
                        for p in rows["image_path"]])
    assert toy["value"] == pytest.approx(expected, rel=1e-12) and toy["n"] == 8
    assert toy["ci"]["low"] <= toy["value"] <= toy["ci"]["high"]
    labels = pd.read_parquet(plugin_run / "labels" / "brightness.parquet")
    assert len(labels) == 8 and set(labels["annotator"]) == {"mean-pixel"}
    status = {s["name"]: s for s in results["suites"]}
    assert status["toy_brightness"]["status"] == "scored"


def test_a_new_suite_of_an_existing_task_is_scored_by_it(plugin_run):
    results = json.loads((plugin_run / "results.json").read_text())
    short = [e for e in entries(results, "gep_score_neutral") if e["suite"] == "gep_neutral_short"]
    assert {e["estimator"] for e in short} == {"C", "CC", "CLS"} and all(e["subset"] is None for e in short)
    manifest = pd.read_parquet(plugin_run / "manifest.parquet")
    assert (manifest["suite"] == "gep_neutral_short").sum() == 2 * 4 * 2  # 2 groups x 4 contexts x 2 images


# --------------------------------------------------------------------------- MCAS over encoders


def test_mcas_module_reproduces_results_json_from_the_run_embeddings(plugin_run, monkeypatch):
    import evaluate

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    run = plugin_run  # MCAS's suites at --limit 16, --n-resamples 100
    results = json.loads((run / "results.json").read_text())
    (want,) = [e for e in entries(results, "mcas") if e["subset"] is None]
    emb = pd.read_parquet(run / "labels" / "embeddings.parquet")
    module = evaluate.load(str(ROOT / "metrics" / "mcas"))
    got = module.compute(embeddings=[list(map(float, v)) for v in emb["embedding"]], roles=list(emb["role"]),
                         targets=list(emb["target"]), encoders=list(emb["encoder"]),
                         image_ids=list(emb["probe_id"]), drop_targets_without_images=True, n_resamples=100,
                         random_state=0)
    assert got["mcas"] == want["value"]
    assert (got["mcas_ci"]["low"], got["mcas_ci"]["high"]) == (want["ci"]["low"], want["ci"]["high"])
    (db,) = entries(results, "diffusion_bias")
    assert got["diffusion_bias"] == db["value"]
