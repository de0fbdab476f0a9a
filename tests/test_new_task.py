"""`t2ibench new-task NAME` writes a task folder from the template that audits builtin:tiny-sd
with no other edit; bad names are refused in one line; a run made with the folder records it
in run_config.json, and its later stages in a shell without $T2IBENCH_TASKS_PATH say which
folder to point at."""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
       "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
ENV.pop("T2IBENCH_TASKS_PATH", None)


def t2ibench(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchmark.cli", *args], capture_output=True, text=True,
                          env={**ENV, **env}, cwd=cwd, timeout=600)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """`new-task toy` in an empty folder, then a 4-image run with the folder it wrote."""
    base = tmp_path_factory.mktemp("newtask")
    made = t2ibench("new-task", "toy", cwd=base)
    assert made.returncode == 0, made.stderr
    tasks = base / "tasks"
    run = t2ibench("run", "--model", "builtin:tiny-sd", "--suites", "toy_people", "--limit", "4",
                   "--n-resamples", "20", "--quiet", "--out", "run", cwd=base, T2IBENCH_TASKS_PATH=str(tasks))
    assert run.returncode == 0, run.stderr[-3000:]
    return base, tasks, made.stdout


def test_the_written_folder_runs_at_once_and_scores_with_its_own_formula(toy):
    base, tasks, printed = toy
    assert sorted(p.relative_to(tasks / "toy").as_posix() for p in (tasks / "toy").rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts) == [
        "README.md", "__init__.py", "citation.py", "data/table1.csv", "metadata.py", "paper_checks.py", "probes.py",
        "probes.yaml", "scores.py", "task.py"]
    assert f"export T2IBENCH_TASKS_PATH={tasks.resolve()}" in printed.splitlines()
    results = json.loads((base / "run" / "results.json").read_text())
    (entry,) = [e for e in results["scores"] if e["name"] == "toy_darker_share"]
    skin = pd.read_parquet(base / "run" / "labels" / "skin_tone.parquet")
    assert entry["n"] == 4 and entry["value"] == pytest.approx(float((skin["mst"] >= 6).mean()))
    assert entry["paper"] == "toy" and {s["name"]: s["status"] for s in results["suites"]} == {"toy_people": "scored"}


def test_run_config_records_the_folder_and_its_hash(toy):
    base, tasks, _ = toy
    from benchmark.tasks.folder_record import tree_sha256

    (record,) = json.loads((base / "run" / "run_config.json").read_text())["task_folders"]
    assert record == {"kind": "task folder", "name": "toy", "path": str((tasks / "toy").resolve()),
                      "sha256": tree_sha256(tasks / "toy")}


def test_later_stages_without_the_variable_say_which_folder_to_point_at(toy):
    base, tasks, _ = toy
    before = (base / "run" / "results.json").read_bytes()
    want = f"set T2IBENCH_TASKS_PATH={tasks.resolve()}"
    for stage in ("score", "report"):
        proc = t2ibench(stage, "run", cwd=base)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, (stage, proc.stderr)
        assert proc.stderr.startswith("t2ibench: error: this run used task folder toy from ") and want in proc.stderr
    assert (base / "run" / "results.json").read_bytes() == before  # score refused before it wrote anything
    verify = t2ibench("verify", "run", cwd=base)
    assert verify.returncode == 0 and want in verify.stdout and verify.stdout.count("\n") == 1, verify.stdout
    validate = t2ibench("validate", "run/results.json", "--allow-demo", cwd=base)
    assert validate.returncode == 1 and validate.stdout.count("\n") == 1, (validate.stdout, validate.stderr)
    assert validate.stdout.startswith("run/results.json: this run used task folder toy from ") and want in validate.stdout


@pytest.mark.parametrize(("name", "says"), [
    ("Toy-2", "'Toy-2' is not a lowercase Python identifier"),
    ("class", "'class' is not a lowercase Python identifier"),
    ("gep", "the task folder or module 'gep' exists already"),
    ("registry", "the task folder or module 'registry' exists already"),
    ("taken", "exists already: choose another NAME or --out"),
    ("a" * 300, "is longer than 40 characters"),
    ("gep_neutral", "the suite 'gep_neutral' exists already"),
    ("mcas_targets", "the suite 'mcas_targets' exists already"),
    ("mad_gender", "the score 'mad_gender' exists already"),
])
def test_bad_names_are_refused_in_one_line(tmp_path, name, says):
    """A name the command line's type refuses (syntax, length) is a usage error of ``new-task``;
    one the registries hold already is refused by the command before it writes anything."""
    (tmp_path / "tasks" / "taken").mkdir(parents=True)
    proc = t2ibench("new-task", name, cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith(("t2ibench: error: new-task: ", "t2ibench new-task: error: "))
    assert says in proc.stderr
    assert proc.stderr.count("\n") == 1 and sorted(p.name for p in (tmp_path / "tasks").iterdir()) == ["taken"]


def test_the_template_ships_in_the_wheel():
    # setuptools copies package data by the globs of pyproject.toml: every template file must match one
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = setuptools["package-data"]["benchmark.tasks"]
    template = ROOT / "benchmark" / "tasks" / "template"
    files = [p.relative_to(template.parent).as_posix() for p in template.rglob("*") if p.is_file()]
    assert files and all(p.endswith(".tmpl") for p in files), files
    assert [p for p in files if not any(fnmatch.fnmatch(p, g) and p.count("/") == g.count("/") for g in globs)] == []


def test_a_run_of_the_builtin_folders_records_none_and_a_missing_plugin_is_named():
    from benchmark.probes import list_suites
    from benchmark.tasks.folder_record import missing_folder_line, outside_task_folders

    assert outside_task_folders(list_suites()) == []  # so run_config.json of a built-in audit is as it was
    present = {"kind": "task folder", "name": "gep", "path": "/elsewhere/gep", "sha256": "0" * 64}
    plugin = {"kind": "plugin", "name": "mine.toy_plugin", "path": "/src/mine/toy_plugin.py", "sha256": "ab" * 32}
    assert missing_folder_line({"task_folders": [present]}) is None
    assert missing_folder_line({"task_folders": [present, plugin]}) == (
        "this run used plugin mine.toy_plugin from /src/mine/toy_plugin.py (sha256 abababababab...): pass --plugin "
        "mine.toy_plugin with /src on PYTHONPATH")


def test_the_published_run_config_keeps_the_folder_hash_not_the_local_path(toy):
    # `t2ibench submit --push-images` publishes run_config.json: the outside folder's path on this
    # machine is cut to its name; the hash stays, and the line for a missing folder still helps.
    base, tasks, _ = toy
    from benchmark.tasks.folder_record import missing_folder_line
    from submissions.submit import images_dataset_files

    (config_file,) = [f for f in images_dataset_files(base / "run") if f.path_in_repo == "run_config.json"]
    published = json.loads(config_file.data())
    local = json.loads((base / "run" / "run_config.json").read_text())
    assert str(tasks.resolve()) not in config_file.data().decode()
    assert published["task_folders"] == [{**local["task_folders"][0], "path": "toy"}]
    assert {k: v for k, v in published.items() if k != "task_folders"} == {
        k: v for k, v in local.items() if k != "task_folders"}
    assert missing_folder_line(published) == (
        f"this run used task folder toy (sha256 {local['task_folders'][0]['sha256'][:12]}...): set "
        "T2IBENCH_TASKS_PATH to the folder holding toy/")
