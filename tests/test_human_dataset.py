"""End to end on a tiny run: human answers written through the app's storage, then
`t2ibench agreement` (tables + report files) and the human-labels dataset folder, which
`datasets.load_dataset` reads offline in both configs; pushing offline fails in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import datasets
import numpy as np
import pandas as pd
import pytest
import yaml

from benchmark.human.agreement_cli import agreement_markdown, agreement_tables
from benchmark.human.answers_file import append_event
from benchmark.human.items import build_items, event_for
from benchmark.human.replay import read_answers
from benchmark.tasks.gep.questions import GEP_INSTRUCTIONS
from benchmark.tasks.pst.questions import PST_PREAMBLE
from benchmark.human.label_dataset import build_labels_dataset

ANNOTATORS = ("ann1", "ann2", "ann3")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("human")
    out = root / "run"
    env = {**os.environ, "T2IBENCH_CACHE": str(root / "cache"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "benchmark.cli", "run", "--model", "builtin:tiny-sd", "--out", str(out),
                           "--suites", "gep_neutral", "pst_paired_occupation", "dalleval_bias", "--limit", "4",
                           "--n-resamples", "50", "--quiet"], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    items = build_items(out)
    rng = np.random.default_rng(0)
    for it in items:
        truth = it.options[rng.integers(len(it.options))]
        for ann in ANNOTATORS:
            answer = truth if rng.random() < 0.75 else it.options[rng.integers(len(it.options))]
            append_event(out, event_for(it, "answer", ann, answer))
    return out


def test_agreement_tables_from_the_run(run_dir):
    t = agreement_tables(run_dir)
    answers = read_answers(run_dir)
    ia = t["inter_annotator"].set_index("question_type")
    assert set(ia.index) == set(answers["question_type"])
    assert ia["n_answers"].sum() == len(answers) and (ia["n_annotators"] == 3).all()
    assert (ia["fleiss_raters"] == 3).all()
    assert set(t["attribute_auc_summary"]["estimator"]) == {"C", "CC", "CLS", "vqa closed-set"}
    assert set(t["gep_agreement"]["suite"]) == {"gep_neutral"}
    assert {"single", "paired"} <= set(t["gender_kappa"]["setting"])
    assert "skin_tone" in t
    md = agreement_markdown(run_dir)
    assert md.startswith("## Human labels and agreement") and "Fleiss" in md
    assert "### Perceived gender: Cohen's kappa, VQA vs humans" in md


def test_agreement_command_writes_report(run_dir, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "benchmark.cli", "agreement", str(run_dir)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Agreement between annotators" in proc.stdout
    md = (run_dir / "report" / "agreement.md").read_text()
    doc = json.loads((run_dir / "report" / "agreement.json").read_text())  # strict JSON: no NaN
    assert md.startswith("## Human labels and agreement")
    assert doc["summary"]["n_answers"] == len(read_answers(run_dir))
    assert {r["question_type"] for r in doc["inter_annotator"]} >= {"attribute", "gender_paired"}
    bad = subprocess.run([sys.executable, "-m", "benchmark.cli", "agreement", str(tmp_path)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and bad.stderr.strip().startswith("t2ibench: error:") and len(bad.stderr.strip().splitlines()) == 1


def test_run_report_embeds_the_human_agreement_tables(run_dir):
    """The report shows the tables `t2ibench agreement` wrote (report/agreement.json), none before."""
    from benchmark.cli import main
    from benchmark.runner.report import write_report

    (run_dir / "report" / "agreement.json").unlink(missing_ok=True)
    write_report(run_dir)
    assert "Human labels and agreement" not in (run_dir / "report" / "report.md").read_text()
    assert main(["agreement", str(run_dir)]) == 0
    html_path = write_report(run_dir)
    md = (run_dir / "report" / "report.md").read_text()
    assert "## Human labels and agreement" in md and "Agreement between annotators" in md
    assert "Perceived gender: Cohen's kappa" in md
    assert "Human labels and agreement" in html_path.read_text()


@pytest.mark.parametrize("embed", [True, False])
def test_labels_dataset_loads_offline(run_dir, tmp_path, monkeypatch, embed):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "labels"
    info = build_labels_dataset(run_dir, out, embed_images=embed, license="cc-by-sa-4.0", pay="$1 per 10 images")
    answers = read_answers(run_dir)
    # a cache of our own: datasets may reuse a cached build of an earlier folder at the same path
    cache = str(tmp_path / "hf-cache")
    items = datasets.load_dataset(str(out), "items", split="train", cache_dir=cache)
    raw = datasets.load_dataset(str(out), "answers", split="train", cache_dir=cache)
    assert items.num_rows == answers["item_id"].nunique() == info["n_items"]
    assert raw.num_rows == len(answers)
    assert sorted(raw["answer"]) == sorted(answers["answer"])
    row = items[0]
    assert {a["annotator"] for a in row["answers"]} == set(ANNOTATORS)
    counts = pd.Series([a["answer"] for a in row["answers"]]).value_counts()
    top_tied = int((counts == counts.iloc[0]).sum()) > 1
    assert row["tie"] == top_tied and row["majority"] == (None if top_tied else counts.index[0])
    assert row["agreement"] == pytest.approx(counts.iloc[0] / 3)
    mine = answers[answers["item_id"] == row["item_id"]].sort_values("annotator")
    assert sorted((a["annotator"], a["answer"]) for a in row["answers"]) == list(zip(mine["annotator"], mine["answer"]))
    assert row["question"]  # the question text the app showed
    if embed:
        assert isinstance(items.features["image"], datasets.Image) and row["image"].size[0] > 0
    else:
        assert (run_dir / row["image_file"]).is_file() and len(row["image_sha256"]) == 64
    text = (out / "README.md").read_text()
    header = yaml.safe_load(text[4:].split("\n---\n", 1)[0])
    assert header["license"] == "cc-by-sa-4.0"
    assert {c["config_name"] for c in header["configs"]} == {"items", "answers"}
    assert GEP_INSTRUCTIONS[0] in text and PST_PREAMBLE in text
    assert "$1 per 10 images" in text and "inherit that model's licence" in text and "@inproceedings" in text


def test_push_offline_fails_in_one_line(run_dir, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_TOKEN": "", "OMP_NUM_THREADS": "1"}
    out = tmp_path / "labels"
    proc = subprocess.run([sys.executable, "-m", "dataset_builders.human_labels", str(run_dir), "--out", str(out),
                           "--image-references", "--push-to-hub", "someone/labels"], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "cannot push" in proc.stderr
    assert (out / "README.md").is_file()  # the folder is written before the push is tried


def test_license_other_is_refused_in_one_line(tmp_path):
    # `license: other` needs license_name and license_link on the Hub: refused before any work.
    proc = subprocess.run([sys.executable, "-m", "dataset_builders.human_labels", str(tmp_path / "run"), "--out",
                           str(tmp_path / "labels"), "--license", "other"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "t2ibench: error: --license other is not supported: give the labels' licence by its Hub id "
        "(for example cc-by-4.0, cc0-1.0, mit)"]
    assert not (tmp_path / "labels").exists()
