"""Comparisons from published results: the score stage writes the label rows each score reads into
results.json (``pairing``: per-probe labels), and ``t2ibench compare`` rebuilds each run from its
results file alone (probe rows from its probe set) and gives the verdicts the run folders give;
results that cannot be paired say why in one line; a results file whose values are not those of
its own labels is refused (issue 51: a tampered file cannot steer a gate); ``t2ibench validate``
checks the section."""

from __future__ import annotations

import base64
import io
import json
import shutil

import pandas as pd
import pytest

from benchmark.cli import main
from benchmark.compare import CompareError, compare_runs
from benchmark.contract import pairing as pairing_module
from benchmark.contract.pairing import read_pairing
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
        config["probes"] = {"kind": "builtin", "source": "builtin"}  # the built-in probe set, any revision
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


def test_the_score_stage_writes_the_labels_each_score_reads(scored):
    doc = _doc(scored["a"] / "results.json")
    assert list(doc)[-1] == "pairing" and validate_results(doc) == [] and check_results(doc, allow_demo=True) == []
    section = read_pairing(doc)
    assert len(section.probe_ids) == doc["run"]["n_images"] and not section.not_carried
    assert set(section.labels) == {"gender", "attributes", "skin_tone", "embeddings", "detections"}
    gender = pd.read_parquet(scored["a"] / "labels" / "gender.parquet")
    carried = section.labels["gender"]
    # the rows the scores read, provenance (the VQA question and answer) left out
    assert set(carried.columns) == set(gender.columns) - {"question", "answer", "score"}
    assert carried.sort_values("probe_id")["label"].tolist() == gender.sort_values("probe_id")["label"].tolist()
    assert len(json.dumps(doc["pairing"])) < 60 * sum(len(f) for f in section.labels.values()) + 20_000


def _rows(comparison):
    return {(r["name"], r["suite"], r["subset"], r["estimator"], r["annotator"]): r for r in comparison.rows}


def test_two_results_files_alone_give_the_verdicts_of_their_run_folders(scored):
    folders = scored["folders"]
    alone = compare_runs(scored["lone_a"], scored["lone_b"], n_resamples=N_RES)
    assert alone.pairings[0]["kind"] == "paired by (probe, seed)"
    assert "from the per-probe labels the results carry" in alone.pairings[0]["text"]
    by_key, compared = _rows(alone), 0
    for key, f in _rows(folders).items():
        r = by_key[key]
        assert r["status"] == f["status"], (f, r)
        if f["status"] != "compared":
            continue
        compared += 1
        assert r["estimate"] == pytest.approx(f["estimate"], rel=1e-5, abs=1e-9)
        assert r["p"] == f["p"] and r["significant"] == f["significant"] and r["change"] == f["change"]
        assert r["se"] == pytest.approx(f["se"], rel=1e-4) and r["mdd"] == pytest.approx(f["mdd"], rel=1e-4)
    assert compared >= 10 and alone.to_dict()["summary"]["significantly_worse"] >= 5
    mixed = compare_runs(scored["a"], scored["lone_b"], n_resamples=N_RES)  # a folder with a results file alone
    assert [(r["status"], r.get("significant")) for r in mixed.rows] == \
        [(r["status"], r.get("significant")) for r in folders.rows]


def test_results_that_cannot_be_paired_say_why_in_one_line(scored, tmp_path):
    cases = []
    bare = _doc(scored["lone_b"])
    bare.pop("pairing")
    cases.append((bare, "cannot be compared without its run folder: it has no pairing section"))
    old = _doc(scored["lone_b"])
    old["pairing"] = {"format": "paired-resamples/1", "n_resamples": 2, "random_state": 0,
                      "probe_ids": old["pairing"]["probe_ids"], "entries": []}
    cases.append((old, "older format 'paired-resamples/1'"))
    for i, (doc, message) in enumerate(cases):
        path = tmp_path / f"case{i}.json"
        path.write_text(json.dumps(doc))
        with pytest.raises(CompareError, match=message) as info:
            compare_runs(scored["lone_a"], path)
        assert "\n" not in str(info.value)
    assert check_results(old, allow_demo=True) == []  # an earlier version's section still validates


def test_results_scored_with_other_resample_counts_need_a_choice(scored, tmp_path):
    run = shutil.copytree(scored["b"], tmp_path / "rescored")
    score_run(run, n_resamples=50)
    lone = shutil.copy(run / "results.json", tmp_path / "rescored.json")
    with pytest.raises(CompareError, match="different numbers of resamples .*--n-resamples N"):
        compare_runs(scored["lone_a"], lone, scores=["mad_gender"])
    assert compare_runs(scored["lone_a"], lone, scores=["mad_gender"], n_resamples=60).method["n_resamples"] == 60


def test_results_on_the_hub_are_downloaded_and_compared(scored, monkeypatch):
    import huggingface_hub

    asked = []

    def download(repo_id, filename, *, repo_type, revision):
        asked.append((repo_id, filename, repo_type, revision))
        return str(scored["lone_b"])

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    comparison = compare_runs(scored["lone_a"], "hf://datasets/org/results@v1/models/candidate.json",
                              scores=["mad_gender"], n_resamples=N_RES)
    assert asked == [("org/results", "models/candidate.json", "dataset", "v1")]
    assert comparison.runs[1].label == "org/results@v1/models/candidate.json"
    with pytest.raises(CompareError, match="hf://datasets/OWNER/NAME"):
        compare_runs(scored["lone_a"], "hf://datasets/org")


# --------------------------------------------------------------------------- a results file that contradicts itself


def _edit_labels(kind, change):
    """An edit of the carried rows of label file ``kind``, written back as the score stage writes them."""
    def edit(doc):
        item = doc["pairing"]["labels"][kind]
        frame = pd.read_parquet(io.BytesIO(base64.b64decode(item["parquet"])))
        frame = change(frame)
        sink = io.BytesIO()
        frame.to_parquet(sink, index=False)
        item.update(rows=len(frame), parquet=base64.b64encode(sink.getvalue()).decode())
    return edit


def _flip_gender(frame):
    frame["label"] = frame["label"].map({"male": "female", "female": "male"}).fillna(frame["label"])
    return frame


TAMPERED = [
    # (case, edit of B's results document, what the one line says): issue 51's cases
    ("a-value-changed", lambda d: d["scores"][0].update(value=d["scores"][0]["value"] + 0.886), "contradicts itself"),
    ("labels-replaced-by-random-bytes", lambda d: d["pairing"]["labels"]["gender"].update(
        parquet=base64.b64encode(bytes(range(256)) * 40).decode()), "are not the base64 of a parquet table"),
    ("labels-edited", _edit_labels("gender", _flip_gender), "contradicts itself"),
    ("ids-edited", lambda d: d["pairing"].update(ids=base64.b64encode(b"x" * 40).decode()), "ids are not"),
    ("withheld-edited", lambda d: d["pairing"].update(withheld=list(range(40))), "contradicts itself"),
]


@pytest.mark.parametrize("case,edit,message", TAMPERED, ids=[c for c, _, _ in TAMPERED])
def test_a_results_file_that_contradicts_itself_is_refused_in_one_line(scored, tmp_path, capsys, case, edit, message):
    doc = _doc(scored["lone_b"])
    edit(doc)
    path = tmp_path / "candidate.json"
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    code = main(["compare", str(scored["lone_a"]), str(path), "--quiet", "--fail-if-worse", "all"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("t2ibench: error: ") and message in err[0], err


# --------------------------------------------------------------------------- what is not carried, validate


def test_label_files_too_large_to_carry_are_listed_and_their_scores_not_tested(scored, tmp_path, monkeypatch):
    run = shutil.copytree(scored["b"], tmp_path / "big")
    monkeypatch.setattr(pairing_module, "MAX_CARRIED_BYTES", 5000)
    doc = score_run(run, n_resamples=N_RES)
    assert set(doc["pairing"]["not_carried"]) >= {"embeddings"} and check_results(doc, allow_demo=True) == []
    lone = tmp_path / "big.json"
    shutil.copy(run / "results.json", lone)
    comparison = compare_runs(scored["lone_a"], lone, n_resamples=N_RES)
    mcas = [r for r in comparison.rows if r["name"] == "mcas"]
    assert mcas and all(r["status"] == "not tested" and "do not carry labels/embeddings.parquet" in r["reason"]
                        and "compare the run folders" in r["reason"] for r in mcas), mcas
    assert any(r["status"] == "compared" for r in comparison.rows)


@pytest.mark.parametrize("edit,where", [
    (lambda p: p["labels"]["gender"].update(parquet=p["labels"]["gender"]["parquet"][:-40]), "pairing: "),
    (lambda p: p["labels"].update(nope=p["labels"]["gender"]), "pairing/labels/nope: is not a label file"),
    (lambda p: p.update(n_extra=-1), "pairing"),
    (lambda p: p["probe_ids"].update(sha256="0" * 64), "pairing"),
], ids=["truncated-labels", "unknown-label-file", "negative-extra", "other-probe-ids"])
def test_validate_checks_the_pairing_section(scored, edit, where):
    doc = _doc(scored["lone_a"])
    edit(doc["pairing"])
    problems = check_results(doc, allow_demo=True)
    assert any(line.startswith(where) or where in line for line in problems), problems


def test_the_compare_tab_reads_the_pairing_from_the_file_when_the_board_drops_it(scored, monkeypatch):
    """A board may keep its documents without their pairing sections: the paired test reads them
    from the files on the button."""
    from functools import partial

    import benchmark.commands.mdd as mdd
    from submissions.leaderboard.board_model import Submission
    from submissions.leaderboard.paired import paired_markdown

    # where the pairing comes from is the point here; the MDD's simulation (8 s a call on these
    # runs) is the board's in tests/test_compare_cli.py and tests/test_compare_browser.py
    monkeypatch.setattr(mdd, "simulated_mdd", partial(mdd.simulated_mdd, pairs=0))

    def submission(path, keep):
        doc = _doc(path)
        if not keep:
            doc.pop("pairing")
        return Submission(doc=doc, source=path.name, path=path, run_dir=None)

    md = paired_markdown([submission(scored["lone_a"], False), submission(scored["lone_b"], False)])
    assert md.startswith("## Did the change reduce bias?") and "worse |" in md
    assert md == paired_markdown([submission(scored["lone_a"], True), submission(scored["lone_b"], True)])
