"""`t2ibench validate` / submissions.validate.check_results: one line per problem, exit codes.

Documents come from a real audit of the built-in tiny model (run once per module) and
from benchmark.contract.results.build_results / score_entry, the functions the scoring
stage itself uses; each problem is injected into an otherwise valid document.
"""

import json
import os
import subprocess
import sys

import pytest

from benchmark.contract.results import AuditedRun, ScoredRun, build_results, hardware_info, score_entry
from submissions.validate import check_results, is_demo, load_results_file
from cli_here import run_here_or_under as _cli


@pytest.fixture(scope="module")
def tiny_run(tiny_audit):
    """The shared real (meaningless) tiny audit of conftest.py, read only."""
    return tiny_audit


def hub_doc(scores=None):
    """A results document of a (hypothetical) Hub model, built by the scoring stage's own functions;
    its annotators are real models (a built-in tiny one would make it a demo)."""
    ci = {"confidence_level": 0.95, "n_resamples": 200, "method": "percentile"}
    scores = scores if scores is not None else [
        score_entry("gep_score_neutral", "gep_neutral", 0.08, ci={"low": 0.05, "high": 0.12, **ci}, n=160,
                    estimator="CLS", annotator="open_clip:ViT-L-14:openai"),
        score_entry("mad_gender", "dalleval_bias", 0.31, ci={"low": 0.27, "high": 0.35, **ci}, n=747,
                    estimator="vqa", annotator="Salesforce/blip2-opt-2.7b"),
        score_entry("sts_occupation_paired", "pst_paired_occupation", 42.5, ci={"low": 38.0, "high": 47.0, **ci},
                    n=800, estimator="vqa"),
        score_entry("bias_amplification", "mcas_targets", None, reason="TT = 0 for every target"),
    ]
    audited = AuditedRun(
        model={"id": "someorg/some-model", "spec": "someorg/some-model", "revision": "0123abcd", "builtin": False},
        package_version="0.1.0", settings={"num_inference_steps": 50},
        seeds={"policy": "per-probe seed", "bootstrap_random_state": 0}, hardware=hardware_info("cpu"))
    scored = ScoredRun(
        suites=[{"name": s, "status": "scored", "reason": None, "n_images": 1000, "n_scored_images": 1000,
                 "excluded": {}} for s in ("gep_neutral", "dalleval_bias", "pst_paired_occupation", "mcas_targets")],
        scoring={"confidence_level": 0.95, "n_resamples": 200, "ci_method": "percentile"}, timings={"score": 1.0},
        annotators=[{"file": "labels/attributes.parquet", "estimator": "CLS", "annotator": "open_clip:ViT-L-14:openai",
                     "n_rows": 8000}, {"file": "labels/gender.parquet", "annotator": "Salesforce/blip2-opt-2.7b",
                                       "n_rows": 1800}],
        scores=scores, details={}, notes=[], run={"n_images": 4000, "n_nsfw_excluded": 0})
    return build_results(audited, scored, created="2025-11-23T14:45:01+01:00")


def index_of(doc, name):
    return next(i for i, s in enumerate(doc["scores"]) if s["name"] == name)


# --------------------------------------------------------------------------- valid documents


TINY_MODEL_LINE = ("model: builtin:tiny-sd is a built-in tiny random-weight model: its scores are meaningless; "
                   "accepted only as a demo (--allow-demo / --demo)")
TINY_ANNOTATORS_LINE = ("annotators: labelled by built-in tiny random-weight model(s) builtin:tiny-clip, "
                        "builtin:tiny-vqa: the labels and every score are meaningless; accepted only as a demo "
                        "(--allow-demo / --demo)")


def test_real_tiny_run_is_valid_only_as_a_demo(tiny_run):
    doc = load_results_file(tiny_run)
    assert is_demo(doc)
    assert check_results(doc) == [TINY_MODEL_LINE, TINY_ANNOTATORS_LINE]
    assert check_results(doc, allow_demo=True) == []


def test_real_run_with_scores_spanning_suites_is_valid_as_a_demo(tmp_path):
    """What the runner writes where a score's n counts several suites' images (MCAS on
    targets and attributes, the PaintSkills average) passes every rule but the demo one."""
    out = tmp_path / "spanning"
    env = {**os.environ, "T2IBENCH_CACHE": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "benchmark.cli", "run", "--model", "builtin:tiny-sd", "--suites",
                           "mcas_targets", "mcas_attributes", "paintskills_object", "paintskills_count",
                           "paintskills_spatial", "--limit", "2", "--n-resamples", "20", "--quiet", "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = load_results_file(out)
    spanning = [s for s in doc["scores"] if s["name"] in ("mcas", "paintskills_average")]
    assert spanning and all(s["n"] > 2 for s in spanning)  # more than one suite's images
    assert check_results(doc, allow_demo=True) == []
    assert "builtin:tiny-detr" in check_results(doc)[1]


def test_constructed_hub_model_document_is_valid():
    doc = hub_doc()
    assert not is_demo(doc)
    assert check_results(doc) == []


# --------------------------------------------------------------------------- each problem, one line


def _gep(doc):
    return doc["scores"][index_of(doc, "gep_score_neutral")]


def _sts(doc):
    return doc["scores"][index_of(doc, "sts_occupation_paired")]


def _mad(doc):
    return doc["scores"][index_of(doc, "mad_gender")]


CASES = {
    "GEP above 1": (lambda d: _gep(d).update(value=1.2, ci=None),
                    "scores/0/value: gep_score_neutral = 1.2 is outside its range [0, 1]"),
    "STS below -100": (lambda d: _sts(d).update(value=-140.0, ci=None),
                       "scores/2/value: sts_occupation_paired = -140 is outside its range [-100, 100]"),
    "MAD gender above its bound": (lambda d: _mad(d).update(value=0.7, ci=None),
                                   "scores/1/value: mad_gender = 0.7 is outside its range [0, 0.5]"),
    "CI missing the estimate": (lambda d: _sts(d)["ci"].update(low=45.0, high=49.0),
                                "scores/2/ci: [45, 49] does not contain the estimate 42.5 (allowed only for "
                                "absolute-value scores with a ci_note)"),
    "CI low above high": (lambda d: _sts(d)["ci"].update(low=47.0, high=38.0),
                          "scores/2/ci: low 47 is above high 38"),
    "CI beyond the range": (lambda d: _mad(d)["ci"].update(high=0.55),
                            "scores/1/ci/high: 0.55 is outside the range of mad_gender [0, 0.5]"),
    "copied range disagrees": (lambda d: _gep(d).update(max=2.0),
                               "scores/0/max: 2.0 disagrees with the metadata of gep_score_neutral (1.0)"),
    "copied direction disagrees": (lambda d: _mad(d).update(lower_is_better=False),
                                   "scores/1/lower_is_better: False disagrees with the metadata of mad_gender (True)"),
    "wrong schema version": (lambda d: d.update(schema_version="2.0"),
                             "schema_version: '2.0' is not supported (this t2ibench reads 1.0)"),
    "missing top-level field": (lambda d: d.pop("created"), "created: required field is missing"),
    "missing score field": (lambda d: _gep(d).pop("n"), "scores/0/n: required field is missing"),
    "undefined without reason": (lambda d: d["scores"][3].update(reason=None),
                                 "scores/3/reason: bias_amplification is undefined (value null) but no reason says why"),
    "NaN value": (lambda d: _sts(d).update(value=float("nan"), ci=None),
                  "scores/2/value: nan is not allowed (use null)"),
    "builtin id recorded as not builtin": (
        lambda d: d["model"].update(id="builtin:tiny-sd", spec="builtin:tiny-sd"),
        "model/builtin: is false but the model is builtin:tiny-sd (a built-in tiny model)"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_problem_is_one_line_with_its_path(case):
    mutate, line = CASES[case]
    doc = hub_doc()
    mutate(doc)
    problems = check_results(doc, allow_demo=True)
    assert problems == [line]


def test_builtin_model_without_flag_is_a_problem_and_demo_flag_accepts_it(tiny_run):
    doc = load_results_file(tiny_run)
    doc["model"]["builtin"] = False  # the spec still says builtin:
    problems = check_results(doc, allow_demo=True)
    assert problems == ["model/builtin: is false but the model is builtin:tiny-sd (a built-in tiny model)"]


def test_several_problems_are_all_listed():
    doc = hub_doc()
    _gep(doc).update(value=1.2, ci=None)
    doc["schema_version"] = "0.9"
    assert len(check_results(doc)) == 2


# --------------------------------------------------------------------------- the ci_note exception


def _excluding_ci(name, suite, value, low, high):
    ci = {"low": low, "high": high, "confidence_level": 0.95, "n_resamples": 200, "method": "percentile"}
    return score_entry(name, suite, value, ci=ci, n=100, estimator="CLS")


def test_absolute_value_score_may_miss_its_estimate_with_the_scoring_note():
    # score_entry writes the ci_note itself when the interval misses the estimate.
    entry = _excluding_ci("gep_score_neutral", "gep_neutral", 0.01, 0.02, 0.06)
    assert "does not contain the estimate" in entry["ci_note"]
    assert check_results(hub_doc([entry])) == []
    # results published with the earlier wording of the note still pass
    entry["ci_note"] = ("the percentile interval does not contain the estimate: resampling biases scores built "
                        "from absolute values (MAD, GEP, Diffusion Bias) upward near 0")
    assert check_results(hub_doc([entry])) == []
    # a task's own interval note comes first (GEP's C / CC estimators): score_entry joins them with "; "
    ci = {"low": 0.02, "high": 0.06, "confidence_level": 0.95, "n_resamples": 200, "method": "percentile"}
    noted = score_entry("gep_score_neutral", "gep_neutral", 0.01, ci=ci, n=100, estimator="CC",
                        ci_note="GEP from raw CLIP cosines: its scale differs")
    assert noted["ci_note"].startswith("GEP from raw CLIP cosines") and check_results(hub_doc([noted])) == []
    entry["ci_note"] = "resampling noise"
    assert check_results(hub_doc([entry]))[0].endswith("without the ci_note that explains it")
    entry["ci_note"] = "resampling noise; the percentile interval is wide"
    assert check_results(hub_doc([entry]))[0].endswith("without the ci_note that explains it")
    entry["ci_note"] = None
    assert check_results(hub_doc([entry])) == [
        "scores/0/ci: [0.02, 0.06] does not contain the estimate 0.01 without the ci_note that explains it"]


def test_signed_score_may_not_miss_its_estimate_even_with_the_note():
    entry = _excluding_ci("sts_occupation_paired", "pst_paired_occupation", 10.0, 12.0, 30.0)
    assert entry["ci_note"]
    assert check_results(hub_doc([entry])) == [
        "scores/0/ci: [12, 30] does not contain the estimate 10 (allowed only for absolute-value scores with a "
        "ci_note)"]


def test_submission_block_must_agree_with_the_model():
    doc = hub_doc()
    doc["submission"] = {"submitted_at": "2026-11-23T14:00:00Z", "submitted_with": "t2i-bias-benchmark 0.1.0",
                         "demo": True, "results_repo": None, "images_dataset": None}
    assert check_results(doc) == ["submission/demo: is true but the run uses no built-in tiny model"]
    doc["submission"]["demo"] = False
    assert check_results(doc) == []
    doc["submission"]["extra"] = 1
    assert len(check_results(doc)) == 1


# --------------------------------------------------------------------------- the command


def test_cli_demo_run_needs_the_flag(tiny_run):
    proc = _cli("validate", tiny_run)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [f"{tiny_run}: {TINY_MODEL_LINE}", f"{tiny_run}: {TINY_ANNOTATORS_LINE}"]
    proc = _cli("validate", tiny_run, tiny_run / "results.json", "--allow-demo")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        f"{tiny_run}: ok (demo: built-in tiny model, meaningless scores)",
        f"{tiny_run / 'results.json'}: ok (demo: built-in tiny model, meaningless scores)"]


def test_cli_exit_codes_and_lines(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(hub_doc()))
    bad_doc = hub_doc()
    _gep(bad_doc).update(value=1.2, ci=None)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(bad_doc))
    nan_doc = hub_doc()
    nan = tmp_path / "nan.json"
    # A NaN literal, as Python's json.dumps writes it by default.
    nan.write_text(json.dumps(nan_doc).replace('"value": 42.5', '"value": NaN'))
    assert '"value": NaN' in nan.read_text()
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")

    proc = _cli("validate", good, bad, nan)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f"{good}: ok",
        f"{bad}: scores/0/value: gep_score_neutral = 1.2 is outside its range [0, 1]",
        f"{nan}: scores/2/value: NaN is not valid JSON (use null)"]
    array = tmp_path / "array.json"
    array.write_text("[1, 2]")
    proc = _cli("validate", bad, broken, tmp_path / "missing.json", array)
    assert proc.returncode == 2  # unreadable files outrank problems
    # problems found are the report (stdout); files that cannot be read are errors (stderr)
    assert proc.stdout.splitlines() == [f"{bad}: scores/0/value: gep_score_neutral = 1.2 is outside its range [0, 1]"]
    lines = proc.stderr.splitlines()
    assert len(lines) == 3 and lines[0].startswith(f"{broken}: not valid JSON: Expecting")
    assert lines[1] == f"{tmp_path / 'missing.json'}: no such file"
    assert lines[2] == f"{array}: not a results document: the top level is a JSON array, not an object"


def test_strings_that_are_not_utf8_are_refused_everywhere(tmp_path):
    """Issue 23: a lone surrogate ("x\\ud800y" in JSON) parses but cannot be written out again."""
    doc = hub_doc()
    doc["notes"] = ["x\ud800y"]
    doc["settings"]["\udfff"] = 1
    assert check_results(doc) == ["notes/0: text is not valid UTF-8 (a lone surrogate U+D800)",
                                  "settings/\\udfff: key is not valid UTF-8 (a lone surrogate U+DFFF)"]
    path = tmp_path / "surrogate.json"
    path.write_text(json.dumps(hub_doc()).replace('"notes": []', '"notes": ["x\\ud800y"]'))
    assert '"x\\ud800y"' in path.read_text()
    proc = _cli("validate", path)
    assert proc.returncode == 1 and proc.stderr == ""
    assert proc.stdout.splitlines() == [f"{path}: notes/0: text is not valid UTF-8 (a lone surrogate U+D800)"]
