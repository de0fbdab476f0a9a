"""Agreement statistics (benchmark.scores.agreement) and the human_agreement module:
each statistic equals scipy / scikit-learn / statsmodels / krippendorff computed
independently, textbook values, the paper's printed Kendall's tau, and error cases."""

from pathlib import Path

import evaluate
import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score, matthews_corrcoef, roc_auc_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from benchmark.scores import agreement as ag
from benchmark.scores.agreement import UndefinedStatisticWarning

ROOT = Path(__file__).resolve().parents[1]
rng = np.random.default_rng(12345)


# --- equal to the reference libraries on random inputs -------------------------------

@pytest.mark.parametrize("n_raters, n_cat", [(3, 2), (5, 4)])
def test_fleiss_equals_statsmodels_on_a_table_built_here(n_raters, n_cat):
    labels = rng.integers(0, n_cat, size=(60, n_raters))
    labels[:20] = labels[:20, :1]  # some agreement
    table = np.zeros((60, n_cat))
    for i, row in enumerate(labels):
        for v in row:
            table[i, v] += 1
    assert ag.fleiss_kappa(labels) == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)
    # string labels and a fixed category list give the same value
    names = np.array([f"c{k}" for k in range(n_cat + 1)])
    assert ag.fleiss_kappa(names[labels].tolist(), categories=list(names)) == pytest.approx(
        sm_fleiss(np.c_[table, np.zeros(60)], method="fleiss"), abs=1e-12)


def test_krippendorff_equals_package_with_missing():
    labels = rng.integers(1, 5, size=(40, 4)).astype(float)
    labels[rng.random(labels.shape) < 0.2] = np.nan
    for level in ("nominal", "ordinal", "interval"):
        want = krippendorff.alpha(reliability_data=labels.T, level_of_measurement=level)
        assert ag.krippendorff_alpha(labels, level) == pytest.approx(want, abs=1e-12)
    # nominal on strings: relabelling does not change alpha
    as_str = [[None if np.isnan(v) else f"L{int(v)}" for v in row] for row in labels]
    assert ag.krippendorff_alpha(as_str) == pytest.approx(
        krippendorff.alpha(reliability_data=labels.T, level_of_measurement="nominal"), abs=1e-12)


def test_cohen_mcc_auc_equal_sklearn():
    y = rng.integers(0, 2, 200)
    p = np.clip(y * 0.3 + rng.random(200) * 0.7, 0, 1)
    pl = (p >= 0.5).astype(int)
    assert ag.cohen_kappa(pl, y) == pytest.approx(cohen_kappa_score(pl, y))
    assert ag.cohen_kappa(pl, y, weights="linear") == pytest.approx(cohen_kappa_score(pl, y, weights="linear"))
    assert ag.mcc(pl, y) == pytest.approx(matthews_corrcoef(pl, y))
    assert ag.roc_auc(p, y) == pytest.approx(roc_auc_score(y, p))
    groups = np.repeat(["boots", "a suit", "jeans", "a tie"], 50)
    per = ag.roc_auc_per_group(p, y, groups)
    want = {g: roc_auc_score(y[groups == g], p[groups == g]) for g in ["boots", "a suit", "jeans", "a tie"]}
    assert per["per_group"] == pytest.approx(want)
    assert per["mean"] == pytest.approx(np.mean(list(want.values())))
    out = ag.binary_agreement(p, y, groups=groups)
    assert out["cohen_kappa"] == pytest.approx(cohen_kappa_score(pl, y))
    assert out["accuracy"] == pytest.approx(np.mean(pl == y)) and out["notes"] == {}
    assert out["roc_auc_mean"] == pytest.approx(per["mean"])


def test_vector_statistics_equal_scipy_and_sklearn():
    x = rng.normal(size=60)
    x[:5] = 0.0  # zeros present
    y = x + rng.normal(scale=0.8, size=60)
    x[10:15] = np.round(x[10:15], 1)  # ties
    assert ag.kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y, variant="b").statistic)
    assert ag.pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic)
    sx, sy = np.where(x >= 0, 1, -1), np.where(y >= 0, 1, -1)
    assert ag.sign_mcc(x, y) == pytest.approx(matthews_corrcoef(sx, sy))
    out = ag.vector_agreement(x, y)
    assert out["kendall_tau_b"] == pytest.approx(ag.kendall_tau_b(x, y)) and out["n"] == 60


# --- known values -------------------------------------------------------------------

def test_fleiss_textbook_example():
    # Fleiss (1971) style example (as on Wikipedia): 10 subjects, 14 raters, 5 categories, kappa = 0.210
    counts = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
              [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    labels = [[c for c, k in enumerate(row) for _ in range(k)] for row in counts]
    assert round(ag.fleiss_kappa(labels), 3) == 0.210


def test_krippendorff_textbook_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers, 12 units,
    # nominal alpha = 0.743 (interval 0.849).
    n = None
    by_observer = [[1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n], [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
                   [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n], [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n]]
    items = [list(col) for col in zip(*by_observer)]
    assert round(ag.krippendorff_alpha(items), 3) == 0.743
    assert round(ag.krippendorff_alpha(items, "interval"), 3) == 0.849


def test_cohen_kappa_hand_example():
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> p_o 0.7, p_e 0.5, kappa 0.4
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert ag.cohen_kappa(a, b) == pytest.approx(0.4)


def test_perfect_agreement_is_one():
    labels = [[0, 0, 0], [1, 1, 1], [1, 1, 1], [0, 0, 0]]
    assert ag.fleiss_kappa(labels) == pytest.approx(1.0)
    assert ag.krippendorff_alpha(labels) == pytest.approx(1.0)
    assert ag.cohen_kappa([0, 1, 1, 0], [0, 1, 1, 0]) == pytest.approx(1.0)
    assert ag.kendall_tau_b([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert ag.roc_auc([0.1, 0.9], [0, 1]) == 1.0


def test_gep_table6_kendall_tau():
    # GEP Table 6: Kendall's tau between each automatic GEP score and GEP_human over the
    # six (model, setting) cells, printed 0.466 / 0.733 / 1.000 (0.4667 is printed truncated
    # as 0.466, so the tolerance is one unit of the last digit).
    human = [0.02, 0.05, 0.07, 0.18, 0.12, 0.14]
    auto = {0.466: [5.15e-3, 5.06e-3, 4.80e-3, 9.81e-3, 9.76e-3, 7.08e-3],
            0.733: [4.49e-3, 5.68e-3, 4.77e-3, 1.10e-2, 1.04e-2, 6.58e-3],
            1.000: [3.79e-2, 4.26e-2, 4.47e-2, 9.25e-2, 5.18e-2, 6.32e-2]}
    for printed, values in auto.items():
        assert abs(ag.kendall_tau_b(values, human) - printed) <= 0.001


def test_sign_mcc_counts_zero_as_positive():
    # GEP App. D: non-negative -> +1. With np.sign the zero would be its own class.
    assert ag.sign_mcc([0.0, -0.3, 0.2, -0.1], [0.4, -0.2, 0.1, -0.5]) == pytest.approx(1.0)
    assert ag.signs([0.0, -0.0, -1e-9]).tolist() == [1, 1, -1]


def test_majority_vote_and_ties():
    mv = ag.majority_vote([[1, 1, 0], [0, 0, 0], ["m", "f"], ["f", None, "f", "m"], [2.0, float("nan"), 3.0]])
    assert mv.labels == [1, 0, None, "f", None]
    assert mv.is_tie.tolist() == [False, False, True, False, True] and mv.n_ties == 2
    assert mv.tied_labels[2] == ["m", "f"] and mv.n_votes.tolist() == [2, 3, 1, 2, 1]
    assert mv.n_annotators.tolist() == [3, 3, 2, 3, 2]
    with pytest.raises(ValueError, match="no label"):
        ag.majority_vote([[None, None]])


def test_cohen_kappa_vs_annotators():
    preds = [1, 0, 1, 1, 0, 0]
    ann = [[1, 1, 0], [0, 0, 0], [1, 0, 1], [1, 1, 1], [0, 1, 0], [1, 0, 0]]
    out = ag.cohen_kappa_vs_annotators(preds, ann)
    per = [cohen_kappa_score(preds, [r[j] for r in ann]) for j in range(3)]
    assert out["per_annotator"] == pytest.approx(per) and out["mean"] == pytest.approx(np.mean(per))
    majority = [1, 0, 1, 1, 0, 0]
    assert out["vs_majority"] == pytest.approx(cohen_kappa_score(preds, majority))


# --- undefined and malformed inputs --------------------------------------------------

@pytest.mark.parametrize("fn, args", [
    (ag.fleiss_kappa, ([[1, 1], [1, 1]],)),
    (ag.krippendorff_alpha, ([[1, 1], [1, 1]],)),
    (ag.cohen_kappa, ([1, 1], [1, 1])),
    (ag.kendall_tau_b, ([1, 1, 1], [1, 2, 3])),
    (ag.pearson, ([1, 2, 3], [5, 5, 5])),
    (ag.sign_mcc, ([0.1, 0.2], [0.3, -0.1])),
    (ag.mcc, ([1, 0], [1, 1])),
    (ag.roc_auc, ([0.2, 0.8], [1, 1])),
])
def test_undefined_is_nan_with_a_reason(fn, args):
    with pytest.warns(UndefinedStatisticWarning, match="undefined"):
        assert np.isnan(fn(*args))


def test_notes_say_why():
    out = ag.binary_agreement([0.9, 0.2, 0.6, 0.4], [1, 0, 1, 0], groups=["a", "a", "b", "b"])
    assert out["roc_auc_per_group"] == {"a": 1.0, "b": 1.0} and out["notes"] == {}
    out = ag.binary_agreement([0.9, 0.2, 0.6, 0.4], [1, 0, 0, 0], groups=["a", "a", "b", "b"])
    assert np.isnan(out["roc_auc_per_group"]["b"]) and out["roc_auc_mean"] == 1.0
    assert "single class" in out["notes"]["roc_auc_per_group"]
    out = ag.vector_agreement([1.0, 1.0, 1.0], [0.1, 0.2, -0.3])
    assert set(out["notes"]) == {"kendall_tau_b", "sign_mcc", "pearson"}


@pytest.mark.parametrize("fn, args, match", [
    (ag.kendall_tau_b, ([1, 2], [1, 2, 3]), "same length"),
    (ag.pearson, ([], []), "empty"),
    (ag.sign_mcc, ([1, float("nan")], [1, 2]), "NaN"),
    (ag.roc_auc, ([0.1, 0.2], [0, 2]), "binary"),
    (ag.cohen_kappa, ([1, None], [1, 0]), "missing"),
    (ag.fleiss_kappa, ([[1, 0], [1, 0, 1]],), "same number of annotators"),
    (ag.fleiss_kappa, ([[1, None], [1, 0]],), "missing labels"),
    (ag.fleiss_kappa, ([[1], [0]],), "at least 2 annotators"),
    (ag.fleiss_kappa, ([[1, 2]], [1]), "expected one of"),
    (ag.krippendorff_alpha, ([[1, None], [None, 2]],), "labelled by two"),
    (ag.krippendorff_alpha, ([["a", "b"]], "interval"), "numeric"),
    (ag.krippendorff_alpha, ([[1, 2]], "cosine"), "level_of_measurement"),
    (ag.roc_auc_per_group, ([0.1, 0.9], [0, 1], ["a"]), "same length"),
    (ag.majority_vote, ("abc",), "list of items"),
])
def test_malformed_input_raises(fn, args, match):
    with pytest.raises(ValueError, match=match):
        fn(*args)


# --- evaluate module ----------------------------------------------------------------

@pytest.fixture(scope="module")
def module():
    return evaluate.load(str(ROOT / "metrics" / "human_agreement"))


def test_module(module, monkeypatch):
    p, y = [0.9, 0.2, 0.6, 0.4, 0.7, 0.1], [1, 0, 1, 0, 0, 0]
    groups = ["a", "a", "a", "b", "b", "b"]
    out = module.compute(predictions=p, references=y, task="binary", groups=groups)
    want = ag.binary_agreement(p, y, groups=groups)
    assert out["roc_auc"] == want["roc_auc"] == pytest.approx(roc_auc_score(y, p))
    assert out["roc_auc_per_group"]["a"] == 1.0 and np.isnan(out["roc_auc_per_group"]["b"])
    assert "roc_auc_per_group" in out["notes"]
    assert module.compute(predictions=p, references=y, items=groups)["roc_auc_mean"] == 1.0
    x, h = [0.3, -0.2, 0.1, 0.0], [0.5, -0.1, -0.05, 0.02]
    vec = module.compute(predictions=x, references=h, task="vector")
    assert vec["kendall_tau_b"] == pytest.approx(stats.kendalltau(x, h).statistic)
    assert vec["sign_mcc"] == pytest.approx(matthews_corrcoef([1, -1, 1, 1], [1, -1, -1, 1]))
    with pytest.raises(ValueError, match="task"):
        module.compute(predictions=x, references=h, task="rank")
    with pytest.raises(ValueError, match="binary"):
        module.compute(predictions=x, references=h, task="binary")
    monkeypatch.chdir(ROOT)
    rel = evaluate.load("metrics/human_agreement")
    assert rel.compute(predictions=[0.9, 0.1], references=[1, 0])["roc_auc"] == 1.0
