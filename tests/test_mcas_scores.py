"""MCAS, Diffusion Bias, Bias Amplification (MCAS Eq. 1-2; Generated Bias Eq. 1-5): pure
functions, the evaluate module, the paper checks and an encoder path."""

import math
import warnings
from pathlib import Path

import evaluate
import numpy as np
import pandas as pd
import pytest

from benchmark.tasks.generated_bias import paper_checks as generated_bias_checks
from benchmark.tasks.mcas import paper_checks as mcas_checks
from benchmark.tasks.generated_bias.scores import (
    average_over_encoders,
    bias_amplification,
    diffusion_bias,
    internal_bias_table,
    summarise,
)
from benchmark.tasks.mcas.scores import (
    PER_TARGET_KEYS,
    association_score,
    mcas_per_target,
    mcas_score,
    weat_association,
)

ROOT = Path(__file__).resolve().parents[1]
COMPONENTS = ["II", "ITP", "ITA", "TT"]
SWAP = {"attribute_a_image": "attribute_b_image", "attribute_b_image": "attribute_a_image",
        "attribute_a_text": "attribute_b_text", "attribute_b_text": "attribute_a_text"}


def make_inputs(seed=0, d=8, n_targets=3, n_images=5, n_attr_images=6, n_words=4):
    rng = np.random.default_rng(seed)
    emb, roles, targets = [], [], []

    def add(role, target, n):
        emb.extend(rng.normal(size=(n, d)))
        roles.extend([role] * n)
        targets.extend([target] * n)

    for s in "ab":
        add(f"attribute_{s}_image", "", n_attr_images)
        add(f"attribute_{s}_text", "", n_words)
    for k in range(n_targets):
        add("target_image", f"t{k}", n_images)
        add("target_text", f"t{k}", 1)
    return np.array(emb), roles, targets


@pytest.fixture(scope="module")
def inputs():
    return make_inputs()


def test_weat_association_by_hand():
    # s(w, A, B) = mean_a cos(w, a) - mean_b cos(w, b), no division by a standard deviation
    w = [[1.0, 0.0], [1.0, 1.0]]
    a = [[1.0, 0.0], [2.0, 0.0]]
    b = [[0.0, 1.0]]
    np.testing.assert_allclose(weat_association(w, a, b), [1.0, 0.0], atol=1e-15)
    assert association_score(w, a, b) == pytest.approx(0.5)
    assert association_score([[3.0, 4.0]], [[1.0, 0.0]], [[0.0, 1.0]]) == pytest.approx(0.6 - 0.8)


def test_components_by_hand():
    # Target image [1, .2], target text [.2, 1]; A = e1, B = e2 in both modalities.
    emb = [[1.0, 0.2], [0.2, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]]
    roles = ["target_image", "target_text", "attribute_a_image", "attribute_b_image", "attribute_a_text",
             "attribute_b_text"]
    t = mcas_per_target(emb, roles, ["CEO", "CEO", "", "", "", ""]).loc["CEO"]
    x = 0.8 / math.sqrt(1.04)  # cos(w, e1) - cos(w, e2) for w = [1, .2]
    assert t["II"] == pytest.approx(x) and t["ITA"] == pytest.approx(x)  # target image
    assert t["ITP"] == pytest.approx(-x) and t["TT"] == pytest.approx(-x)  # target text
    assert t["mcas"] == pytest.approx(0.0, abs=1e-15)
    # Make the text attributes differ from the image ones to separate ITP from ITA.
    emb2 = [[1.0, 0.2], [0.2, 1.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0]]
    t2 = mcas_per_target(emb2, roles, ["CEO", "CEO", "", "", "", ""]).loc["CEO"]
    # ITP = text targets x IMAGE attributes; ITA = image targets x TEXT attributes (MCAS).
    assert t2["ITP"] == pytest.approx(-x) and t2["ITA"] == pytest.approx(-x)
    assert t2["II"] == pytest.approx(x) and t2["TT"] == pytest.approx(x)


def test_delta_and_alpha_formulas():
    assert diffusion_bias(0.03, -0.01) == pytest.approx(0.02)  # ||II| - |TT||
    assert diffusion_bias(-0.01, 0.03) == pytest.approx(0.02)
    a = bias_amplification(0.02, 0.04, -0.01)  # |(ITP + ITA) / (2 TT)|
    assert a.defined and a.value == pytest.approx(3.0) and a.to_json() == pytest.approx(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no division warning either
        u = bias_amplification(0.02, 0.04, 0.0)
    assert not u.defined and math.isnan(u.value) and u.to_json() is None and "TT = 0" in u.reason
    assert not bias_amplification(0.02, 0.04, 1e-13).defined
    assert bias_amplification(0.02, 0.04, 1e-13, zero_tol=0.0).defined


def test_swapping_attribute_sets_negates_every_component(inputs):
    emb, roles, targets = inputs
    base = mcas_per_target(emb, roles, targets)
    swapped = mcas_per_target(emb, [SWAP.get(r, r) for r in roles], targets)
    for c in COMPONENTS + ["mcas"]:
        np.testing.assert_allclose(swapped[c], -base[c], atol=1e-15)
        assert (base[c].abs() > 1e-6).all()  # a real, non-zero check
    for c in ("diffusion_bias", "bias_amplification"):  # magnitudes: unchanged
        np.testing.assert_allclose(swapped[c], base[c], rtol=1e-12)


def test_rescaling_embeddings_changes_nothing(inputs):
    emb, roles, targets = inputs
    scale = np.random.default_rng(1).uniform(0.01, 100.0, size=(len(emb), 1))
    a = mcas_score(emb, roles, targets, n_resamples=0)
    b = mcas_score(emb * scale, roles, targets, n_resamples=0)
    for k in PER_TARGET_KEYS:
        assert b[k] == pytest.approx(a[k], rel=1e-12)
        for t in a["per_target"]:
            assert b["per_target"][t][k] == pytest.approx(a["per_target"][t][k], rel=1e-12, abs=1e-15)


def test_equidistant_target_scores_zero_and_alpha_is_undefined():
    # B is A reflected through the hyperplane orthogonal to u; targets in that hyperplane
    # are equally close to every a and its mirror image, so s(w, A, B) = 0 for them.
    rng = np.random.default_rng(3)
    d = 6
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    reflect = np.eye(d) - 2 * np.outer(u, u)
    a_img, a_txt = rng.normal(size=(5, d)), rng.normal(size=(3, d))
    neutral = rng.normal(size=(5, d))
    neutral -= np.outer(neutral @ u, u)
    biased = rng.normal(size=(5, d)) + 3 * u
    emb = np.vstack([a_img, a_img @ reflect, a_txt, a_txt @ reflect, neutral[:4], neutral[4:], biased[:4], biased[4:]])
    roles = (["attribute_a_image"] * 5 + ["attribute_b_image"] * 5 + ["attribute_a_text"] * 3
             + ["attribute_b_text"] * 3 + ["target_image"] * 4 + ["target_text"] + ["target_image"] * 4
             + ["target_text"])
    targets = [""] * 16 + ["neutral"] * 5 + ["biased"] * 5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = mcas_score(emb, roles, targets, n_resamples=50)
    n = res["per_target"]["neutral"]
    for c in COMPONENTS + ["mcas", "diffusion_bias"]:
        assert n[c] == pytest.approx(0.0, abs=1e-12)
    assert n["bias_amplification"] is None and n["bias_amplification_defined"] is False
    assert "TT = 0" in n["bias_amplification_note"]
    b = res["per_target"]["biased"]
    assert b["bias_amplification_defined"] and b["bias_amplification"] > 0
    # the overall alpha averages the defined targets only, and says which were left out
    assert res["bias_amplification"] == pytest.approx(b["bias_amplification"])
    assert res["bias_amplification_undefined_targets"] == ["neutral"]
    assert "mean over the other 1 targets" in res["bias_amplification_note"]
    only = [i for i, t in enumerate(targets) if t != "biased"]
    none = mcas_score(emb[only], [roles[i] for i in only], [targets[i] for i in only], n_resamples=50)
    assert none["bias_amplification"] is None and none["bias_amplification_ci"] is None
    assert "no target has a defined alpha" in none["bias_amplification_note"]
    assert none["mcas"] == pytest.approx(0.0, abs=1e-12)


def test_overall_is_mean_over_keywords_and_categories(inputs):
    emb, roles, targets = inputs
    res = mcas_score(emb, roles, targets, categories={"t0": "x", "t1": "x", "t2": "y"}, n_resamples=0)
    table = mcas_per_target(emb, roles, targets)
    for c in COMPONENTS:
        assert res[c] == pytest.approx(table[c].mean())
    assert res["mcas"] == pytest.approx(table["mcas"].mean())
    assert res["diffusion_bias"] == pytest.approx(table["diffusion_bias"].mean())
    assert res["bias_amplification"] == pytest.approx(table["bias_amplification"].mean())
    assert res["per_category"]["x"]["mcas_mean"] == pytest.approx(table["mcas"][["t0", "t1"]].mean())
    # population std (ddof 0), as MCAS Table 5; a one-keyword category has std 0
    assert res["per_category"]["x"]["mcas_std"] == pytest.approx(table["mcas"][["t0", "t1"]].std(ddof=0))
    assert res["per_category"]["y"]["n_targets"] == 1 and res["per_category"]["y"]["mcas_std"] == 0.0
    # per-keyword MCAS is exactly II + ITP + ITA + TT
    np.testing.assert_allclose(table["mcas"], table[COMPONENTS].sum(axis=1))
    assert res["n_rows"]["target_image"] == 15 and res["per_target"]["t0"]["n_images"] == 5


def test_bootstrap_resamples_images_within_strata(inputs):
    emb, roles, targets = inputs
    res = mcas_score(emb, roles, targets, n_resamples=200)
    for k in ("mcas", "diffusion_bias", "bias_amplification"):
        ci = res[f"{k}_ci"]
        assert ci["low"] < ci["high"] and ci["n_resamples"] == 200
    # Identical images inside every stratum: resampling within strata changes nothing
    # (pooling strata, or resampling texts, would).
    emb2 = emb.copy()
    r = np.asarray(roles)
    t = np.asarray(targets)
    for role in ("attribute_a_image", "attribute_b_image"):
        idx = np.flatnonzero(r == role)
        emb2[idx] = emb2[idx[0]]
    for k in set(targets) - {""}:
        idx = np.flatnonzero((r == "target_image") & (t == k))
        emb2[idx] = emb2[idx[0]]
    res2 = mcas_score(emb2, roles, targets, n_resamples=100)
    assert res2["mcas_ci"]["low"] == pytest.approx(res2["mcas"], abs=1e-12)
    assert res2["mcas_ci"]["high"] == pytest.approx(res2["mcas"], abs=1e-12)


@pytest.mark.parametrize("mutate, message", [
    (lambda e, r, t: (e, ["nonsense"] + r[1:], t), "expected one of"),
    (lambda e, r, t: (e[[i for i, x in enumerate(r) if x != "attribute_b_text"]],
                      [x for x in r if x != "attribute_b_text"], [y for x, y in zip(r, t) if x != "attribute_b_text"]),
     "roles lack"),
    (lambda e, r, t: ([list(v) for v in e[:-1]] + [list(e[-1][:-1])], r, t), "inconsistent dimensions"),
    (lambda e, r, t: (np.where(np.arange(e.size).reshape(e.shape) == 3, np.nan, e), r, t), "NaN"),
    (lambda e, r, t: (e, r[:-1], t), "same length"),
    (lambda e, r, t: (np.vstack([np.zeros((1, e.shape[1])), e[1:]]), r, t), "zero vector"),
    (lambda e, r, t: (e, r, ["x"] + t[1:]), "attribute rows must have an empty target"),
    (lambda e, r, t: (e, r, [("" if x == "target_image" else y) for x, y in zip(r, t)]), "empty target"),
    (lambda e, r, t: (e, r, [("t9" if x == "target_text" and y == "t0" else y) for x, y in zip(r, t)]),
     "no target_text row"),
    (lambda e, r, t: (e[:0], r[:0], t[:0]), "empty"),
])
def test_invalid_inputs_raise(inputs, mutate, message):
    e, r, t = mutate(*inputs)
    with pytest.raises(ValueError, match=message):
        mcas_score(e, r, t, n_resamples=0)


def test_average_over_encoders_uses_mean_components():
    enc1 = pd.DataFrame({"target": ["x", "y"], "II": [0.03, 0.01], "ITP": [0.01, 0.0], "ITA": [0.01, 0.0],
                         "TT": [0.01, 0.0]})
    enc2 = pd.DataFrame({"target": ["y", "x"], "II": [0.01, 0.05], "ITP": [0.0, 0.09], "ITA": [0.0, 0.09],
                         "TT": [0.0, 0.03]})
    out = average_over_encoders({"RN50": enc1, "ViT-B/32": enc2})
    x = out.loc["x"]
    assert x["II"] == pytest.approx(0.04) and x["TT"] == pytest.approx(0.02)
    assert x["mcas"] == pytest.approx(0.04 + 0.05 + 0.05 + 0.02)
    assert x["diffusion_bias"] == pytest.approx(0.02)
    # alpha of the mean components, (0.05 + 0.05) / (2 * 0.02) = 2.5, not the mean of the
    # per-encoder alphas (1 and 3 -> 2)
    assert x["bias_amplification"] == pytest.approx(2.5) and out["n_encoders"].iloc[0] == 2
    assert not out.loc["y", "bias_amplification_defined"] and np.isnan(out.loc["y", "bias_amplification"])
    # the per_target dicts of mcas_score are accepted too
    emb, roles, targets = make_inputs(seed=5)
    r1 = mcas_score(emb, roles, targets, n_resamples=0)
    r2 = mcas_score(emb * 2.0, roles, targets, n_resamples=0)
    both = average_over_encoders({"a": r1["per_target"], "b": r2["per_target"]})
    assert both.loc["t1", "mcas"] == pytest.approx(r1["per_target"]["t1"]["mcas"])
    with pytest.raises(ValueError, match="different targets"):
        average_over_encoders({"a": enc1, "b": enc2[enc2["target"] == "x"]})
    with pytest.raises(ValueError, match="lacks component columns"):
        internal_bias_table(enc1.drop(columns="TT"))


def test_evaluate_module_matches_pure_functions(inputs, monkeypatch):
    emb, roles, targets = inputs
    monkeypatch.chdir(ROOT)
    module = evaluate.load("metrics/mcas")  # relative, from the repo root
    assert evaluate.load(str(ROOT / "metrics" / "mcas")).name == module.name
    got = module.compute(embeddings=emb.tolist(), roles=roles, targets=targets, n_resamples=100,
                         categories={"t0": "x", "t1": "x", "t2": "y"})
    want = mcas_score(emb, roles, targets, n_resamples=100, categories={"t0": "x", "t1": "x", "t2": "y"})
    assert got.keys() == want.keys()
    for k in PER_TARGET_KEYS:
        assert got[k] == pytest.approx(want[k], rel=1e-12)
        for t in want["per_target"]:
            assert got["per_target"][t][k] == pytest.approx(want["per_target"][t][k], rel=1e-12)
    assert got["mcas_ci"]["low"] == pytest.approx(want["mcas_ci"]["low"], rel=1e-12)
    assert got["per_category"]["x"]["mcas_mean"] == pytest.approx(want["per_category"]["x"]["mcas_mean"])
    with pytest.raises(ValueError, match="expected one of"):
        module.compute(embeddings=emb.tolist(), roles=["bogus"] + roles[1:], targets=targets, n_resamples=0)
    bad = emb.tolist()
    bad[0][0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        module.compute(embeddings=bad, roles=roles, targets=targets, n_resamples=0)
    ragged = emb.tolist()
    ragged[0] = ragged[0][:-1]
    with pytest.raises(ValueError, match="inconsistent dimensions"):
        module.compute(embeddings=ragged, roles=roles, targets=targets, n_resamples=0)


def test_paper_checks_pass_and_left_out_values_are_real_misprints():
    checks = mcas_checks.checks()  # the MCAS task's: Generated Bias's first, then MCAS's
    assert len(checks) == 49 and all(c.passed for c in checks)
    assert checks[:len(generated_bias_checks.checks())] == generated_bias_checks.checks()
    table3, _ = generated_bias_checks.load_tables()
    table5 = mcas_checks.load_table5()
    # Generated Bias Table 4 alpha means of Stable Diffusion v2 do not follow from Table 3
    per_kw = generated_bias_checks.table3_for(table3, "sd2")
    summary = summarise(per_kw, by=per_kw["stereotype"].to_dict())
    assert summary.loc["male", "bias_amplification_mean"] == pytest.approx(1.6964, abs=1e-4)  # printed 3.15
    assert summary.loc["female", "bias_amplification_mean"] == pytest.approx(11.0436, abs=1e-4)  # printed 11.25
    for group, printed in (("male", 3.15), ("female", 11.25), ("all", 6.47)):
        assert abs(summary.loc[group, "bias_amplification_mean"] - printed) > 0.055
    # DALL-E 2 pins (Table 4: 1.47, 10.0, 5.74)
    per_kw = generated_bias_checks.table3_for(table3, "dalle2")
    summary = summarise(per_kw, by=per_kw["stereotype"].to_dict())
    assert summary.loc["female", "bias_amplification_mean"] == pytest.approx(139.78 / 14)
    assert summary.loc["all", "bias_amplification_mean"] == pytest.approx(5.73)
    # MCAS Table 5, DALL-E 2 male std: printed 0.0052, category rows give 0.0070
    cats = table5[(table5["model"] == "dalle2") & (table5["category"] != "all categories")]
    assert cats["male_std"].mean() == pytest.approx(0.0070) and abs(cats["male_std"].mean() - 0.0052) > 0.0001


def test_tiny_open_clip_encoder_path():
    torch = pytest.importorskip("torch")
    open_clip = pytest.importorskip("open_clip")
    from benchmark.probes import load_config
    from benchmark.tasks.mcas.probes import mcas_text_rows

    torch.manual_seed(0)
    model = open_clip.CLIP(
        embed_dim=8,
        vision_cfg=open_clip.CLIPVisionCfg(layers=2, width=16, head_width=8, patch_size=8, image_size=32),
        text_cfg=open_clip.CLIPTextCfg(context_length=77, vocab_size=49408, width=16, heads=2, layers=2),
    ).eval()
    tokenizer = open_clip.get_tokenizer("ViT-B-32")
    texts = mcas_text_rows(load_config("mcas"))
    texts = texts[texts["role"].str.startswith("attribute") | texts["target"].isin(["CEO", "nurse"])]
    n_img = {"attribute_a_image": 3, "attribute_b_image": 3, "target_image": 4}
    img_roles = (["attribute_a_image"] * 3 + ["attribute_b_image"] * 3 + ["target_image"] * 4
                 + ["target_image"] * 4)
    img_targets = [""] * 6 + ["CEO"] * 4 + ["nurse"] * 4
    with torch.no_grad():
        text_emb = model.encode_text(tokenizer(texts["text"].tolist()))
        image_emb = model.encode_image(torch.rand(sum(n_img.values()) + 4, 3, 32, 32))
    emb = torch.cat([text_emb, image_emb]).double().numpy()
    assert emb.shape == (len(texts) + 14, 8)
    res = mcas_score(emb, texts["role"].tolist() + img_roles, texts["target"].tolist() + img_targets,
                     n_resamples=50)
    assert set(res["per_target"]) == {"CEO", "nurse"}
    for k in ("mcas", "II", "ITP", "ITA", "TT", "diffusion_bias"):
        assert np.isfinite(res[k])
    assert np.isfinite(res["mcas_ci"]["low"]) and np.isfinite(res["mcas_ci"]["high"])


def test_summarise_std_is_population_by_default_and_ddof_is_configurable():
    rng = np.random.default_rng(7)
    table = pd.DataFrame({"mcas": rng.normal(size=9)}, index=[f"t{i}" for i in range(9)])
    by = {t: ("male" if i < 4 else "female") for i, t in enumerate(table.index)}
    pop = summarise(table, by=by, columns=("mcas",))
    sample = summarise(table, by=by, columns=("mcas",), ddof=1)
    for g, rows in (("male", table.index[:4]), ("female", table.index[4:]), ("all", table.index)):
        assert pop.loc[g, "mcas_std"] == pytest.approx(table.loc[rows, "mcas"].std(ddof=0))
        assert sample.loc[g, "mcas_std"] == pytest.approx(table.loc[rows, "mcas"].std(ddof=1))
        assert pop.loc[g, "mcas_mean"] == sample.loc[g, "mcas_mean"]
    # the population std is what the paper check's decomposition (law of total variance) assumes
    args = [pop.loc["male", "mcas_std"], pop.loc["male", "mcas_mean"], pop.loc["female", "mcas_std"],
            pop.loc["female", "mcas_mean"], pop.loc["all", "mcas_mean"]]
    assert mcas_checks.all_terms_std(*args) == pytest.approx(pop.loc["all", "mcas_std"], rel=1e-12)
    args_s = [sample.loc["male", "mcas_std"], *args[1:2], sample.loc["female", "mcas_std"], *args[3:]]
    assert abs(mcas_checks.all_terms_std(*args_s) - sample.loc["all", "mcas_std"]) > 1e-3
    for bad in (-1, 1.5, True, "0"):
        with pytest.raises(ValueError, match="ddof"):
            summarise(table, columns=("mcas",), ddof=bad)


def _sample_all_terms_std(row, n_terms):
    """The "All terms" std under the sample-std reading (ddof 1 for all three columns), with
    the category's number of terms (MCAS Table 4) split by the share w the averages give:
    its range over the rounding box of the printed inputs."""
    import itertools

    cols = ("male_std", "male_avg", "female_std", "female_avg", "all_avg")
    out = []
    for delta in itertools.product(np.linspace(-0.0005, 0.0005, 5), repeat=5):
        ms, ma, fs, fa, aa = (float(row[c]) + d for c, d in zip(cols, delta))
        w = (aa - fa) / (ma - fa)
        m = round(w * n_terms)
        if not 1 <= m <= n_terms - 1:
            continue
        f = n_terms - m
        ss = (m - 1) * ms ** 2 + (f - 1) * fs ** 2 + m * (ma - aa) ** 2 + f * (fa - aa) ** 2
        out.append(math.sqrt(ss / (n_terms - 1)))
    return min(out), max(out)


def test_table5_all_terms_std_follows_the_population_std_not_the_sample_std():
    from benchmark.probes import load_config
    from benchmark.tasks.mcas.probes import mcas_target_categories

    n_terms = pd.Series(mcas_target_categories(load_config("mcas"))).value_counts().to_dict()
    assert n_terms == {"occupations": 10, "objects": 6, "scenes": 6, "sports": 6}  # MCAS Table 4
    table5 = mcas_checks.load_table5()
    std_checks = [c for c in mcas_checks.checks() if "population std" in c.quantity]
    assert len(std_checks) == 4 and all(c.passed for c in std_checks)
    half = mcas_checks.TABLE5_HALF_UNIT
    for _, row in table5[table5["category"] != "all categories"].iterrows():
        key = (row["model"], row["category"])
        centre, spread = mcas_checks.all_terms_std_with_rounding(row)
        pop_fits = abs(centre - row["all_std"]) <= half + spread
        # every row the check keeps fits the population std, every row it leaves out does not
        assert pop_fits == (key not in mcas_checks.TABLE5_STD_MISFITS), key
        if pop_fits:  # ... and the sample std misses each of them
            low, high = _sample_all_terms_std(row, n_terms[row["category"]])
            assert high < row["all_std"] - half or low > row["all_std"] + half, key
    # the one row the sample std fits and the population std does not
    occ = table5[(table5["model"] == "dalle2") & (table5["category"] == "occupations")].iloc[0]
    low, high = _sample_all_terms_std(occ, 10)
    assert low - half <= occ["all_std"] <= high + half
