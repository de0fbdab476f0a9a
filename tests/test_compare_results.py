"""Paired tests from published results: the score stage records each score entry's paired
resamples in results.json (``pairing``), and ``t2ibench compare`` pairs two results files (or
one with a run folder, or one on the Hub) without their folders, giving the comparison the run
folders give; results that cannot be paired say why in one line; ``t2ibench validate`` checks
the section."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from benchmark.compare import CompareError, compare_runs
from benchmark.contract.pairing import decode_resamples, encode_resamples, read_pairing
from benchmark.contract.results import validate_results
from benchmark.runner.score import score_run
from submissions.validate import check_results
from test_compare import _suites, make_run

N_RES = 200


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """Two synthetic audits of the same probes (B more biased), scored by the score stage."""
    root = tmp_path_factory.mktemp("published")
    suites = _suites()
    a = make_run(root / "release", suites, 1, worse=False, skin_tone="ita-mst[haar]")
    b = make_run(root / "candidate", suites, 2, worse=True, skin_tone="ita-mst[haar]")
    for run in (a, b):
        config = json.loads((run / "run_config.json").read_text())
        config["probes"]["fingerprint"] = "ab" * 32  # a fingerprint as the schema writes it
        (run / "run_config.json").write_text(json.dumps(config))
        score_run(run, n_resamples=N_RES)
    lone = root / "published"
    lone.mkdir()
    for run in (a, b):  # the results files alone, as a results dataset holds them
        shutil.copy(run / "results.json", lone / f"{run.name}.json")
    return {"a": a, "b": b, "lone_a": lone / "release.json", "lone_b": lone / "candidate.json",
            "folders": compare_runs(a, b, n_resamples=N_RES)}


def _doc(path):
    return json.loads(path.read_text())


def test_the_score_stage_records_every_entry_with_resamples(scored):
    doc = _doc(scored["a"] / "results.json")
    assert list(doc)[-1] == "pairing" and validate_results(doc) == [] and check_results(doc, allow_demo=True) == []
    head, entries = read_pairing(doc)
    assert head["n_resamples"] == N_RES and head["random_state"] == 0 and head["probe_ids"]["n"] > 0
    keys = {tuple(e.get(k) for k in ("name", "suite", "subset", "estimator", "annotator")) for e in doc["scores"]
            if e["defined"] and e["ci"]}
    assert {e.key for e in entries} >= {k for k in keys if k[0] != "TT"} and len(entries) >= 15
    per_entry = len(json.dumps(doc["pairing"])) / len(entries)
    assert per_entry < 4 * math.ceil(2 * N_RES / 3) + 400  # 2 bytes a resample, in base64, plus the key


def test_two_results_files_alone_compare_as_their_run_folders(scored):
    folders = scored["folders"]
    alone = compare_runs(scored["lone_a"], scored["lone_b"])
    assert alone.pairings[0]["kind"] == "paired by (probe, seed)"
    assert "from the paired resamples the results carry" in alone.pairings[0]["text"]
    by_key = {(r["name"], r["suite"], r["subset"], r["estimator"], r["annotator"]): r for r in alone.rows}
    compared = 0
    for f in folders.rows:
        r = by_key[(f["name"], f["suite"], f["subset"], f["estimator"], f["annotator"])]
        assert r["status"] == f["status"], (f, r)
        if f["status"] != "compared":
            continue
        compared += 1
        assert r["estimate"] == pytest.approx(f["estimate"], abs=1e-12)
        assert r["se"] == pytest.approx(f["se"], rel=1e-3) and r["mdd"] == pytest.approx(f["mdd"], rel=1e-3)
        assert r["significant"] == f["significant"] and r["change"] == f["change"]
    assert compared >= 10 and alone.to_dict()["summary"]["significantly_worse"] >= 5
    # a run folder with a results file alone: the folder is scored under the results' plan
    mixed = compare_runs(scored["a"], scored["lone_b"])
    assert [r["status"] for r in mixed.rows] == [r["status"] for r in folders.rows]


def test_results_that_cannot_be_paired_say_why_in_one_line(scored, tmp_path):
    bare = tmp_path / "old.json"
    doc = _doc(scored["lone_b"])
    doc.pop("pairing")
    bare.write_text(json.dumps(doc))
    with pytest.raises(CompareError, match="cannot be compared paired without its run folder: it has no pairing "
                                           "section") as info:
        compare_runs(scored["lone_a"], bare)
    assert "\n" not in str(info.value)
    other = tmp_path / "other.json"
    doc = _doc(scored["lone_b"])
    doc["pairing"]["probe_ids"] = {"n": 5, "sha256": "0" * 64}
    other.write_text(json.dumps(doc))
    with pytest.raises(CompareError, match="hold different probes .*compare the run folders"):
        compare_runs(scored["lone_a"], other)
    with pytest.raises(CompareError, match="--n-resamples 300: the results files carry the resamples of 200"):
        compare_runs(scored["lone_a"], scored["lone_b"], n_resamples=300)


def test_results_scored_under_another_plan_are_refused(scored, tmp_path):
    run = shutil.copytree(scored["b"], tmp_path / "rescored")
    score_run(run, n_resamples=50)
    lone = shutil.copy(run / "results.json", tmp_path / "rescored.json")
    with pytest.raises(CompareError, match="scored under different resample plans .*50 resamples"):
        compare_runs(scored["lone_a"], lone, scores=["mad_gender"])
    # the folder itself is scored again under the results' plan
    assert compare_runs(scored["lone_a"], run, scores=["mad_gender"]).method["n_resamples"] == N_RES


def test_results_on_the_hub_are_downloaded_and_compared(scored, monkeypatch):
    import huggingface_hub

    asked = []

    def download(repo_id, filename, *, repo_type, revision):
        asked.append((repo_id, filename, repo_type, revision))
        return str(scored["lone_b"])

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    comparison = compare_runs(scored["lone_a"], "hf://datasets/org/results@v1/models/candidate.json",
                              scores=["mad_gender"])
    assert asked == [("org/results", "models/candidate.json", "dataset", "v1")]
    assert comparison.runs[1].label == "org/results@v1/models/candidate.json"
    with pytest.raises(CompareError, match="hf://datasets/OWNER/NAME"):
        compare_runs(scored["lone_a"], "hf://datasets/org")


@pytest.mark.parametrize("edit,where", [
    (lambda p: p["entries"][0].update(codes=p["entries"][0]["codes"][:-8]), "pairing: pairing entry 0: codes must be"),
    (lambda p: p["entries"][0].update(key=["nope", "gep_neutral", None, None, None]), "pairing/entries/0/key"),
    (lambda p: p["entries"][0].update(low=-50.0), "leave the range"),
    (lambda p: p.update(n_resamples=10**9), "pairing"),
], ids=["truncated-codes", "unknown-key", "out-of-range", "too-many-resamples"])
def test_validate_checks_the_pairing_section(scored, edit, where):
    doc = _doc(scored["lone_a"])
    edit(doc["pairing"])
    problems = check_results(doc, allow_demo=True)
    assert any(line.startswith(where) or where in line for line in problems), problems


def test_the_encoding_keeps_resamples_to_a_sixty_thousandth_of_their_range():
    rng = np.random.default_rng(0)
    values = rng.normal(40, 3, 1000)
    values[[3, 17]] = np.nan
    item = encode_resamples(values)
    back = decode_resamples(item, 1000)
    assert np.isnan(back[[3, 17]]).all()
    ok = np.isfinite(values)
    assert np.max(np.abs(back[ok] - values[ok])) <= (values[ok].max() - values[ok].min()) / 65534 / 2 + 1e-12
    constant = decode_resamples(encode_resamples(np.full(10, 0.25)), 10)
    assert np.array_equal(constant, np.full(10, 0.25))
    with pytest.raises(ValueError, match="codes must be the base64 of 11"):
        decode_resamples(item, 11)


def test_the_compare_tab_reads_the_pairing_from_the_file_when_the_board_drops_it(scored):
    """A board may keep its documents without their pairing sections (a few hundred kB each):
    the paired test reads them from the files on the button."""
    from submissions.leaderboard.board_model import Submission
    from submissions.leaderboard.paired import paired_markdown

    def submission(path, keep):
        doc = _doc(path)
        doc["model"]["id"] = path.stem
        if not keep:
            doc.pop("pairing")
        return Submission(doc=doc, source=path.name, path=path, run_dir=None)

    md = paired_markdown([submission(scored["lone_a"], False), submission(scored["lone_b"], False)])
    assert md.startswith("## Did the change reduce bias?") and "significantly worse" not in md.split("|")[0]
    assert "| worse |" in md or "worse |" in md
    assert md == paired_markdown([submission(scored["lone_a"], True), submission(scored["lone_b"], True)])
