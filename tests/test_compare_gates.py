"""``t2ibench compare`` refusing what it cannot judge:

* gates fail closed: ``--fail-if-worse SCORE`` exits 3 in one line when SCORE could not be
  compared (a label file missing, a suite one run lacks, estimators that differ, a score no run
  holds), unless ``--allow-missing``; every score one run has and the other lacks is a row
  naming the file or the probes;
* no verdict without variation: a run and a copy with one image's label moved is not tested
  (one image per profession) or not significant (nine per profession), at any ``--n-resamples``,
  and the command says which ``--limit`` would give two images per prompt;
* bad input is one line, exit 2, before any work (a table of cases: an ``--out`` inside a run
  folder or over its results, a folder, /proc, a negative seed, resamples past what the machine
  holds...), including folders ``t2ibench verify`` rejects and runs of other versions;
* the CI recipe of docs/compare.md gates only on scores that its audit size can test.
"""

from __future__ import annotations

import json
import os
import re
import shutil

import numpy as np
import pandas as pd
import pytest
from cli_here import exit_status

from benchmark.commands import compare as compare_command
from benchmark.compare import compare_runs
from benchmark.compare import runs as runs_module
from benchmark.probes import build_suite
from benchmark.runner.probe_choice import build_probes
from test_compare import _gep_rows
from test_score_stage import write_labels, write_run

N_RES = 200
ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def t2ibench(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = exit_status(["compare", *args, "--mdd-pairs", "0"])  # the gates: the MDD's simulation is not theirs
    out = capsys.readouterr()
    return rc, out.out, out.err


def error_lines(err: str) -> list[str]:
    return [ln for ln in err.strip().splitlines() if ln.startswith("t2ibench: error:")]


@pytest.fixture
def unverified(monkeypatch):
    """These synthetic folders have a manifest and label files but no images: the check
    `t2ibench verify` makes is left out (test_verify_... below runs it on real audits)."""
    monkeypatch.setattr(runs_module, "require_intact", lambda *a, **k: None)


def _dalle(per_profession: int, n_professions: int) -> pd.DataFrame:
    dalle = build_suite("dalleval_bias")
    neutral = dalle[dalle["gender_neutral"].astype(bool) & (dalle["profession"] != "")]
    profs = list(dict.fromkeys(neutral["profession"]))[:n_professions]
    return neutral[neutral["profession"].isin(profs) & (neutral["sample_index"] < per_profession)]


def gender_rows(frame: pd.DataFrame, labels, annotator: str = "vqa") -> list[dict]:
    return [{"probe_id": pid, "person": "single", "question": "q", "answer": lab, "label": lab, "annotator": annotator}
            for pid, lab in zip(frame["probe_id"], labels)]


def small_run(path, seed: int, dalle: pd.DataFrame, single: pd.DataFrame | None = None, **config):
    """dalleval_bias (gender and attribute labels) and, with ``single``, pst_single (gender)."""
    rng = np.random.default_rng(seed)
    write_run(path, [dalle] + ([single] if single is not None else []), model="org/model", builtin=False)
    if config:
        cfg = json.loads((path / "run_config.json").read_text())
        (path / "run_config.json").write_text(json.dumps({**cfg, **config}))
    rows = gender_rows(dalle, np.where(rng.uniform(size=len(dalle)) < 0.7, "male", "female"))
    if single is not None:
        other = np.where(single["stereotyped_gender"] == "male", "female", "male")
        rows += gender_rows(single, np.where(rng.uniform(size=len(single)) < 0.7, single["stereotyped_gender"], other))
    write_labels(path, "gender", rows)
    write_labels(path, "attributes", [{"probe_id": pid, "attribute": a, "score": None, "label": int(rng.uniform() < .3),
                                       "estimator": "vqa", "annotator": "vqa"}
                                      for pid in dalle["probe_id"] for a in ("a hat", "glasses")])
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gates")
    dalle, single = _dalle(9, 8), build_suite("pst_single")
    return {"root": root, "dalle": dalle, "single": single,
            "a": small_run(root / "a", 1, dalle, single), "b": small_run(root / "b", 2, dalle, single)}


def _copy(runs, tmp_path, name="b2"):
    return shutil.copytree(runs["b"], tmp_path / name)


# --------------------------------------------------------------------------- gates fail closed


def test_a_missing_label_file_is_named_and_its_gate_fails_closed(runs, tmp_path, capsys, unverified):
    b = _copy(runs, tmp_path)
    (b / "labels" / "attributes.parquet").unlink()
    rc, out, err = t2ibench(capsys, runs["a"], b, "--quiet", "--n-resamples", N_RES, "--fail-if-worse", "mad_attribute")
    assert rc == 3, (out, err)
    first = error_lines(err)[0]
    assert first.startswith("t2ibench: error: --fail-if-worse: mad_attribute (dalleval_bias) could not be compared "
                            "in b2: only in a: b2 has no mad_attribute for dalleval_bias (labels/attributes.parquet "
                            "missing)"), err
    assert "the gate cannot pass: 1 gated score(s) could not be compared" in error_lines(err)[-1]
    rc, _, err = t2ibench(capsys, runs["a"], b, "--quiet", "--n-resamples", N_RES, "--fail-if-worse", "mad_attribute",
                          "--allow-missing")
    assert rc == 0 and "(passed: --allow-missing)" in err and not error_lines(err)
    # a gate on a score both runs hold is unaffected
    rc, _, err = t2ibench(capsys, runs["a"], b, "--quiet", "--n-resamples", N_RES, "--fail-if-worse", "mad_gender")
    assert rc == 0, err


def test_a_suite_only_one_run_holds_is_listed_score_by_score(runs, tmp_path, unverified):
    b = tmp_path / "b2"
    small_run(b, 2, runs["dalle"])  # no pst_single in B
    comparison = compare_runs(runs["a"], b, n_resamples=N_RES)
    lone = [r for r in comparison.rows if r["suite"] == "pst_single"]
    assert {r["name"] for r in lone} >= {"sts_occupation_single", "sts_power_single"}
    for r in lone:
        assert r["status"] == "not tested" and r["reason"] == "only in a: b2 has no image of pst_single among the " \
                                                              "compared probes", r
    assert comparison.to_dict()["summary"]["not_tested"] == len(lone)
    assert {r["name"] for r in comparison.uncompared(["sts_occupation_single"])} == {"sts_occupation_single"}


def test_estimators_in_one_run_only_are_rows_and_refused_gates_fail(runs, tmp_path, capsys, unverified):
    b = _copy(runs, tmp_path)
    frame = pd.read_parquet(b / "labels" / "gender.parquet")
    frame.loc[frame["probe_id"].str.startswith("pst_single"), "annotator"] = "other-vqa"
    frame.to_parquet(b / "labels" / "gender.parquet", index=False)
    rc, out, err = t2ibench(capsys, runs["a"], b, "--quiet", "--n-resamples", N_RES, "--fail-if-worse",
                            "sts_occupation_single")
    assert rc == 3 and "not comparable: different estimators" in error_lines(err)[0], err
    rc, _, err = t2ibench(capsys, runs["a"], b, "--quiet", "--n-resamples", N_RES, "--fail-if-worse", "paintskills_object")
    assert rc == 3 and "paintskills_object could not be compared" in error_lines(err)[0] \
        and "no run holds this score" in error_lines(err)[0], err


def test_a_run_against_itself_tests_nothing_and_says_so_once(runs, capsys, unverified):
    """Identical labels: every score identical, nothing tested, no MDD (not "Holm-corrected across
    the 0 differences tested" beside "MDD over the 1 tests")."""
    rc, out, _ = t2ibench(capsys, runs["a"], runs["a"], "--quiet", "--n-resamples", N_RES)
    text = " ".join(out.split())
    assert rc == 0 and "no difference was tested, so nothing is corrected and no MDD is given" in text, text
    assert "across the 0" not in text and "over the 1 tests" not in text and "MDD: the minimum" not in text


def test_all_gates_every_score_with_a_direction(runs, tmp_path, capsys, unverified):
    b = _copy(runs, tmp_path)
    (b / "labels" / "attributes.parquet").unlink()
    rc, _, err = t2ibench(capsys, runs["a"], b, "--quiet", "--n-resamples", N_RES, "--fail-if-worse", "all")
    assert rc == 3 and "mad_attribute" in err
    rc, _, err = t2ibench(capsys, runs["a"], runs["a"], "--quiet", "--n-resamples", N_RES, "--fail-if-worse", "all")
    assert rc == 0 and not err.strip(), err  # a run against itself: identical on every resample


# --------------------------------------------------------------------------- no verdict without variation


def _moved(path, src, probe_id: str):
    """A copy of run ``src`` with the gender label of one image flipped."""
    shutil.copytree(src, path)
    frame = pd.read_parquet(path / "labels" / "gender.parquet")
    at = frame["probe_id"] == probe_id
    frame.loc[at, "label"] = frame.loc[at, "label"].map({"male": "female", "female": "male"})
    frame.loc[at, "answer"] = frame.loc[at, "label"]
    frame.to_parquet(path / "labels" / "gender.parquet", index=False)
    return path


@pytest.mark.parametrize("per_profession", [1, 9])
def test_one_moved_label_is_never_significant_at_any_number_of_resamples(tmp_path, per_profession):
    """One image's label moved: never significant, however many resamples and swaps. With one image
    per profession gender MAD is 0.5 in every profession whatever the labels: no swap can change
    it, so it is not tested (a gate on it could never fail); average gender is tested exactly."""
    dalle = _dalle(per_profession, 65 if per_profession == 1 else 8)
    a = small_run(tmp_path / "a", 3, dalle)
    b = _moved(tmp_path / "b", a, dalle["probe_id"].iloc[0])
    for n in (20, 1000, 5000) if per_profession == 1 else (200, 5000):
        comparison = compare_runs(a, b, n_resamples=n, scores=["average_gender", "mad_gender"])
        for r in comparison.rows:
            if per_profession == 1 and r["name"] == "mad_gender":
                assert r["status"] == "not tested" and "no swap" in r["reason"] and "one image" in r["reason"] \
                    and "p" not in r, r
            else:
                assert r["status"] == "compared" and not r["significant"] and r["p"] > 0.05, (n, r)


def test_compare_says_which_limit_gives_two_images_per_prompt(tmp_path, capsys, unverified):
    dalle = _dalle(1, 65)
    a = small_run(tmp_path / "a", 3, dalle, limit_per_suite=200)
    b = _moved(tmp_path / "b", a, dalle["probe_id"].iloc[0])
    rc, out, _ = t2ibench(capsys, a, b, "--quiet", "--n-resamples", 50)
    text = " ".join(out.split())
    assert rc == 0 and "not tested" in text and "significantly" not in text
    assert re.search(r"a \(--limit 200\): dalleval_bias: \d+ of the \d+ prompts kept have one image .*"
                     r"--limit 504 gives each two", text), text


# --------------------------------------------------------------------------- bad input: one line, before any work


def _no_work(*args, **kwargs):
    raise AssertionError("compare started working on bad input")


BAD = [
    # (case, arguments after the two runs (a, b: run folders), what the one line says)
    ("out-is-a-runs-results", ["--out", "{b}/results.json"], "inside the run folder"),
    ("out-inside-a-run", ["--out", "{a}/deep/compare.json"], "inside the run folder"),
    ("markdown-inside-a-run", ["--out", "{tmp}/x.json", "--markdown", "{a}/labels/x.md"], "inside the run folder"),
    ("plot-beside-out-is-a-folder", ["--out", "{tmp}/same.json"], "--plot: "),
    ("out-is-a-folder", ["--out", "{tmp}"], "is a folder, not a file"),
    ("out-in-proc", ["--out", "/proc/x.json"], "cannot write /proc/x.json"),
    ("out-is-a-results-file-compared", ["--out", "{tmp}/lone.json"], "one of the runs compared"),
    ("negative-random-state", ["--random-state", "-5"], "expected a whole number from 0 to 4294967295, got -5"),
    ("huge-random-state", ["--random-state", str(2**40)], "expected a whole number from 0 to 4294967295"),
    ("resamples-past-the-bound", ["--n-resamples", "1000000000"], "expected a whole number from 2 to 20,000"),
    ("resamples-once-accepted-that-never-finished", ["--n-resamples", "772865"], "the time grows with it"),
    ("one-resample", ["--n-resamples", "1"], "expected a whole number from 2 to"),
    ("detect-zero", ["--detect", "0"], "expected a positive change X or SCORE=X"),
    ("detect-text", ["--detect", "mad_gender=abc"], "expected a positive change X or SCORE=X"),
    ("detect-unknown-score", ["--detect", "nope=0.1"], "--detect: unknown score 'nope'"),
    ("allow-missing-alone", ["--allow-missing"], "--allow-missing goes with --fail-if-worse"),
    ("gate-on-a-described-score", ["--fail-if-worse", "average_skin_tone"], "has no better direction"),
    ("gate-on-an-unknown-score", ["--fail-if-worse", "nope"], "--fail-if-worse: unknown score 'nope'"),
]


@pytest.mark.parametrize("case,args,message", BAD, ids=[c for c, _, _ in BAD])
def test_bad_input_is_one_line_before_any_work(runs, tmp_path, capsys, monkeypatch, case, args, message):
    monkeypatch.setattr(compare_command, "compare_runs", _no_work)
    if case == "plot-beside-out-is-a-folder":
        (tmp_path / "same.png").mkdir()
    lone = tmp_path / "lone.json"
    lone.write_text("{}")
    results = runs["b"] / "results.json"
    before = results.read_bytes() if results.exists() else None
    fill = {"a": runs["a"], "b": runs["b"], "tmp": tmp_path}
    rest = [a.format(**fill) for a in args]
    given = [runs["a"], lone] if case == "out-is-a-results-file-compared" else [runs["a"], runs["b"]]
    rc, out, err = t2ibench(capsys, *given, *rest)
    lines = [ln for ln in err.strip().splitlines()]
    assert rc == 2 and len(lines) == 1 and re.match(r"t2ibench( compare)?: error: ", lines[0]) \
        and message in lines[0], (err, out)
    assert "Traceback" not in err and not out
    assert (results.read_bytes() if results.exists() else None) == before
    assert not (runs["a"] / "deep").exists()


def test_a_single_run_is_one_line(runs, capsys):
    rc, _, err = t2ibench(capsys, runs["a"])
    assert rc == 2 and error_lines(err) == [err.strip()] and "at least two runs" in err


# --------------------------------------------------------------------------- folders verify rejects, other versions


def _truncate_png(run):
    png = sorted((run / "images").rglob("*.png"))[0]
    png.write_bytes(png.read_bytes()[:100])
    return png.relative_to(run).as_posix()


def _swap_labels(run):
    d = run / "labels"
    for suffix in ("", ".sha256"):  # each file with its own record: both match their records
        (d / f"attributes.parquet{suffix}").rename(d / "swap")
        (d / f"gender.parquet{suffix}").rename(d / f"attributes.parquet{suffix}")
        (d / "swap").rename(d / f"gender.parquet{suffix}")
    return "labels/attributes.parquet"


def _urandom_labels(run):
    (run / "labels" / "gender.parquet").unlink()
    os.symlink("/dev/urandom", run / "labels" / "gender.parquet")
    return "labels/gender.parquet"


@pytest.mark.parametrize("damage", [_truncate_png, _swap_labels, _urandom_labels],
                         ids=["truncated-png", "swapped-label-files", "label-file-linked-to-urandom"])
def test_folders_verify_rejects_are_refused_in_one_line(tiny_audit, tmp_path, capsys, damage):
    run = shutil.copytree(tiny_audit, tmp_path / "damaged", symlinks=True)
    where = damage(run)
    for pair in ((tiny_audit, run), (run, tiny_audit)):
        rc, out, err = t2ibench(capsys, *pair, "--quiet")
        (line,) = error_lines(err)
        assert rc == 2 and line.startswith(f"t2ibench: error: compare refused: {run} does not match its files") \
            and where in line and "t2ibench verify" in line, err
        assert "Traceback" not in err and "score " not in out


@pytest.mark.parametrize("edit,message", [
    (lambda run: _edit_json(run / "run_config.json", package_version="0.0.9"), "differ in package version"),
    (lambda run: _edit_json(run / "results.json", schema_version="2.0"), "differ in results schema version"),
], ids=["package-version", "results-schema-version"])
def test_runs_of_other_versions_are_refused_in_one_line(tiny_audit, tmp_path, capsys, edit, message):
    run = shutil.copytree(tiny_audit, tmp_path / "other")
    edit(run)
    rc, _, err = t2ibench(capsys, tiny_audit, run, "--quiet")
    (line,) = error_lines(err)
    assert rc == 2 and message in line and "compare audits made (and scored) with one version" in line, err


def _edit_json(path, **values):
    path.write_text(json.dumps({**json.loads(path.read_text()), **values}))


# --------------------------------------------------------------------------- the CI recipe of docs/compare.md


def _recipe() -> tuple[list[str], int, list[str]]:
    """The suites, limit and gated scores of the CI recipe in docs/compare.md."""
    text = (ROOT / "docs" / "compare.md").read_text(encoding="utf-8")
    block = text[text.index("```yaml"):]
    block = " ".join(block[:block.index("```", 7)].split())
    run = re.search(r"t2ibench run .*?--suites ((?:[a-z_]+ )+)--limit (\d+)", block)
    gate = re.search(r"--fail-if-worse ((?:[a-z_]+ ?)+)", block)
    assert run and gate, "the recipe must run t2ibench with --suites and --limit and gate with --fail-if-worse"
    return run.group(1).split(), int(run.group(2)), gate.group(1).split()


def test_the_ci_recipe_gates_only_on_scores_its_size_can_test(tmp_path):
    """Two synthetic audits of the recipe's suites at its --limit, labels drawn at random: every
    score the recipe gates on is compared (tested), none is left untestable by its size."""
    suites, limit, gated = _recipe()
    probes = build_probes(suites, limit)
    for name, seed in (("a", 1), ("b", 2)):
        rng = np.random.default_rng(seed)
        frames = [probes[probes["suite"] == s] for s in suites]
        write_run(tmp_path / name, frames, model="org/model", builtin=False)
        attrs, gender = [], []
        for s, frame in zip(suites, frames):
            if s == "gep_neutral":
                attrs += _gep_rows(frame, rng, 0.0)
            elif s in ("dalleval_bias", "pst_single"):
                if s == "pst_single":
                    other = np.where(frame["stereotyped_gender"] == "male", "female", "male")
                    labels = np.where(rng.uniform(size=len(frame)) < 0.7, frame["stereotyped_gender"], other)
                else:
                    labels = np.where(rng.uniform(size=len(frame)) < 0.6, "male", "female")
                gender += gender_rows(frame, labels)
            else:
                pytest.fail(f"the recipe audits {s}: add its synthetic labels to this test")
        write_labels(tmp_path / name, "attributes", attrs or [{"probe_id": "x", "attribute": "a", "score": None,
                                                               "label": 0, "estimator": "vqa", "annotator": "vqa"}])
        write_labels(tmp_path / name, "gender", gender)
    comparison = compare_runs(tmp_path / "a", tmp_path / "b", n_resamples=100, scores=gated)
    for name in gated:
        rows = [r for r in comparison.rows if r["name"] == name]
        assert rows and all(r["status"] == "compared" for r in rows), (name, [(r["status"], r.get("reason"))
                                                                              for r in rows])
    assert not comparison.uncompared(gated)
