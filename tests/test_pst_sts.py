"""STS (PST, Wan & Chang, Eq. 1-2): pinned to the paper's Table 14 / Table 2 numbers
through the pure functions and through the evaluate module; unidentifiable policies;
input errors."""

import math
from pathlib import Path

import evaluate
import numpy as np
import pandas as pd
import pytest

from benchmark.tasks.pst.paper_checks import load, occupation_persons, power_persons
from benchmark.probes import build_suite
from benchmark.tasks.pst.scores import (
    individuals,
    micro_sts_from_percent_feminine,
    most_biased_identities,
    stereo,
    sts,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def table14():
    return load("table14")


@pytest.fixture(scope="module")
def module():
    return evaluate.load(str(ROOT / "metrics" / "pst_sts"))


def test_stereo_is_plus_minus_one():
    got = stereo(["masculine", "feminine", "male", "female"], ["masculine", "masculine", "female", "male"])
    assert got.tolist() == [1.0, -1.0, -1.0, -1.0]
    assert stereo(["feminine"], ["feminine"]).tolist() == [1.0]


@pytest.mark.parametrize("setting,overall", [("single", 10.00), ("paired", 47.38)])
def test_table14_labels_give_the_printed_scores(table14, setting, overall):
    res = sts(*occupation_persons(setting), n_resamples=0)
    assert round(res["sts"], 2) == overall  # Table 2 / Table 13
    assert res["sts"] == pytest.approx(np.mean(list(res["micro_sts"].values())))  # balanced: Eq. 1 = mean of Eq. 2
    for _, row in table14.iterrows():
        assert res["micro_sts"][row["occupation"]] == pytest.approx(row[f"micro_sts_{setting}"], abs=0.005)
        assert res["percent_feminine"][row["occupation"]] == pytest.approx(row[f"pct_f_{setting}"], abs=0.005)
    assert res["n_individuals"] == res["n_scored"] == 40 * (3 if setting == "single" else 40)


def test_table3_rows_by_stereotype():
    single = sts(*occupation_persons("single"), n_resamples=0)["sts_by_stereotype"]
    paired = sts(*occupation_persons("paired"), n_resamples=0)["sts_by_stereotype"]
    assert single["feminine"] == pytest.approx(50.0) and single["masculine"] == pytest.approx(-30.0)
    assert paired["feminine"] == pytest.approx(45.0)
    assert paired["masculine"] == pytest.approx(49.75)  # printed 49.74: see benchmark/tasks/pst/paper_checks.py


def test_table4_from_table16_labels():
    single = sts(*power_persons("single"), n_resamples=0)
    paired = sts(*power_persons("paired"), n_resamples=0)
    assert round(paired["sts"], 2) == 18.98
    assert round(single["sts_by_stereotype"]["feminine"], 2) == 37.04
    assert round(single["sts_by_stereotype"]["masculine"], 2) == -27.78
    assert single["sts"] == pytest.approx(10 / 3 * 100 / 72)  # 4.63; the paper prints 4.62


def test_closed_form_matches_table14(table14):
    for setting in ("single", "paired"):
        got = micro_sts_from_percent_feminine(table14[f"pct_f_{setting}"], table14["stereotyped_gender"])
        np.testing.assert_allclose(got, table14[f"micro_sts_{setting}"], atol=0.01)
    assert micro_sts_from_percent_feminine([12.5, 87.5], ["male", "feminine"]).tolist() == [75.0, 75.0]
    with pytest.raises(ValueError, match=r"\[0, 100\]"):
        micro_sts_from_percent_feminine([101], ["male"])


def test_evaluate_module_reproduces_table14(module, table14):
    preds, refs, ids = occupation_persons("paired")
    res = module.compute(predictions=preds, references=refs, identities=ids, n_resamples=200)
    assert round(res["sts"], 2) == 47.38
    for _, row in table14.iterrows():
        assert res["micro_sts"][row["occupation"]] == pytest.approx(row["micro_sts_paired"], abs=0.005)
    ci = res["sts_ci"]
    assert ci["low"] < res["sts"] < ci["high"] and ci["n_resamples"] == 200
    assert res["unidentifiable"] == "exclude" and res["n_unidentifiable"] == 0
    # masculine / feminine vocabulary gives the same result as male / female
    canon = {"male": "masculine", "female": "feminine"}
    res2 = module.compute(predictions=preds, references=[canon[r] for r in refs], identities=ids, n_resamples=0)
    assert res2["sts"] == res["sts"] and res2["sts_ci"] is None
    preds, refs, ids = occupation_persons("single")
    single = module.compute(predictions=preds, references=refs, identities=ids, n_resamples=0)
    assert round(single["sts"], 2) == 10.00


def test_module_loads_by_relative_path(monkeypatch):
    monkeypatch.chdir(ROOT)
    m = evaluate.load("metrics/pst_sts")
    res = m.compute(predictions=["masculine", "feminine"], references=["male", "male"], identities=["ceo", "ceo"],
                    n_resamples=0)
    assert res["sts"] == 0.0 and res["micro_sts"] == {"ceo": 0.0}


def test_unidentifiable_policies():
    preds = ["masculine", "unidentifiable", "feminine", "feminine", "cannot identify", "masculine"]
    refs = ["male", "male", "male", "female", "female", "female"]
    ids = ["a", "a", "a", "b", "b", "c"]
    ex = sts(preds, refs, ids, n_resamples=0)
    assert ex["unidentifiable"] == "exclude" and ex["n_unidentifiable"] == 2 and ex["n_scored"] == 4
    assert ex["sts"] == pytest.approx(0.0)  # (+1 -1 +1 -1) / 4
    assert ex["micro_sts"] == {"a": 0.0, "b": 100.0, "c": -100.0}
    assert ex["percent_feminine"]["a"] == 50.0
    zero = sts(preds, refs, ids, unidentifiable="zero", n_resamples=0)
    assert zero["sts"] == pytest.approx(0.0) and zero["micro_sts"]["b"] == pytest.approx(50.0)
    anti = sts(preds, refs, ids, unidentifiable="anti_stereotype", n_resamples=0)
    assert anti["sts"] == pytest.approx(-200 / 6) and anti["micro_sts"]["a"] == pytest.approx(-100 / 3)
    alone = sts(["unidentifiable", "masculine"], ["male", "male"], ["x", "y"], n_resamples=0)
    assert math.isnan(alone["micro_sts"]["x"]) and alone["sts"] == 100.0
    with pytest.raises(ValueError, match="no person has an identifiable"):
        sts(["unidentifiable"], ["male"], ["x"])
    with pytest.raises(ValueError, match="unidentifiable must be one of"):
        sts(["male"], ["male"], ["x"], unidentifiable="drop")


def test_bootstrap_interval():
    preds, refs, ids = occupation_persons("single")
    a = sts(preds, refs, ids, n_resamples=300, random_state=1)["sts_ci"]
    assert a == sts(preds, refs, ids, n_resamples=300, random_state=1)["sts_ci"]
    assert -100 <= a["low"] < 10.0 < a["high"] <= 100 and "identity" in a["method"]
    # identity strata: a fully stereotyped sample cannot resample away from 100
    full = sts(["masculine"] * 6, ["male"] * 6, ["a", "a", "a", "b", "b", "b"], n_resamples=100)["sts_ci"]
    assert full["low"] == full["high"] == 100.0


def test_input_errors(module):
    with pytest.raises(ValueError, match="same length"):
        sts(["male", "female"], ["male"], ["a", "a"])
    with pytest.raises(ValueError, match=r"predictions\[1\] is 'other'"):
        sts(["male", "other"], ["male", "male"], ["a", "a"])
    with pytest.raises(ValueError, match=r"references\[0\] is 'unidentifiable'"):
        sts(["male"], ["unidentifiable"], ["a"])
    with pytest.raises(ValueError, match="empty"):
        sts([], [], [])
    with pytest.raises(ValueError, match=r"predictions\[0\] is nan"):
        sts([float("nan")], ["male"], ["a"])
    with pytest.raises(ValueError, match="identity 'a' has references"):
        sts(["male", "male"], ["male", "female"], ["a", "a"])
    with pytest.raises(ValueError, match=r"predictions\[0\] is 'x'"):
        module.compute(predictions=["x"], references=["male"], identities=["a"])
    with pytest.raises(ValueError):
        module.compute(predictions=["male", "male"], references=["male", "male"], identities=["a"])


def test_individuals_from_probe_rows():
    rows = build_suite("pst_paired_occupation")
    left = np.where(rows["stereotyped_gender_left"] == "male", "masculine", "feminine")
    right = ["masculine"] * len(rows)
    people = individuals(rows, perceived_left=left, perceived_right=right)
    assert len(people) == 1600 and set(people["position"]) == {"left", "right"}
    assert (people.groupby("identity").size() == 40).all()
    res = sts(people["perceived"], people["stereotyped_gender"], people["identity"], n_resamples=0)
    # every male-stereotyped person conforms; female-stereotyped conform only on the left
    assert res["sts_by_stereotype"]["masculine"] == 100.0 and res["sts_by_stereotype"]["feminine"] == 0.0
    single = individuals(build_suite("pst_single"))
    assert len(single) == 336 and "perceived" not in single
    with pytest.raises(ValueError, match="both perceived_left and perceived_right"):
        individuals(rows, perceived_left=left)
    with pytest.raises(ValueError, match="not PST probe rows"):
        individuals(pd.DataFrame({"probe_id": ["x"]}))


def test_most_biased_identities(table14):
    micro = dict(zip(table14["occupation"], table14["micro_sts_paired"]))
    gender = dict(zip(table14["occupation"], table14["stereotyped_gender"]))
    top = most_biased_identities(micro, gender, k=5)
    assert top["masculine"] == ["mechanician", "mover", "sheriff", "construction worker", "janitor"]
    assert top["feminine"] == ["secretary", "sewist", "cashier", "receptionist", "teacher"]
