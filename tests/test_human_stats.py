"""Human-label statistics (benchmark.human.stats), validation against automatic labels
(benchmark.human.validation, GEP's vectors in benchmark.tasks.gep.human_validation) and the
artificial datasets of GEP App. C (benchmark.tasks.gep.artificial): checked against
statsmodels / krippendorff / sklearn / scipy on random data, on constructed data with known
answers, and against the paper's Table 17."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score, matthews_corrcoef, roc_auc_score
from statsmodels.stats import inter_rater

from benchmark.human import stats, validation
from benchmark.tasks.gep import artificial
from benchmark.tasks.gep.human_validation import VECTOR_SUITES, vector_agreement_tables
from benchmark.scores.agreement import cohen_kappa


def answers_frame(rows):
    """Answers in the contract format from (probe_id, question_type, question_key, annotator, answer)."""
    out = []
    for t, (probe, qtype, key, annotator, answer) in enumerate(rows):
        suite = {"attribute": "gep_neutral", "gender_paired": "pst_paired_occupation",
                 "gender_single": "pst_single", "skin_tone": "dalleval_bias"}[qtype]
        out.append({"item_id": f"{probe}|{qtype}|{key}", "probe_id": probe, "suite": suite, "question_type": qtype,
                    "question_key": key, "answer": answer, "annotator": annotator, "time": float(t),
                    "qualification": False})
    return pd.DataFrame(out, columns=list(stats.ANSWER_COLUMNS))


def random_answers(rng, n_items, annotators, qtype, options, key="", p_missing=0.0, agree=0.6):
    rows = []
    for i in range(n_items):
        truth = options[rng.integers(len(options))]
        for a in annotators:
            if rng.random() < p_missing:
                continue
            ans = truth if rng.random() < agree else options[rng.integers(len(options))]
            rows.append((f"p{i}", qtype, key, a, ans))
    return rows


# --------------------------------------------------------------------------- majority


def test_majority_and_ties_and_disagreements():
    rows = [
        ("a", "attribute", "in a dress", "x", "yes"), ("a", "attribute", "in a dress", "y", "yes"),
        ("a", "attribute", "in a dress", "z", "no"),
        ("b", "attribute", "in a dress", "x", "no"), ("b", "attribute", "in a dress", "y", "no"),
        ("b", "attribute", "in a dress", "z", "no"),
        ("c", "gender_paired", "left", "x", "feminine"), ("c", "gender_paired", "left", "y", "masculine"),
        ("c", "gender_paired", "left", "z", "cannot identify"),
        ("c", "gender_paired", "right", "x", "masculine"), ("c", "gender_paired", "right", "y", "masculine"),
    ]
    maj = stats.item_majorities(answers_frame(rows)).set_index("item_id")
    a = maj.loc["a|attribute|in a dress"]
    assert a["majority"] == "yes" and not a["tie"] and a["agreement"] == pytest.approx(2 / 3) and a["n_answers"] == 3
    assert a["answers"] == [{"annotator": "x", "answer": "yes"}, {"annotator": "y", "answer": "yes"},
                            {"annotator": "z", "answer": "no"}]
    assert maj.loc["b|attribute|in a dress", "unanimous"]
    c = maj.loc["c|gender_paired|left"]
    assert c["majority"] is None and c["tie"] and c["tied_answers"] == ["cannot identify", "feminine", "masculine"]
    assert maj.loc["c|gender_paired|right", "majority"] == "masculine"
    dis = stats.disagreements(stats.item_majorities(answers_frame(rows)))
    assert dis["item_id"].tolist() == ["a|attribute|in a dress", "c|gender_paired|left"]


def test_later_answer_of_same_annotator_replaces_earlier():
    rows = [("a", "attribute", "hat", "x", "yes"), ("a", "attribute", "hat", "y", "no"),
            ("a", "attribute", "hat", "x", "no")]
    maj = stats.item_majorities(answers_frame(rows))
    assert maj.loc[0, "n_answers"] == 2 and maj.loc[0, "majority"] == "no" and maj.loc[0, "unanimous"]


@pytest.mark.parametrize("mutate, message", [
    (lambda df: df.drop(columns="annotator"), "lacks column"),
    (lambda df: df.iloc[0:0], "empty"),
    (lambda df: df.assign(answer=[None] + df["answer"].tolist()[1:]), "expected a string"),
    (lambda df: df.assign(annotator=[""] + df["annotator"].tolist()[1:]), "is empty"),
])
def test_malformed_answers_raise(mutate, message):
    df = answers_frame([("a", "attribute", "hat", "x", "yes"), ("a", "attribute", "hat", "y", "no")])
    with pytest.raises(ValueError, match=message):
        stats.item_majorities(mutate(df))


def test_skin_tone_answers_must_be_monk_tones():
    with pytest.raises(ValueError, match="Monk"):
        stats.item_majorities(answers_frame([("a", "skin_tone", "", "x", "11")]))


# --------------------------------------------------------------------------- per question type vs libraries


def _fleiss_reference(rows, k):
    """Fleiss' kappa built here from raw labels (count table by hand, statsmodels formula)."""
    cats = sorted({v for r in rows for v in r})
    table = np.array([[r.count(c) for c in cats] for r in rows])
    assert (table.sum(axis=1) == k).all()
    return inter_rater.fleiss_kappa(table, method="fleiss")


def _alpha_reference(df, level, numeric=False):
    annot = sorted(df["annotator"].unique())
    items = list(dict.fromkeys(df["item_id"]))
    codes = {v: i for i, v in enumerate(sorted(df["answer"].unique()))}
    data = np.full((len(annot), len(items)), np.nan)
    for r in df.itertuples():
        data[annot.index(r.annotator), items.index(r.item_id)] = float(r.answer) if numeric else codes[r.answer]
    return krippendorff.alpha(reliability_data=data, level_of_measurement=level)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_per_question_type_matches_statsmodels_and_krippendorff(seed):
    rng = np.random.default_rng(seed)
    ann = ["ann1", "ann2", "ann3"]
    rows = (random_answers(rng, 40, ann, "attribute", ["yes", "no"], key="in a suit")
            + random_answers(rng, 30, ann, "gender_paired", ["feminine", "masculine", "cannot identify"], key="left")
            + random_answers(rng, 30, ann + ["ann4"], "skin_tone", list(stats.MONK_TONES), p_missing=0.3))
    df = answers_frame(rows)
    table = stats.agreement_by_question_type(df).set_index("question_type")
    assert list(table.index) == ["attribute", "gender_paired", "skin_tone"]
    for qtype in ("attribute", "gender_paired"):
        sub = df[df["question_type"] == qtype]
        raw = [g["answer"].tolist() for _, g in sub.groupby("item_id", sort=False)]
        assert table.loc[qtype, "fleiss_kappa"] == pytest.approx(_fleiss_reference(raw, 3), abs=1e-12)
        assert table.loc[qtype, "alpha_nominal"] == pytest.approx(_alpha_reference(sub, "nominal"), abs=1e-12)
        assert table.loc[qtype, "n_items"] == sub["item_id"].nunique()
        assert table.loc[qtype, "n_annotators"] == 3
        assert math.isnan(table.loc[qtype, "alpha_ordinal"])
    skin = df[df["question_type"] == "skin_tone"]
    assert table.loc["skin_tone", "alpha_ordinal"] == pytest.approx(_alpha_reference(skin, "ordinal", True), abs=1e-12)
    assert table.loc["skin_tone", "alpha_nominal"] == pytest.approx(_alpha_reference(skin, "nominal"), abs=1e-12)
    # Fleiss over the most common answer count (items with more contribute their first answers)
    raw = [g["answer"].tolist() for _, g in skin.groupby("item_id", sort=False)]
    expected_rows, k = stats.fleiss_rows(raw)
    assert k == max({len(r) for r in raw if len(r) >= 2}, key=lambda n: (sum(len(r) == n for r in raw), n))
    assert table.loc["skin_tone", "fleiss_items"] == len(expected_rows) == sum(len(r) >= k for r in raw)
    assert table.loc["skin_tone", "fleiss_kappa"] == pytest.approx(_fleiss_reference(expected_rows, k), abs=1e-12)
    assert table.loc["attribute", "n_disagreements"] == sum(
        len(set(g["answer"])) > 1 for _, g in df[df["question_type"] == "attribute"].groupby("item_id"))


def test_perfect_agreement_and_undefined_with_reason():
    rows = [(f"p{i}", "attribute", "hat", a, "yes" if i % 2 else "no") for i in range(6) for a in "xyz"]
    t = stats.agreement_by_question_type(answers_frame(rows)).iloc[0]
    assert t["fleiss_kappa"] == pytest.approx(1.0) and t["alpha_nominal"] == pytest.approx(1.0)
    same = [(f"p{i}", "attribute", "hat", a, "yes") for i in range(4) for a in "xyz"]
    t = stats.agreement_by_question_type(answers_frame(same)).iloc[0]
    assert math.isnan(t["fleiss_kappa"]) and math.isnan(t["alpha_nominal"]) and "undefined" in t["notes"]
    single = [(f"p{i}", "attribute", "hat", "x", "yes") for i in range(4)]
    t = stats.agreement_by_question_type(answers_frame(single)).iloc[0]
    assert t["n_items_multi"] == 0 and math.isnan(t["fleiss_kappa"]) and "at least 2 annotators" in t["notes"]


# --------------------------------------------------------------------------- validation



def test_cohen_kappa_labels_weights_by_full_scale():
    rng = np.random.default_rng(3)
    a, b = rng.choice([1, 2, 9], 50), rng.choice([1, 2, 9], 50)
    full = list(range(1, 11))
    assert cohen_kappa(a, b, weights="quadratic", labels=full) == pytest.approx(
        cohen_kappa_score(a, b, weights="quadratic", labels=full))
    # without the full scale sklearn spaces 1, 2, 9 evenly: a different number
    assert cohen_kappa(a, b, weights="quadratic") != pytest.approx(cohen_kappa(a, b, weights="quadratic", labels=full))
    with pytest.raises(ValueError, match="not in labels"):
        cohen_kappa([1, 11], [1, 2], labels=full)


def _gep_world(rng, n_per_group=12, attrs=("in a dress", "in a suit", "with a tie", "in a hat")):
    """Majority labels for gep_neutral images, a manifest, and automatic scores."""
    rows, manifest, auto = [], [], []
    p_true = {a: (rng.uniform(0.1, 0.9), rng.uniform(0.1, 0.9)) for a in attrs}
    for g_i, g in enumerate(("woman", "man")):
        for i in range(n_per_group):
            pid = f"gep_neutral/{g}/ctx/{i:02d}"
            manifest.append({"probe_id": pid, "gender": g, "suite": "gep_neutral"})
            for a in attrs:
                truth = int(rng.random() < p_true[a][g_i])
                votes = [truth, truth, 1 - truth] if rng.random() < 0.3 else [truth] * 3
                for ann, v in zip("xyz", votes):
                    rows.append((pid, "attribute", a, ann, "yes" if v else "no"))
                for est, noise in (("C", 0.8), ("CLS", 0.3)):
                    auto.append({"probe_id": pid, "attribute": a, "score": truth + rng.normal(0, noise),
                                 "label": int(rng.random() < 0.5), "estimator": est, "annotator": "enc",
                                 "question": None, "answer": None})
    return answers_frame(rows), pd.DataFrame(manifest), pd.DataFrame(auto)


def test_attribute_auc_matches_sklearn_per_attribute():
    rng = np.random.default_rng(4)
    answers, _, auto = _gep_world(rng)
    maj = stats.item_majorities(answers)
    per, summary = validation.attribute_auc(maj, auto)
    truth = maj.set_index(["probe_id", "question_key"])["majority"].map({"yes": 1, "no": 0})
    for r in per.itertuples():
        a = auto[(auto.estimator == r.estimator) & (auto.attribute == r.attribute)]
        y = [truth[(p, r.attribute)] for p in a.probe_id]
        assert r.roc_auc == pytest.approx(roc_auc_score(y, a.score)) and r.n == len(a) == 24
    for s in summary.itertuples():
        assert s.mean_roc_auc == pytest.approx(per[per.estimator == s.estimator].roc_auc.mean())
        a = auto[auto.estimator == s.estimator]
        y = [truth[(p, t)] for p, t in zip(a.probe_id, a.attribute)]
        assert s.cohen_kappa == pytest.approx(cohen_kappa_score(a.label, y))
    # the less noisy estimator separates better
    m = summary.set_index("estimator")["mean_roc_auc"]
    assert m["CLS"] > m["C"]


def test_attribute_auc_ties_left_out_and_single_class_is_undefined():
    rows = [(f"p{i}", "attribute", "hat", a, "yes") for i in range(3) for a in "xyz"]
    rows += [("p9", "attribute", "hat", "x", "yes"), ("p9", "attribute", "hat", "y", "no")]  # tie
    auto = pd.DataFrame([{"probe_id": f"p{i}", "attribute": "hat", "score": 0.1 * i, "label": 1,
                          "estimator": "CLS", "annotator": "enc"} for i in (0, 1, 2, 9)])
    per, summary = validation.attribute_auc(stats.item_majorities(answers_frame(rows)), auto)
    assert per.loc[0, "n"] == 3 and math.isnan(per.loc[0, "roc_auc"]) and "single class" in per.loc[0, "notes"]
    assert math.isnan(summary.loc[0, "mean_roc_auc"])


def test_gep_vector_agreement_against_direct_computation():
    rng = np.random.default_rng(5)
    answers, manifest, auto = _gep_world(rng, attrs=tuple(f"attr{i}" for i in range(8)))
    maj = stats.item_majorities(answers)
    t = vector_agreement_tables(validation.joined_attributes(maj, auto), manifest)
    vectors, agree = t["gep_vectors"], t["gep_agreement"]
    truth = maj.set_index(["probe_id", "question_key"])["majority"].map({"yes": 1, "no": 0})
    gender = manifest.set_index("probe_id")["gender"]
    for est in ("C", "CLS"):
        a = auto[auto.estimator == est]
        hv, av = [], []
        for attr in [f"attr{i}" for i in range(8)]:
            s = a[a.attribute == attr]
            w, m = s[s.probe_id.map(gender) == "woman"], s[s.probe_id.map(gender) == "man"]
            hv.append(np.mean([truth[(p, attr)] for p in w.probe_id]) - np.mean([truth[(p, attr)] for p in m.probe_id]))
            av.append(w.score.mean() - m.score.mean())
        v = vectors[vectors.estimator == est]
        np.testing.assert_allclose(v.human, hv)
        np.testing.assert_allclose(v.automatic, av)
        row = agree[agree.estimator == est].iloc[0]
        assert row.kendall_tau_b == pytest.approx(sps.kendalltau(av, hv, variant="b").statistic)
        assert row.pearson == pytest.approx(sps.pearsonr(av, hv).statistic)
        s_a, s_h = np.where(np.array(av) >= 0, 1, -1), np.where(np.array(hv) >= 0, 1, -1)
        if len(set(s_a)) > 1 and len(set(s_h)) > 1:
            assert row.sign_mcc == pytest.approx(matthews_corrcoef(s_a, s_h))
        assert row.gep_human == pytest.approx(np.mean(np.abs(hv)))
        assert row.n_attributes == 8


def test_gep_vector_needs_both_groups():
    rows = [("gep_neutral/woman/c/00", "attribute", "hat", a, "yes") for a in "xyz"]
    manifest = pd.DataFrame([{"probe_id": "gep_neutral/woman/c/00", "gender": "woman"}])
    auto = pd.DataFrame([{"probe_id": "gep_neutral/woman/c/00", "attribute": "hat", "score": 0.5, "label": 1,
                          "estimator": "CLS", "annotator": "enc"}])
    t = vector_agreement_tables(validation.joined_attributes(stats.item_majorities(answers_frame(rows)), auto),
                                manifest)
    vectors, agree = t["gep_vectors"], t["gep_agreement"]
    assert vectors.empty and "both woman and man" in agree.loc[0, "notes"]


def test_gender_kappa_per_annotator_mean_and_majority():
    rng = np.random.default_rng(6)
    opts = ["feminine", "masculine", "cannot identify"]
    to_label = {"feminine": "female", "masculine": "male", "cannot identify": "unidentifiable"}
    rows, auto = [], []
    for i in range(40):
        truth = opts[rng.choice(3, p=[0.45, 0.45, 0.1])]
        for side in ("left", "right"):
            for ann in "xyz":
                rows.append((f"pair{i}", "gender_paired", side, ann, truth if rng.random() < 0.8 else opts[rng.integers(3)]))
            auto.append({"probe_id": f"pair{i}", "person": side, "annotator": "vqa",
                         "label": to_label[truth] if rng.random() < 0.6 else to_label[opts[rng.integers(3)]]})
    answers, gender = answers_frame(rows), pd.DataFrame(auto)
    out = validation.gender_kappa(answers, gender)
    row = out[(out.suite == "pst_paired_occupation")].iloc[0]
    lab = gender.set_index(["probe_id", "person"])["label"]
    per = {}
    for ann in "xyz":
        a = answers[answers.annotator == ann]
        per[ann] = cohen_kappa_score([lab[(p, k)] for p, k in zip(a.probe_id, a.question_key)],
                                     [to_label[v] for v in a.answer])
    assert row.kappa_per_annotator == pytest.approx(per)
    assert row.kappa_mean == pytest.approx(np.mean(list(per.values())))
    maj = stats.item_majorities(answers)
    maj = maj[~maj.tie]
    assert row.kappa_majority == pytest.approx(cohen_kappa_score(
        [lab[(p, k)] for p, k in zip(maj.probe_id, maj.question_key)], [to_label[v] for v in maj.majority]))
    assert row.n_items == 80 and row.setting == "paired" and row.subset == ""
    pooled = out[(out.suite == "all") & (out.setting == "paired")].iloc[0]
    assert pooled.kappa_mean == pytest.approx(row.kappa_mean)


def test_skin_tone_agreement_against_sklearn():
    rng = np.random.default_rng(7)
    rows, auto = [], []
    for i in range(30):
        t = int(rng.integers(1, 11))
        for ann in "xyz":
            rows.append((f"img{i}", "skin_tone", "", ann, str(int(np.clip(t + rng.integers(-1, 2), 1, 10)))))
        auto.append({"probe_id": f"img{i}", "mst": float(np.clip(t + rng.integers(-2, 3), 1, 10)) if i % 10 else None,
                     "annotator": "ita"})
    answers, skin = answers_frame(rows), pd.DataFrame(auto)
    out = validation.skin_tone_agreement(answers, skin).set_index("reference")
    maj = stats.item_majorities(answers)
    tone = {r["probe_id"]: int(r["mst"]) for r in auto if r["mst"] is not None}
    ok = maj[~maj.tie & maj.probe_id.isin(tone)]
    a, h = np.array([tone[p] for p in ok.probe_id]), ok.majority.astype(int).to_numpy()
    m = out.loc["majority"]
    assert m["n"] == len(ok) and m["n_no_tone"] == 3
    assert m["exact"] == pytest.approx(np.mean(a == h)) and m["within_1"] == pytest.approx(np.mean(abs(a - h) <= 1))
    assert m["kappa_quadratic"] == pytest.approx(cohen_kappa_score(a, h, weights="quadratic", labels=list(range(1, 11))))
    assert out.index[1].startswith("annotators (mean of 3)")


# --------------------------------------------------------------------------- artificial datasets (GEP App. C)


# Table 17 as printed (first two and last values of each scale; 0.1125 is printed 0.112).
TABLE17_PRINTED = {1.0: (-0.9, -0.8, 0.9), 0.5: (-0.45, -0.4, 0.45), 0.25: (-0.225, -0.2, 0.225),
                   0.125: (-0.112, -0.1, 0.112)}


def test_table17_scales():
    for scale, (first, second, last) in TABLE17_PRINTED.items():
        v = artificial.scale_differences(scale)
        assert len(v) == 19 and 0.0 in v
        assert math.trunc(v[0] * 1000) / 1000 == pytest.approx(first)
        assert v[1] == pytest.approx(second)
        assert math.trunc(v[-1] * 1000) / 1000 == pytest.approx(last)
        np.testing.assert_allclose(np.diff(v), scale / 10)
    assert 0.1 in artificial.scale_differences(0.125)  # printed in the 0.125 row


def _pool(rng, attrs, n_pos=100, n_neg=100, noise=0.3):
    rows = []
    for a in attrs:
        for g in ("woman", "man"):
            for h, count in ((1, n_pos), (0, n_neg)):
                for k in range(count):
                    rows.append({"probe_id": f"{g}/{a}/{h}/{k}", "attribute": a, "group": g, "human": h})
    pool = pd.DataFrame(rows)
    pool["exact"] = pool["human"].astype(float)
    pool["noisy"] = pool["human"] + rng.normal(0, noise, len(pool))
    pool["random"] = rng.normal(0, 1, len(pool))
    return pool


def test_artificial_dataset_construction():
    rng = np.random.default_rng(8)
    attrs = [f"a{i}" for i in range(15)]
    pool = _pool(rng, attrs)
    ds = artificial.build_artificial_dataset(pool, random_state=1)
    ex = ds.examples
    assert len(ex) == 600 and ds.skipped.empty  # App. C: 15 attributes x 4 scales x 10 = 600
    assert (ex.groupby(["attribute", "scale"]).size() == 10).all()
    assert (ex["group_size"] == 80).all()
    # with 80 images per group every Table 17 difference is realised exactly
    np.testing.assert_allclose(ex["human_difference"], ex["target_difference"], atol=1e-12)
    for s in artificial.TABLE17_SCALES:
        assert set(ex.loc[ex.scale == s, "target_difference"]).issubset(set(artificial.scale_differences(s)))
    truth = pool.set_index("probe_id")
    for r in ex.sample(20, random_state=0).itertuples():
        w, m = truth.loc[r.woman_images], truth.loc[r.man_images]
        assert len(set(r.woman_images)) == len(r.woman_images) == 80  # without replacement
        assert (w.group == "woman").all() and (m.group == "man").all() and (w.attribute == r.attribute).all()
        assert w.human.sum() == r.k_woman and m.human.sum() == r.k_man
        assert r.noisy == pytest.approx(w.noisy.mean() - m.noisy.mean())
    three = artificial.build_artificial_dataset(pool, scales=(0.5, 0.25, 0.125))
    assert len(three.examples) == 450  # CogView2's three scales


def test_artificial_skips_what_the_pools_cannot_realise_and_group_size_rounding():
    rng = np.random.default_rng(9)
    pool = _pool(rng, ["a"], n_pos=6, n_neg=20)
    ds = artificial.build_artificial_dataset(pool, scales=(1.0,), n_per_scale=40, group_size=9, random_state=2)
    assert len(ds.examples) + len(ds.skipped) == 40
    # 6 positives per gender: a group of 9 can differ by at most 6 positives
    realisable = np.abs(np.round(ds.examples["target_difference"] * 9)) <= 6
    assert realisable.all() and len(ds.examples) > 0
    assert len(ds.skipped) > 0 and "cannot give groups" in ds.skipped["reason"].iloc[0]
    assert (np.abs(np.round(ds.skipped["target_difference"] * 9)) > 6).all()
    np.testing.assert_allclose(ds.examples["human_difference"].astype(float),
                               np.round(ds.examples["target_difference"].astype(float) * 9) / 9, atol=1e-12)
    # default group size: all labelled images of the smaller gender (26), at most 80
    auto = artificial.build_artificial_dataset(pool, scales=(0.125,), n_per_scale=5)
    assert (auto.examples["group_size"] == 26).all()
    rep = artificial.build_artificial_dataset(pool, scales=(1.0,), n_per_scale=30, replace=True, group_size=40)
    assert rep.skipped.empty and (rep.examples["group_size"] == 40).all()


def test_compare_estimators_and_pair_types():
    rng = np.random.default_rng(10)
    attrs = [f"a{i}" for i in range(5)]
    ds1 = artificial.build_artificial_dataset(_pool(rng, attrs), model="m1", scales=(0.5, 0.125), random_state=3)
    ds2 = artificial.build_artificial_dataset(_pool(rng, attrs), model="m2", scales=(0.5, 0.125), random_state=4)
    ex = pd.concat([ds1.examples, ds2.examples], ignore_index=True)
    est = ["exact", "noisy", "random"]
    table = artificial.compare_estimators(ex, est)
    assert set(table.model) == {"m1", "m2", "mix"}
    for r in table.itertuples():
        sub = ex if r.model == "mix" else ex[ex.model == r.model]
        assert r.kendall_tau_b == pytest.approx(sps.kendalltau(sub[r.estimator], sub.human_difference).statistic)
        assert r.pearson == pytest.approx(sps.pearsonr(sub[r.estimator], sub.human_difference).statistic)
        assert r.n == len(sub)
    mix = table[table.model == "mix"].set_index("estimator")
    assert mix.loc["exact", "kendall_tau_b"] == pytest.approx(1.0) and mix.loc["exact", "sign_mcc"] == pytest.approx(1)
    assert mix.loc["noisy", "kendall_tau_b"] > mix.loc["random", "kendall_tau_b"]
    kinds = artificial.tau_b_by_pair_type(ex, est).set_index("estimator")
    n = len(ex)
    assert sum(kinds.loc["noisy", f"n_pairs {k}"] for k in artificial.PAIR_TYPES) == n * (n - 1) // 2
    # all pairs together give scipy's tau-b; one kind checked pair by pair
    i, j = np.triu_indices(n, 1)
    x, y = ex["noisy"].to_numpy(), ex["human_difference"].to_numpy()
    assert artificial.tau_b_on_pairs(x, y, i, j)[0] == pytest.approx(sps.kendalltau(x, y).statistic)
    sel = [(a, b) for a, b in zip(i, j) if ex.attribute[a] == ex.attribute[b] and ex.model[a] != ex.model[b]]
    c = sum(np.sign(x[a] - x[b]) * np.sign(y[a] - y[b]) > 0 for a, b in sel)
    d = sum(np.sign(x[a] - x[b]) * np.sign(y[a] - y[b]) < 0 for a, b in sel)
    tx = sum(x[a] == x[b] and y[a] != y[b] for a, b in sel)
    ty = sum(y[a] == y[b] and x[a] != x[b] for a, b in sel)
    assert kinds.loc["noisy", "SA, DM"] == pytest.approx((c - d) / math.sqrt((c + d + tx) * (c + d + ty)))
    one = artificial.tau_b_by_pair_type(ds1.examples, est)
    assert math.isnan(one.loc[0, "SA, DM"]) and one.loc[0, "n_pairs DA, DM"] == 0


def test_image_pool_from_label_tables():
    rng = np.random.default_rng(11)
    answers, manifest, auto = _gep_world(rng)
    extra = pd.DataFrame([{"probe_id": "dalleval_bias/x", "attribute": "a suit", "score": 1.0, "label": 1,
                           "estimator": "vqa", "annotator": "blip"}])
    human = validation.human_attribute_labels(stats.item_majorities(answers))
    pool = artificial.image_pool(human, pd.concat([auto, extra]), manifest, VECTOR_SUITES)
    assert list(pool.columns) == ["probe_id", "attribute", "group", "human", "C [enc]", "CLS [enc]"]
    assert len(pool) == 24 * 4  # every labelled (image, attribute); the unrelated vqa row adds no column
    ds = artificial.build_artificial_dataset(pool, n_per_scale=2)
    assert len(ds.examples) + len(ds.skipped) == 4 * 4 * 2 and set(ds.estimators) == {"C [enc]", "CLS [enc]"}
