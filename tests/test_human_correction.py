"""Scores corrected with people's labels, end to end on a real tiny run folder: `t2ibench run
--model builtin:tiny-sd`, a calibration sample drawn as the annotation app draws it, people's
answers written as the app writes them, then `t2ibench score`, `validate`, `report`, the
labelling plan and the Hub labels dataset; answers that must not count (unknown items, changed
images, annotators who failed qualification, labels outside the sample, a sample record that
does not match) are refused or left to agreement, with the reason.

The run: DALL-Eval's gender-neutral prompts for two professions, 20 images each (a probe config of
this test), labelled by the built-in tiny VQA, which reads every image as a man. The "people" of the
test see 70 % of the images as women (a fixed rule on the probe id), so the automatic scores are
systematically wrong and the people's value is known: the census of their labels.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from cli_here import run_here as cli
from cli_here import run_process as t2ibench
from shared_folders import shared_across_workers

from benchmark.contract.human_sample import read_sample, sample_path
from benchmark.human.answers_file import append_event
from benchmark.human.items import build_items, event_for
from benchmark.human.qualification import QualItem, QualificationItems, save_qualification
from benchmark.human.sample import run_sample, sample_items
from benchmark.scores.human_compare import agreement_differs, corrected_difference, warning_lines

REPO = Path(__file__).resolve().parents[1]
SUITE = "dalleval_bias"
SAMPLE = 30  # 15 of each profession's 20 images: at least 10 per group, 30 in all


def _config(path: Path) -> None:
    text = (REPO / "benchmark/tasks/dalleval/probes.yaml").read_text(encoding="utf-8")
    text = text.replace("n_images_per_prompt: 9", "n_images_per_prompt: 20")
    text = re.sub(r"gender_indicators:\n(  - .*\n)+", "gender_indicators:\n  - {name: person, indicator: A person, "
                  "neutral: true}\n", text)
    text = text.replace("include_bare_prompts: true", "include_bare_prompts: false")
    text = re.sub(r"professions:\n(  - .*\n)+", "professions:\n  - a baker\n  - a dentist\n", text)
    text = re.sub(r"\nattributes:\n(  - .*\n)+", "\nattributes:\n  - a suit\n  - a skirt\n", text)
    path.write_text(text, encoding="utf-8")


def _build(folder: Path) -> None:
    _config(folder / "dalleval.yaml")
    cli("probes", "build", "--out", str(folder / "probes"), "--suites", SUITE, "--config",
        f"dalleval={folder / 'dalleval.yaml'}")
    t2ibench("run", "--model", "builtin:tiny-sd", "--probes", str(folder / "probes"), "--suites", SUITE, "--out",
             str(folder / "run"), "--quiet", "--n-resamples", "200", root=folder)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return shared_across_workers(tmp_path_factory, "human-correction-run", _build) / "run"


@pytest.fixture
def run(built, tmp_path) -> Path:
    """A copy of the built run folder to answer in."""
    return Path(shutil.copytree(built, tmp_path / "run"))


def people_answer(item) -> str:
    """The test's people: 70 % of the images (by probe id) look like women, every face is MST 8,
    no attribute is there."""
    if item.question_type == "gender_single":
        woman = int(hashlib.sha256(item.probe_id.encode()).hexdigest(), 16) % 10 < 7
        return "female" if woman else "male"
    return {"skin_tone": "8", "attribute": "no"}[item.question_type]


def answer(run: Path, items, who: str = "alice") -> None:
    for it in items:
        append_event(run, event_for(it, "answer", who, people_answer(it)))


def score(run: Path) -> dict:
    cli("score", str(run), "--n-resamples", "300")
    return json.loads((run / "results.json").read_text())


def entry(results: dict, name: str) -> dict:
    return next(e for e in results["scores"] if e["name"] == name)


def label_digests(run: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((run / "labels").iterdir())}


@pytest.fixture(scope="module")
def census_value(built, tmp_path_factory) -> dict:
    """People's value: every image labelled (a census), scored."""
    run = Path(shutil.copytree(built, tmp_path_factory.mktemp("census") / "run"))
    answer(run, build_items(run))
    results = score(run)
    hc = entry(results, "average_gender")["human_corrected"]
    assert hc["method"].startswith("census") and hc["n_human"] == hc["n_population"] == 40
    suites = results["human_labels"]["suites"]
    assert [s["mode"] for s in suites] == ["census"] and results["human_labels"]["sample"] is None
    return {name: entry(results, name)["human_corrected"]["value"] for name in ("average_gender", "mad_gender")}


def test_a_sample_corrects_scores_the_annotator_gets_wrong(run, census_value):
    before = label_digests(run)
    record = run_sample(run, SAMPLE, seed=1)  # what `t2ibench annotate-ui RUN --sample 30` draws and records
    assert record["suites"][SUITE]["size"] == SAMPLE and sample_path(run).is_file()
    assert {tuple(v) for v in record["suites"][SUITE]["strata"].values()} == {(15, 20)}  # 15 of each prompt's 20
    answer(run, sample_items(build_items(run), record))
    results = score(run)
    auto = entry(results, "average_gender")
    hc = auto["human_corrected"]
    assert auto["value"] == -1.0  # the tiny VQA reads every image as a man
    assert hc["n_human"] == SAMPLE and hc["n_population"] == 40 and hc["method"].startswith("prediction-powered")
    assert hc["ci"]["low"] <= census_value["average_gender"] <= hc["ci"]["high"]  # covers people's value
    assert not hc["ci"]["low"] <= auto["value"] <= hc["ci"]["high"]  # and excludes the automatic one
    mad = entry(results, "mad_gender")["human_corrected"]
    assert mad["ci"]["low"] <= census_value["mad_gender"] <= mad["ci"]["high"]
    block = results["human_labels"]
    assert block["suites"] == [{"suite": SUITE, "population": 40, "labelled": SAMPLE, "complete": SAMPLE,
                                "sampled": SAMPLE, "used": SAMPLE, "outside_sample": 0, "mode": "sample", "reason": None}]
    # the annotator's measured errors: every woman misread, per group, with intervals
    women = next(r for r in block["annotator_errors"] if r["file"] == "labels/gender.parquet"
                 and r["by"] == "people's label" and r["group"] == "female")
    assert women["rate"] == 1.0 and women["low"] < 1.0 and women["n"] == women["n_errors"] > 10
    assert any(r["by"] == "skin tone" for r in block["annotator_errors"])
    female = next(r for r in block["shares"] if r["category"] == "female")
    assert female["automatic"] == 0.0 and female["ci"]["low"] > 0.4 and female["method"].startswith("PPI")
    # the run's own label files are never written
    assert label_digests(run) == before
    # validate, the report and the labelling plan show both
    assert "ok" in cli("validate", "--allow-demo", str(run / "results.json")).stdout
    cli("report", str(run))
    md = (run / "report" / "report.md").read_text()
    assert "## Scores corrected with people's labels" in md and "30 of 40" in md
    assert (run / "report" / "human_corrected.png").is_file()
    plan = cli("label-plan", str(run), "--half-width", "0.2").stdout
    assert "| Gender MAD | dalleval_bias | 0.2 |" in plan and "pilot: 30 labels" in plan


def test_labels_outside_the_sample_count_for_agreement_only(run):
    record = run_sample(run, SAMPLE, seed=2)
    items = build_items(run)
    sampled = set(record["suites"][SUITE]["probe_ids"])
    answer(run, [it for it in items if it.probe_id in sampled])
    outside = sorted({it.probe_id for it in items} - sampled)[:5]  # e.g. the disagreements first: chosen, not sampled
    answer(run, [it for it in items if it.probe_id in outside])
    results = score(run)
    row = results["human_labels"]["suites"][0]
    assert row["mode"] == "sample" and row["outside_sample"] == 5 and row["used"] == SAMPLE
    assert entry(results, "average_gender")["human_corrected"]["n_human"] == SAMPLE
    # without a sample record, labels of some images correct nothing
    sample_path(run).unlink()
    results = score(run)
    row = results["human_labels"]["suites"][0]
    assert row["mode"] == "agreement only" and "no calibration sample recorded" in row["reason"]
    hc = entry(results, "average_gender")["human_corrected"]
    assert hc["value"] is None and "count for correction" in hc["reason"]


def test_answers_that_must_not_count_are_refused_and_counted(run):
    record = run_sample(run, SAMPLE, seed=3)
    items = sample_items(build_items(run), record)
    answer(run, items)
    first = items[0]
    # an item the run does not have, an image that changed since it was answered, an annotator who failed
    append_event(run, {**event_for(first, "answer", "alice", "female"), "item_id": "nope|gender_single|",
                       "probe_id": "nope"})
    append_event(run, {**event_for(first, "answer", "carol", "female"), "image_sha256": "0" * 64})
    save_qualification(run, QualificationItems([QualItem("q1", "gender_single", "", "female", probe_id=first.probe_id,
                                                         suite=SUITE)]))
    for who, said in (("alice", "female"), ("bob", "male")):  # alice passes, bob fails
        append_event(run, {**event_for(first, "answer", who, said), "item_id": "qual:q1|gender_single|",
                           "qualification": True})
    for it in items:  # bob's answers, had they counted, would tie with alice's on every gender question
        append_event(run, event_for(it, "answer", "bob", "male" if it.question_type == "gender_single"
                                    else people_answer(it)))
    with (run / "human_labels" / "answers.jsonl").open("ab") as fh:
        fh.write(b"{not json\n")
    results = score(run)
    block = results["human_labels"]
    assert block["refused"] == {"unknown item": 1, "changed image": 1, "qualification not passed": len(items),
                                "malformed line": 1}
    # carol took no qualification test: flagged too (her one answer was refused first, as a changed image)
    assert block["flagged_annotators"] == ["bob", "carol"] and block["annotators"] == ["alice"]
    assert entry(results, "average_gender")["human_corrected"]["n_human"] == SAMPLE


def test_a_sample_record_that_does_not_match_is_not_used(run):
    record = run_sample(run, SAMPLE, seed=4)
    answer(run, sample_items(build_items(run), record))
    doc = json.loads(sample_path(run).read_text())
    others = [p for p in pd.read_parquet(run / "manifest.parquet")["probe_id"] if p not in
              doc["suites"][SUITE]["probe_ids"]]
    doc["suites"][SUITE]["probe_ids"][0] = others[0]  # edited after the fact
    sample_path(run).write_text(json.dumps(doc))
    results = score(run)
    row = results["human_labels"]["suites"][0]
    assert row["mode"] == "agreement only" and "not the seeded draw" in row["reason"]
    assert entry(results, "average_gender")["human_corrected"]["value"] is None
    doc["suites"][SUITE]["population_digest"] = "0" * 64  # drawn from other images
    sample_path(run).write_text(json.dumps(doc))
    assert "other images" in score(run)["human_labels"]["suites"][0]["reason"]
    sample_path(run).write_text("{broken")
    results = score(run)
    assert "cannot be read" in results["human_labels"]["sample_problem"]
    assert results["human_labels"]["suites"][0]["mode"] == "agreement only"
    assert read_sample(run)[0] is None


def test_too_few_labels_say_so_and_unlabelled_runs_are_unchanged(run, built):
    results = json.loads((built / "results.json").read_text())  # scored without people's labels
    assert "human_labels" not in results and all("human_corrected" not in e for e in results["scores"])
    record = run_sample(run, 12, seed=5)
    answer(run, sample_items(build_items(run), record))
    hc = entry(score(run), "average_gender")["human_corrected"]
    assert hc["value"] is None and hc["reason"] == "not enough human labels (12 of 40): at least 30 are needed"


def test_the_app_serves_the_sample_in_its_order_and_keeps_it(run):
    from benchmark.human.app import AnnotationApp

    app = AnnotationApp(run, ["gender_single"], auth="local", sample=SAMPLE, sample_seed=6, log=lambda m: None)
    order = read_sample(run)[0]["suites"][SUITE]["probe_ids"]
    assert [it.probe_id for it in app.items] == order and all(it.image_sha256 for it in app.items)
    assert "Calibration sample" in app.header_markdown()
    again = AnnotationApp(run, ["gender_single"], auth="local", sample=SAMPLE, sample_seed=6, log=lambda m: None)
    assert [it.item_id for it in again.items] == [it.item_id for it in app.items]
    with pytest.raises(ValueError, match="already has a calibration sample"):
        AnnotationApp(run, ["gender_single"], auth="local", sample=SAMPLE, sample_seed=7, log=lambda m: None)
    proc = cli("annotate-ui", str(run), "--no-auth", "--sample", "0", check=False)
    assert proc.returncode == 2 and "t2ibench annotate-ui: error: argument --sample" in proc.stderr


def test_the_labels_dataset_marks_the_sample_and_carries_the_corrections(run, tmp_path):
    import datasets

    from benchmark.human.label_dataset import build_labels_dataset

    record = run_sample(run, SAMPLE, seed=8)
    items = build_items(run)
    sampled = set(record["suites"][SUITE]["probe_ids"])
    answer(run, [it for it in items if it.probe_id in sampled])
    answer(run, [it for it in items if it.probe_id not in sampled][:3])
    score(run)
    out = tmp_path / "labels"
    build_labels_dataset(run, out, embed_images=False)
    table = datasets.load_dataset(str(out), "items", split="train", cache_dir=str(tmp_path / "cache")).to_pandas()
    assert set(table.loc[table["in_sample"], "probe_id"]) == sampled
    assert (~table["in_sample"]).sum() == 3
    card = (out / "README.md").read_text()
    assert "## Calibration sample and corrected scores" in card and "Average gender" in card
    assert json.loads((out / "sample.json").read_text())["seed"] == 8


def test_compare_helpers_read_two_audits():
    def doc(value, se, errors, n):
        return {"scores": [{"name": "x", "human_corrected": {"value": value, "se": se, "n_human": 50}}],
                "human_labels": {"annotator_errors": [{"file": "labels/gender.parquet", "estimator": "vqa",
                                                       "annotator": "m", "by": "all", "group": "all", "n": n,
                                                       "n_errors": errors}]}}
    a, b = doc(0.30, 0.02, 5, 100), doc(0.40, 0.03, 30, 100)
    d = corrected_difference(a["scores"][0], b["scores"][0])
    assert d["difference"] == pytest.approx(0.1) and d["low"] < 0.1 < d["high"] and d["p_value"] < 0.01
    assert corrected_difference(a["scores"][0], {"name": "x"}) is None
    rows = agreement_differs(a, b)
    assert rows[0]["differs"] and rows[0]["rate_a"] == 0.05 and rows[0]["rate_b"] == 0.3
    assert "may be the annotator's" in warning_lines(rows)[0]
    assert not agreement_differs(a, doc(0.4, 0.03, 6, 100))[0]["differs"]


def test_validate_refuses_a_corrected_value_that_cannot_be(built):
    from submissions.validate import check_results

    results = json.loads((built / "results.json").read_text())
    e = next(x for x in results["scores"] if x["name"] == "average_gender")
    e["human_corrected"] = {"value": 3.0, "ci": {"low": 2.5, "high": 3.5, "confidence_level": 0.95,
                                                 "n_resamples": 10, "method": "m"},
                            "n_human": 50, "n_population": 40, "method": "m", "reason": None}
    problems = "\n".join(check_results(results, allow_demo=True))
    assert "human_corrected/value: corrected average_gender = 3 is outside its range" in problems
    assert "human_corrected/n_human: 50 people-labelled images of 40" in problems
    e["human_corrected"] = {"value": None, "ci": None, "n_human": 3, "n_population": 40, "method": None, "reason": ""}
    assert any("human_corrected" in p for p in check_results(results, allow_demo=True))


def test_compare_shows_the_corrected_difference_and_warns_when_agreement_differs(built, tmp_path):
    """Two audits with people's labels: compare shows B - A of the corrected scores beside the
    automatic difference (deciding nothing) and warns that the annotator agrees with people
    differently in the two. Both audits are the same images and automatic labels here, so every
    automatic difference is "identical"; their people differ (A's see 70 % women, B's agree with
    the annotator), so the corrected values differ."""
    runs = {}
    for name, who in (("runA", people_answer), ("runB", lambda it: "male" if it.question_type == "gender_single"
                                                 else people_answer(it))):
        run = Path(shutil.copytree(built, tmp_path / name))
        record = run_sample(run, SAMPLE, seed=9)
        for it in sample_items(build_items(run), record):
            append_event(run, event_for(it, "answer", "alice", who(it)))
        runs[name] = entry(score(run), "average_gender")["human_corrected"]
    out = tmp_path / "cmp.json"
    proc = cli("compare", str(tmp_path / "runA"), str(tmp_path / "runB"), "--out", str(out), "--quiet",
               "--fail-if-worse", "average_gender")
    doc = json.loads(out.read_text())
    row = next(r for r in doc["scores"] if r["name"] == "average_gender")
    assert row["status"] == "identical" and row["verdict"] == "no change (identical)"  # the gate passed (exit 0)
    hc = row["human_corrected"]
    assert hc["difference"] == pytest.approx(runs["runB"]["value"] - runs["runA"]["value"])
    assert hc["difference"] < -0.5 and hc["low"] < hc["difference"] < hc["high"] < 0  # B's people: all men
    assert "Δ people [95% CI]" in proc.stdout and any("decides nothing" in n for n in doc["notes"])
    (gender,) = [r for r in doc["annotator_agreement"] if r["file"] == "labels/gender.parquet"]
    assert gender["differs"] and gender["rate_a"] > 0.5 and gender["rate_b"] == 0.0
    assert all(not r["differs"] for r in doc["annotator_agreement"] if r is not gender)
    (warning,) = doc["warnings"]
    assert warning.startswith("runB vs runA: the annotator") and "may be the annotator's" in warning
    md = (tmp_path / "cmp.md").read_text()
    assert "Δ people \\[95% CI\\]" in md or "Δ people [95% CI]" in md
    assert "> WARNING: runB vs runA: the annotator" in md
