"""How many images are enough: the plan of ``t2ibench run`` warns when ``--limit`` leaves the
prompts of a suite one image each (and says which limit would not), and ``t2ibench compare
--detect X`` tells the images per prompt a change of X needs (benchmark.scores.design)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from benchmark.compare import compare_runs
from benchmark.contract.audit_request import ProbeChoice
from benchmark.compare.present import comparison_markdown, detect_lines
from benchmark.runner.preflight import AuditPlan
from benchmark.runner.probe_choice import build_probes, choose_probes, limit_probes, prompt_key
from benchmark.scores.design import (
    images_needed, mdd_factor, planned_mdd, single_image_prompts, single_image_summary, single_image_warnings,
)
from test_compare_gates import _dalle, small_run


@pytest.fixture(scope="module")
def full():
    return build_probes(["gep_neutral", "dalleval_bias", "pst_single", "paintskills_object"])


def test_a_limit_leaving_one_image_per_prompt_is_named_with_the_limit_that_would_not(full):
    flagged = {s["suite"]: s for s in single_image_prompts(full, limit_probes(full, 200), limit_probes, prompt_key)}
    # 252 DALL-Eval prompts of 9 images: 200 keeps one image of 200 of them; pst_single: 112 identities of 3,
    # 200 keeps two of 88 and one of 24; the 32 GEP prompts of 5 fit (160); PaintSkills has one image per scene
    assert set(flagged) == {"dalleval_bias", "pst_single"}
    assert flagged["dalleval_bias"] == {"suite": "dalleval_bias", "single": 200, "prompts": 200, "full_per_prompt": 9,
                                        "limit": 504}
    assert flagged["pst_single"]["single"] == 24 and flagged["pst_single"]["limit"] == 224
    # the limit it names gives every prompt two images: nothing is flagged there
    assert single_image_prompts(full, limit_probes(full, 504), limit_probes, prompt_key) == []
    (line,) = [w for w in single_image_warnings(full, limit_probes(full, 200), limit_probes, prompt_key)
               if w.startswith("dalleval_bias")]
    assert line == ("dalleval_bias: 200 of the 200 prompts kept have one image (the suite has 9 per prompt): no "
                    "resample can see a prompt's noise there and a MAD over one image per prompt cannot change, so "
                    "`t2ibench compare` shows no interval and does not test that MAD; --limit 504 gives each two")


def test_the_run_plan_carries_the_warning(tmp_path):
    def plan(limit):
        chosen = choose_probes(ProbeChoice(suites=["dalleval_bias", "gep_neutral"], limit_per_suite=limit))
        return AuditPlan(run_dir=Path(tmp_path), model="org/model", pipeline="StableDiffusionPipeline", settings={},
                         images={"dalleval_bias": 1, "gep_neutral": 1}, done=0, annotators={}, chosen=chosen).format()

    text = plan(100)
    (line,) = [ln for ln in text.splitlines() if "warning:" in ln]  # gep_neutral: 100 keeps 3 of each of 32 prompts
    assert "dalleval_bias: 100 of the 100 prompts kept have one image" in line and "--limit 504 gives each two" in line
    assert "warning:" not in plan(504) and "warning:" not in plan(None)


def test_many_flagged_suites_make_one_line_with_the_limit_for_them_all():
    suites = ["gep_neutral", "dalleval_bias", "pst_single", "mcas_targets"]
    full = build_probes(suites)
    limited = limit_probes(full, 16)
    flagged = single_image_prompts(full, limited, limit_probes, prompt_key)
    assert len(flagged) == 4  # 16 keeps one image of each prompt of every suite here
    (line,) = single_image_summary(full, limited, limit_probes, prompt_key)
    limit = max(s["limit"] for s in flagged)
    assert line.startswith("4 suites keep prompts with one image (gep_neutral 16 of 16, dalleval_bias 16 of 16, ")
    assert line.endswith(f"; --limit {limit} gives every one of them two")
    assert single_image_prompts(full, limit_probes(full, limit), limit_probes, prompt_key) == []
    # two suites or fewer: a line each, as compare prints them
    two = limit_probes(build_probes(suites[:2]), 16)
    assert single_image_summary(build_probes(suites[:2]), two, limit_probes, prompt_key) == single_image_warnings(
        build_probes(suites[:2]), two, limit_probes, prompt_key)


def test_images_needed_follows_one_over_the_square_root():
    assert images_needed(0.1, 0.05, 9) == {"factor": 4.0, "per_prompt": 36}
    assert images_needed(0.02, 0.05, 9)["per_prompt"] == 2  # detectable now: fewer would do
    assert images_needed(0.1, 0.05) == {"factor": 4.0, "per_prompt": None}
    with pytest.raises(ValueError):
        images_needed(0.1, 0)


def test_compare_detect_tells_the_images_per_prompt_a_change_needs(tmp_path):
    dalle = _dalle(9, 8)
    a, b = small_run(tmp_path / "a", 1, dalle), small_run(tmp_path / "b", 2, dalle)
    comparison = compare_runs(a, b, n_resamples=200, detect=[(None, 0.05), ("average_gender", 0.5)])
    by = {(d["name"], d["target"]): d for d in comparison.detect}
    mad = by[("mad_gender", 0.05)]  # a headline score: asked for by the bare 0.05
    (row,) = [r for r in comparison.rows if r["name"] == "mad_gender"]
    assert mad["mdd"] == row["mdd"] and mad["images_per_prompt"] == 9
    assert mad["needed_per_prompt"] == math.ceil(9 * (row["mdd"] / 0.05) ** 2 - 1e-9)
    assert ("average_gender", 0.05) not in by and ("average_gender", 0.5) in by  # not a headline score: named
    lines = detect_lines(comparison)
    assert lines[0].startswith("How many images are enough")
    assert any(line.strip().startswith("Gender MAD (dalleval_bias") and "to detect 0.05" in line for line in lines)
    assert "How many images are enough" in comparison_markdown(comparison)
    assert comparison.to_dict()["detect"] == comparison.detect


# --------------------------------------------------------------------------- --pilot: the plan's detectable change


def _pilot_doc(low: float, high: float, images: int, *, suite: str = "paintskills_object") -> dict:
    return {"suites": [{"name": suite, "n_scored_images": images}],
            "scores": [{"name": "paintskills_object", "suite": suite, "subset": None, "estimator": None,
                        "annotator": "det", "headline": True, "defined": True,
                        "ci": {"low": low, "high": high, "confidence_level": 0.95}}]}


def test_planned_mdd_scales_the_pilot_interval_to_the_planned_images():
    (row,) = planned_mdd(_pilot_doc(30.0, 40.0, 100), {"paintskills_object": 400, "gep_neutral": 64})
    se = 10.0 / (2 * 1.959964) * math.sqrt(100 / 400)  # the pilot's SE, at four times the images
    assert row["mdd"] == pytest.approx(mdd_factor() * math.sqrt(2) * se)
    assert (row["pilot_images"], row["planned_images"]) == (100, 400)
    assert planned_mdd(_pilot_doc(30.0, 40.0, 100), {"gep_neutral": 64}) == []  # a suite not planned
    (flat,) = planned_mdd(_pilot_doc(0.0, 0.0, 100), {"paintskills_object": 400})
    assert "mdd" not in flat and "no width" in flat["reason"]


def test_a_change_of_the_planned_mdd_is_found_as_often_as_one_of_the_true_mdd():
    """Truth known: accuracy over objects found with probability 0.4. A pilot of 100 images gives
    its interval (the project's own bootstrap); the MDD it plans for 400 images is, over 200
    pilots, close to the true one (2.80 x sqrt(2 p (1 - p) / 400)), and a true change of the
    planned MDD between two independent audits of 400 images is found (two-sided z-test at
    0.05) about as often as a change of the true MDD: 76.9% and 79.2% of 2,000 simulations (the
    variance grows a little with the change itself), so the band is around 78%."""
    from scipy import stats

    from benchmark.tasks.paintskills.scores import skill_accuracy

    p, pilot_n, planned_n = 0.4, 100, 400
    true_mdd = mdd_factor() * math.sqrt(2 * p * (1 - p) / planned_n) * 100  # accuracy in points
    rng = np.random.default_rng(0)
    found = planned = 0
    mdds = []
    for _ in range(200):
        pilot = skill_accuracy(rng.uniform(size=pilot_n) < p, n_resamples=400, random_state=int(rng.integers(1 << 30)))
        ci = pilot["accuracy_ci"]
        (row,) = planned_mdd(_pilot_doc(ci["low"], ci["high"], pilot_n), {"paintskills_object": planned_n})
        mdd = row["mdd"] / 100
        mdds.append(row["mdd"])
        a = (rng.uniform(size=planned_n) < p).mean()
        b = (rng.uniform(size=planned_n) < p + mdd).mean()
        pooled = math.sqrt(a * (1 - a) / planned_n + b * (1 - b) / planned_n)
        found += 2 * stats.norm.sf(abs(b - a) / pooled) < 0.05
        planned += 1
    print(f"median planned MDD {np.median(mdds):.2f} vs true {true_mdd:.2f}; found {found} of {planned}")
    assert abs(np.median(mdds) / true_mdd - 1) < 0.1, (np.median(mdds), true_mdd)
    low, high = stats.binom.ppf(0.005, planned, 0.78), stats.binom.isf(0.005, planned, 0.78)
    assert low <= found <= high, f"found {found} of {planned}, band [{low}, {high}] around 78%"


def test_the_plan_prints_the_detectable_change_from_a_pilot(tmp_path):
    """A pilot without per-probe labels (an earlier version's results): scaled from its interval,
    and the line says so."""
    import json

    from benchmark.runner.preflight import detectable_lines
    from test_leaderboard import make_doc

    pilot = tmp_path / "pilot.json"
    pilot.write_text(json.dumps(make_doc("org/pilot", 0.2)), encoding="utf-8")  # GEP (neutral) 0.2 [0.18, 0.22]
    first, note = detectable_lines(pilot, {"gep_neutral": 160})
    se = 0.04 / (2 * 1.959964) * math.sqrt(40 / 160)
    assert first == (f"GEP (neutral) (gep_neutral): {mdd_factor() * math.sqrt(2) * se:.3g} (pilot: 40 images, here "
                     "160; scaled from the pilot's interval)")
    assert "drawn independently" in note and "compare" in note
    text = AuditPlan(run_dir=tmp_path, model="org/model", pipeline="StableDiffusionPipeline", settings={},
                     images={"gep_neutral": 160}, done=0, annotators={}, detectable=[first, note]).format()
    assert f"  detectable: {first}\n" in text and f"\n              {note}\n" in text
    assert detectable_lines(pilot, {"mcas_targets": 20}) == [f"the pilot {pilot} scored none of these suites"]
    pilot.write_text("{}", encoding="utf-8")
    with pytest.raises(ValueError, match="--pilot .*: not a valid results file"):
        detectable_lines(pilot, {"gep_neutral": 160})


def test_a_pilot_with_its_labels_plans_by_simulation(tmp_path):
    """A pilot scored by this version carries its labels: the plan simulates the planned design
    from them (one image per prompt included) and says so."""
    from benchmark.runner.preflight import detectable_lines
    from benchmark.runner.score import score_run

    dalle = _dalle(2, 8)
    run = small_run(tmp_path / "pilot", 4, dalle)
    score_run(run, n_resamples=20)
    chosen = choose_probes(ProbeChoice(suites=["dalleval_bias"], limit_per_suite=300))
    lines = detectable_lines(run / "results.json", {"dalleval_bias": 300}, chosen)
    (mad,) = [ln for ln in lines if ln.startswith("Gender MAD (dalleval_bias")]
    assert "pilot: 16 images, here 300; simulated from the pilot's labels" in mad, lines
    assert float(mad.split(": ")[1].split(" ")[0]) > 0


def test_a_garbage_pilot_is_refused_in_one_line_before_any_heavy_library(tmp_path):
    from test_cli_checks import HEAVY, imported_modules

    garbage = tmp_path / "pilot.json"
    garbage.write_bytes(bytes(range(256)) * 8)
    names, proc = imported_modules("run", "--model", "builtin:tiny-sd", "--out", str(tmp_path / "out"), "--pilot",
                                   str(garbage))
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("import time:")]
    assert proc.returncode == 2 and len(lines) == 1 and "--pilot" in lines[0] and "is not a results file" in lines[0]
    assert not names & set(HEAVY), sorted(names & set(HEAVY))
    garbage.write_text('{"not": "results"}')
    names, proc = imported_modules("run", "--model", "builtin:tiny-sd", "--out", str(tmp_path / "out"), "--pilot",
                                   str(garbage))
    assert proc.returncode == 2 and "schema_version, suites and scores" in proc.stderr
