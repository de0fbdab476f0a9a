"""A sixth paper is one folder: tests/data/task_folder/lightness is copied into a temporary
tasks path ($T2IBENCH_TASKS_PATH) and audited through `t2ibench run` (builtin:tiny-sd),
the report, `t2ibench validate`, the leaderboard table and the human labeller's questions,
with no other file edited."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "tests" / "data" / "task_folder" / "lightness"


@pytest.fixture(scope="module")
def sixth(tmp_path_factory):
    base = tmp_path_factory.mktemp("sixth")
    shutil.copytree(FOLDER, base / "tasks" / "lightness")
    env = {**os.environ, "T2IBENCH_TASKS_PATH": str(base / "tasks"), "T2IBENCH_CACHE": str(base / "cache"),
           "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def call(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)

    run = base / "run"
    proc = call("-m", "benchmark.cli", "run", "--model", "builtin:tiny-sd", "--suites", "lightness_shapes",
                "--n-resamples", "50", "--quiet", "--out", str(run))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run, call


def test_the_folder_is_audited_scored_and_reported(sixth):
    run, _ = sixth
    results = json.loads((run / "results.json").read_text())
    (entry,) = [e for e in results["scores"] if e["name"] == "lightness_mean"]
    manifest = pd.read_parquet(run / "manifest.parquet")
    assert list(manifest["suite"]) == ["lightness_shapes"] * 4
    expected = np.mean([np.asarray(Image.open(run / p).convert("L"), dtype=np.float64).mean()
                        for p in manifest["image_path"]])
    assert entry["value"] == pytest.approx(expected, rel=1e-12) and entry["n"] == 4
    assert entry["ci"]["low"] <= entry["value"] <= entry["ci"]["high"]
    assert {s["name"]: s["status"] for s in results["suites"]} == {"lightness_shapes": "scored"}
    html = (run / "report" / "report.html").read_text()
    assert "Lightness: a toy sixth paper" in html and "A Toy Paper on Image Lightness" in html
    assert (run / "report" / "lightness.png").is_file() or list((run / "report").rglob("lightness.png"))


def test_validate_the_leaderboard_and_the_human_labeller_ask_the_folder(sixth):
    run, call = sixth
    proc = call("-m", "benchmark.cli", "validate", "--allow-demo", str(run / "results.json"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    script = ("import json, sys\n"
              "from submissions.leaderboard import board_model, board_table, results_files, score_columns\n"
              "from benchmark.human.items import build_items\n"
              "board = results_files.load_folder(sys.argv[1])\n"
              "table = board_table.leaderboard_table(board_model.model_rows(board.submissions), view=score_columns.ALL_SCORES)\n"
              "items = build_items(sys.argv[1])\n"
              "print(json.dumps({'headers': table.headers, 'skipped': len(board.skipped),\n"
              "                  'questions': sorted({(i.question_type, i.question) for i in items})}))\n")
    proc = call("-c", script, str(run))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["skipped"] == 0 and any("Mean lightness" in h for h in out["headers"]), out
    assert out["questions"] == [["attribute", "Is the picture mostly bright?"]]


def test_listing_order_does_not_depend_on_which_folder_is_imported_first():
    # Whichever folder (or module importing one) comes first, suites, tasks and annotator kinds
    # must still be listed in folder order (results.json keeps that order).
    script = ("import benchmark.tasks.paintskills.scenes, benchmark.human.questions\n"
              "from benchmark.probes import list_suites\n"
              "from benchmark.tasks import list_tasks\n"
              "from benchmark.annotate.registry import list_annotator_kinds\n"
              "print([list_suites()[0], [t.name for t in list_tasks()], list_annotator_kinds()[-1].name])\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == str(["gep_neutral", ["gep", "dalleval", "pst", "mcas", "paintskills"],
                                       "mcas_embeddings"])
