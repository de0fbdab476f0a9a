"""``t2ibench compare`` on synthetic run folders with known injected differences: every kind of
score (GEP, DALL-Eval MAD, PST STS, MCAS / Diffusion Bias, PaintSkills accuracy) is scored by its
real task code and the planted change is found; a score whose estimators differ (whole-image vs
face-detector skin tone) is refused by name while the rest are compared; the exit status of
``--fail-if-worse``; pairing and comparability checks."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from benchmark.cli import main
from benchmark.compare import CompareError, compare_runs
from benchmark.compare.present import comparison_markdown, print_comparison
from benchmark.compare import runs as runs_module
from benchmark.compare.runs import load_run, pairing, score_alone
from benchmark.probes import build_suite, load_config
from benchmark.tasks import context
from benchmark.tasks.mcas.probes import mcas_text_rows
from test_score_stage import write_labels, write_run

N_RES = 200
FINGERPRINT = "synthetic-probe-set"
WHOLE_IMAGE, FACE_DETECTOR = "ita-mst[whole-image]", "ita-mst[haar]"


def _suites():
    neutral = build_suite("gep_neutral")
    dalle = build_suite("dalleval_bias")
    profs = list(dict.fromkeys(dalle["profession"]))[:6]
    dalle = dalle[dalle["profession"].isin(profs + [""])]
    single = build_suite("pst_single")
    mcas_a, mcas_t = build_suite("mcas_attributes").iloc[::2], build_suite("mcas_targets").iloc[::4]
    objects = build_suite("paintskills_object").iloc[:160]
    return {"neutral": neutral, "dalle": dalle, "single": single, "mcas_a": mcas_a, "mcas_t": mcas_t,
            "objects": objects}


def _gep_rows(frame, rng, shift):
    """Attribute labels (0/1, vqa): p = 0.4 for everyone, + ``shift`` for women on 5 attributes."""
    rows = []
    for _, r in frame.iterrows():
        for j, a in enumerate(r["annotated_attributes"]):
            p = 0.4 + (shift if r["gender"] == "woman" and j < 5 else 0.0)
            rows.append({"probe_id": r["probe_id"], "attribute": a, "score": None, "label": int(rng.uniform() < p),
                         "estimator": "vqa", "annotator": "tiny-vqa"})
    return rows


def _gender_rows(suites, rng, male_share, stereotyped_share):
    rows = []
    for _, r in suites["dalle"].iterrows():
        label = "male" if rng.uniform() < male_share else "female"
        rows.append({"probe_id": r["probe_id"], "person": "single", "question": "q", "answer": label,
                     "label": label, "annotator": "tiny-vqa"})
    for _, r in suites["single"].iterrows():
        other = "female" if r["stereotyped_gender"] == "male" else "male"
        label = r["stereotyped_gender"] if rng.uniform() < stereotyped_share else other
        rows.append({"probe_id": r["probe_id"], "person": "single", "question": r["question"], "answer": label,
                     "label": label, "annotator": "tiny-vqa"})
    return rows


def _embedding_rows(suites, rng, pull):
    """One encoder; attribute set A images near +u, set B near -u; target images pulled towards u."""
    u = np.zeros(8)
    u[0] = 1.0
    rows = []
    for _, r in pd.concat([suites["mcas_a"], suites["mcas_t"]]).iterrows():
        if r["suite"] == "mcas_targets":
            role, target, vec = "target_image", r["keyword"], rng.normal(size=8) + pull * u
        else:
            sign = 1.0 if r["attribute_set"].lower() == "a" else -1.0
            role, target, vec = f"attribute_{r['attribute_set'].lower()}_image", "", rng.normal(size=8) + sign * u
        rows.append({"encoder": "enc", "kind": "image", "probe_id": r["probe_id"], "text": None, "role": role,
                     "target": target, "embedding": vec.tolist()})
    text_rng = np.random.default_rng(99)  # the texts are the encoder's: the same in both runs
    for _, t in mcas_text_rows(load_config("mcas")).iterrows():
        rows.append({"encoder": "enc", "kind": "text", "probe_id": None, "text": t["text"], "role": t["role"],
                     "target": t["target"], "embedding": text_rng.normal(size=8).tolist()})
    return rows


def _detection_rows(frame, rng, accuracy):
    rows = []
    for _, r in frame.iterrows():
        label = r["target"] if rng.uniform() < accuracy else "no-such-class"
        rows.append({"probe_id": r["probe_id"], "detector": "det", "n_queries": 1, "query_scores": [0.9],
                     "query_labels": [label], "query_boxes": [0.5, 0.5, 0.2, 0.2], "prob_classes": None,
                     "query_probs": None})
    return rows


def make_run(path, suites, seed, *, worse: bool, skin_tone: str):
    """A synthetic run folder; ``worse`` plants a change towards more bias in GEP, gender MAD, STS,
    MCAS and a lower PaintSkills accuracy; attribute MAD is left alone."""
    rng = np.random.default_rng(seed)
    write_run(path, list(suites.values()), model="org/model", builtin=False)
    config = json.loads((path / "run_config.json").read_text())
    config["probes"] = {"kind": "builtin", "source": "builtin", "fingerprint": FINGERPRINT}
    (path / "run_config.json").write_text(json.dumps(config))
    attrs = _gep_rows(suites["neutral"], rng, 0.35 if worse else 0.0)
    for _, r in suites["dalle"].iterrows():
        for a in ("a hat", "glasses"):
            attrs.append({"probe_id": r["probe_id"], "attribute": a, "score": None, "label": int(rng.uniform() < .3),
                          "estimator": "vqa", "annotator": "tiny-vqa"})
    write_labels(path, "attributes", attrs)
    write_labels(path, "gender", _gender_rows(suites, rng, 0.9 if worse else 0.5, 0.85 if worse else 0.5))
    write_labels(path, "skin_tone", [{"probe_id": r["probe_id"], "face_found": True, "ita": 30.0,
                                      "mst": int(rng.integers(1, 11)), "n_faces": 1, "annotator": skin_tone}
                                     for _, r in suites["dalle"].iterrows()])
    write_labels(path, "embeddings", _embedding_rows(suites, rng, 6.0 if worse else 0.0))
    write_labels(path, "detections", _detection_rows(suites["objects"], rng, 0.4 if worse else 0.75))
    return path


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    suites = _suites()
    a = make_run(root / "baseline", suites, 1, worse=False, skin_tone=WHOLE_IMAGE)
    b = make_run(root / "candidate", suites, 2, worse=True, skin_tone=FACE_DETECTOR)
    return {"a": a, "b": b, "comparison": compare_runs(a, b, n_resamples=N_RES)}


def rows_of(comparison, name, **match):
    return [r for r in comparison.rows if r["name"] == name and all(r.get(k) == v for k, v in match.items())]


SUBSETS = (None, "occupation", "power", "gender-neutral prompts, per profession")


@pytest.mark.parametrize("name", ["gep_score_neutral", "mad_gender", "sts_occupation_single", "sts_power_single",
                                  "mcas", "II", "diffusion_bias", "paintskills_object"])
def test_planted_change_is_found_as_worse(pair, name):
    (row,) = [r for r in rows_of(pair["comparison"], name) if r["subset"] in SUBSETS]
    assert row["status"] == "compared", row
    assert row["significant"] and row["change"] == "worse" and row["p_holm"] < 0.05, row
    # worse = the tested quantity moved away from better: up for lower-is-better scores and for the
    # distance from an ideal, down for an accuracy
    low, high = row["ci"]
    assert (high < 0) if row["lower_is_better"] is False else (low > 0), row
    # the MDD printed is that of Holm's first step, above the MDD of one test alone
    assert row["mdd"] > row["mdd_uncorrected"] > 0 and row["mdd_uncorrected"] == pytest.approx(2.8016 * row["se"], rel=1e-3)


def test_each_verdict_is_that_of_its_own_row(pair):
    """A row's verdict follows its own significance after Holm, whatever the other rows' (the
    family holds significant and non-significant rows)."""
    compared = [r for r in pair["comparison"].rows if r["status"] == "compared"]
    assert {r["significant"] for r in compared} == {True, False}
    for r in compared:
        assert r["verdict"] == (f"significantly {r['change']}" if r["significant"] else "no significant change"), r


def test_paintskills_lower_accuracy_is_a_negative_difference(pair):
    (row,) = rows_of(pair["comparison"], "paintskills_object")
    assert row["difference"] < 0 and row["difference_ci"][1] < 0 and row["change"] == "worse"


def test_untouched_score_is_compared_not_flagged(pair):
    (row,) = rows_of(pair["comparison"], "mad_attribute")
    assert row["status"] == "compared" and not row["significant"], row


def test_different_skin_tone_estimators_are_refused_by_name_and_the_rest_compared(pair):
    comparison = pair["comparison"]
    refused = [r for r in comparison.rows if r["status"] == "refused"]
    assert {r["name"] for r in refused} == {"mad_skin_tone", "average_skin_tone"}
    for r in refused:
        assert r["reason"].startswith(f"{r['name']} (dalleval_bias")
        assert "not comparable: different estimators" in r["reason"] and WHOLE_IMAGE in r["reason"] \
            and FACE_DETECTOR in r["reason"] and "\n" not in r["reason"]
    compared = {r["name"] for r in comparison.compared()}
    assert {"gep_score_neutral", "mad_gender", "mad_attribute", "sts_occupation_single", "mcas",
            "paintskills_object"} <= compared


def test_pairing_and_holm_are_stated(pair):
    comparison = pair["comparison"]
    (p,) = comparison.pairings
    assert p["kind"] == "paired by (probe, seed)" and p["same_probe_set"]
    n = len(comparison.compared())
    assert f"Holm-corrected across the {n} differences" in comparison.method["correction"]
    doc = comparison.to_dict()
    json.dumps(doc, allow_nan=False)
    assert "warning" not in doc and doc["summary"]["refused"] == 2


def test_table_and_markdown(pair, capsys):
    comparison = pair["comparison"]
    print_comparison(comparison)
    out = capsys.readouterr().out
    assert "Δ [95% CI]" in out and "MDD" in out and "p (Holm)" in out and "refused [" in out
    assert "Holm-corrected" in out and "paired by (probe, seed)" in out
    md = comparison_markdown(comparison)
    table = [line for line in md.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| score | estimator | A | B |") and len(table) == len(comparison.rows) + 2
    assert md.splitlines()[0].startswith("## ") and "Holm-corrected" in md


@pytest.fixture
def unverified(monkeypatch):
    """The command line checks each folder as `t2ibench verify` does; these synthetic folders have
    label files and a manifest but no images, so that check is left out here
    (tests/test_compare_gates.py runs it on real tiny audits)."""
    monkeypatch.setattr(runs_module, "require_intact", lambda *a, **k: None)


def _cli(capsys, *args):
    """``t2ibench compare ARGS`` in this process: (exit status, stdout, stderr)."""
    code = main(["compare", *map(str, args), "--mdd-pairs", "0"])  # the MDD's simulation: test_compare_cli.py
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_writes_files_and_fail_if_worse_sets_the_exit_status(pair, tmp_path, capsys, unverified):
    out = tmp_path / "cmp" / "compare.json"
    code, stdout, _ = _cli(capsys, pair["a"], pair["b"], "--n-resamples", N_RES, "--quiet", "--out", out,
                           "--fail-if-worse", "gep_score_neutral")
    assert code == 1 and "significantly worse: gep_score_neutral (gep_neutral)" in stdout
    doc = json.loads(out.read_text())
    assert doc["baseline"] == "baseline" and doc["summary"]["significantly_worse"] >= 6
    assert out.with_suffix(".md").is_file() and out.with_suffix(".png").stat().st_size > 1000
    code, stdout, _ = _cli(capsys, pair["a"], pair["b"], "--n-resamples", N_RES, "--quiet", "--fail-if-worse",
                           "mad_attribute")
    assert code == 0, stdout
    code, stdout, _ = _cli(capsys, pair["a"], pair["b"], "--n-resamples", N_RES, "--quiet", "--scores",
                           "mad_attribute")
    assert code == 0 and "Attribute MAD" in stdout and "GEP" not in stdout


@pytest.mark.parametrize("args,message", [
    (["--fail-if-worse", "no_such_score"], "--fail-if-worse: unknown score 'no_such_score'"),
    (["--scores", "nope"], "--scores: unknown score 'nope'"),
])
def test_cli_bad_input_is_one_line_error(pair, args, message, capsys, unverified):
    code, _, err = _cli(capsys, pair["a"], pair["b"], "--quiet", "--n-resamples", 20, *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith(f"t2ibench: error: {message}")


def test_a_missing_run_is_a_one_line_error(pair, tmp_path, capsys, unverified):
    code, _, err = _cli(capsys, pair["a"], tmp_path / "nope")
    missing = tmp_path / "nope"
    assert code == 2 and err.strip() == f"t2ibench: error: {missing} is neither a run folder nor a results file"


def test_an_invalid_results_file_alone_is_refused(tmp_path):
    (tmp_path / "results.json").write_text("{}")
    with pytest.raises(CompareError, match="is not a valid results file: .*schema_version"):
        load_run(tmp_path / "results.json")


def test_each_run_file_is_read_once_and_its_errors_name_compare_inputs(pair, tmp_path, monkeypatch):
    run = load_run(pair["a"])

    def read_again(run_dir):
        raise AssertionError(f"{run_dir} read again")

    monkeypatch.setattr(context, "load_run_config", read_again)
    monkeypatch.setattr(context, "load_run_manifest", read_again)
    probes = set(run.manifest["probe_id"].astype(str)[:40])
    scored = score_alone(run, probes, context.ScoringOptions(n_resamples=0))
    assert scored.entries and all(e["ci"] is None for e in scored.entries)
    monkeypatch.undo()
    broken = tmp_path / "broken"
    shutil.copytree(pair["a"], broken)
    (broken / "run_config.json").write_text("{not json")
    with pytest.raises(CompareError, match="run_config.json is not valid JSON") as info:
        load_run(broken)
    assert "--out" not in str(info.value)


def test_different_resample_counts_need_a_choice(pair, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(pair["a"], a)
    shutil.copytree(pair["b"], b)
    (a / "results.json").write_text(json.dumps({"scoring": {"n_resamples": 1000}}))
    (b / "results.json").write_text(json.dumps({"scoring": {"n_resamples": 200}}))
    with pytest.raises(CompareError, match="different numbers of resamples .*--n-resamples N"):
        compare_runs(a, b, scores=["mad_attribute"])


def test_pairing_kinds(pair, tmp_path):
    a, b = load_run(pair["a"]), load_run(pair["b"])
    assert pairing(a, b)["kind"] == "paired by (probe, seed)"
    b.config["provenance"] = {"kind": "api", "seeds": "not controlled"}
    assert pairing(a, b)["kind"] == "paired by probe" and "seeds not controlled" in pairing(a, b)["text"]
    b.manifest = b.manifest.assign(probe_id=b.manifest["probe_id"] + "-elsewhere")
    assert pairing(a, b)["kind"] == "unpaired" and pairing(a, b)["n_common_probes"] == 0


def test_runs_with_no_common_probe_are_compared_unpaired(pair, tmp_path):
    other = tmp_path / "elsewhere"
    shutil.copytree(pair["b"], other)
    for path in [other / "manifest.parquet", *(other / "labels").glob("*.parquet")]:
        frame = pd.read_parquet(path)
        frame["probe_id"] = frame["probe_id"].where(frame["probe_id"].isna(), frame["probe_id"] + "-elsewhere")
        frame.to_parquet(path, index=False)
    comparison = compare_runs(pair["a"], other, scores=["paintskills_object", "sts_power_single"], n_resamples=N_RES)
    (p,) = comparison.pairings
    assert p["kind"] == "unpaired" and "unpaired" in p["text"]
    rows = {r["name"]: r for r in comparison.rows}
    # each run resampled on its own: the planted change is still found
    assert rows["paintskills_object"]["significant"] and rows["paintskills_object"]["change"] == "worse"
