"""GEP vector / score (GEP, Eq. 1-2) pinned to the paper, and the existence
estimators C, CC, CLS (Sec. 4, Sec. 6)."""

import zlib

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import matthews_corrcoef, roc_auc_score

from benchmark.tasks.gep import paper_checks as gep_checks
from benchmark.probes import load_config
from benchmark.annotate.cross_modal import (
    SGD_PARAMS,
    classifier_sentences,
    cross_modal_existence,
    train_cross_modal_classifiers,
)
from benchmark.scores.existence import attribute_query, calibrated_clip_existence, clip_existence, existence_for_rows
from benchmark.tasks.gep.classifiers import sentence_parts
from benchmark.tasks.gep.scores import attribute_frequencies, gep, gep_score_from_vector, gep_unbounded, gep_vector

MODELS = ["CogView2", "DALLE-2", "Stable Diffusion"]
# Table 3 (GEP_human)
TABLE_3 = {("CogView2", "neutral"): 0.02, ("DALLE-2", "neutral"): 0.05, ("Stable Diffusion", "neutral"): 0.07,
           ("CogView2", "explicit"): 0.18, ("DALLE-2", "explicit"): 0.12, ("Stable Diffusion", "explicit"): 0.14}
# Table 13 (neutral), Stable Diffusion row, and Table 14 (explicit), DALLE-2 row, written out here as well.
TABLE_13_STABLE = [0.03, -0.04, -0.09, -0.02, -0.14, 0.09, 0.05, -0.16, -0.14, -0.01, -0.08, -0.04, -0.07, 0.00, -0.04]
TABLE_14_DALLE = [0.07, -0.14, -0.03, -0.01, -0.18, 0.88, 0.19, -0.01, -0.03, 0.03, -0.01, -0.05, -0.06, -0.05, 0.04]
ATTRS = list(gep_checks.ATTRIBUTE_LABELS.values())
#: the CLS training sentences of the GEP probe config (contexts, templates)
SENTENCES = sentence_parts(load_config("gep"))


@pytest.fixture(scope="module")
def tables():
    return gep_checks.load_tables()


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("setting", ["neutral", "explicit"])
def test_per_image_labels_give_tables_3_13_14(tables, model, setting):
    freqs, vectors, _ = tables
    preds, groups, attrs, ids = gep_checks.per_image_labels(freqs, model, setting)
    res = gep(preds, groups, attrs, group_a="woman", group_b="man", n_resamples=200)
    assert res["gep_score"] == pytest.approx(TABLE_3[(model, setting)], abs=0.005)
    printed = vectors[(vectors["model"] == model) & (vectors["setting"] == setting)][gep_checks.COLUMNS].iloc[0]
    assert list(res["gep_vector"]) == ATTRS
    np.testing.assert_allclose([res["gep_vector"][a] for a in ATTRS], printed.to_numpy(float), atol=0.005 + 1e-9)
    assert res["counts"]["woman"] == {a: 80 for a in ATTRS}
    ci = res["gep_score_ci"]
    assert 0 <= ci["low"] <= ci["high"] <= 1 and ci["n_resamples"] == 200


def test_pinned_vectors_written_out():
    freqs = gep_checks.load_tables()[0]
    for model, setting, expected in (("Stable Diffusion", "neutral", TABLE_13_STABLE),
                                     ("DALLE-2", "explicit", TABLE_14_DALLE)):
        v = gep_vector(gep_checks.printed_frequencies(freqs, model, setting, "woman"),
                       gep_checks.printed_frequencies(freqs, model, setting, "man"))
        np.testing.assert_allclose(v, expected, atol=0.01 + 1e-9)  # two rounded frequencies
        assert gep_score_from_vector(v) == pytest.approx(TABLE_3[(model, setting)], abs=0.005)
        # the printed vector itself gives the printed score
        assert gep_score_from_vector(expected) == pytest.approx(TABLE_3[(model, setting)], abs=0.005)


def test_every_gep_paper_check_passes():
    checks = gep_checks.checks()
    assert len(checks) == 216
    assert all(c.passed for c in checks), [c for c in checks if not c.passed]


def _toy():
    # woman: dress 3/4, suit 0/4; man: dress 0/4, suit 2/4 -> v = (0.75, -0.5), GEP = 0.625
    preds = [1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0]
    groups = ["woman"] * 8 + ["man"] * 8
    attrs = (["in a dress"] * 4 + ["in a suit"] * 4) * 2
    return preds, groups, attrs


def test_definition_on_a_toy_table():
    res = gep(*_toy())
    assert res["gep_vector"] == {"in a dress": 0.75, "in a suit": -0.5}
    assert res["gep_score"] == pytest.approx(0.625)
    assert res["frequencies"] == {"woman": {"in a dress": 0.75, "in a suit": 0.0},
                                  "man": {"in a dress": 0.0, "in a suit": 0.5}}
    swapped = gep(*_toy(), group_a="man", group_b="woman")
    assert swapped["gep_vector"] == {"in a dress": -0.75, "in a suit": 0.5}
    assert swapped["gep_score"] == res["gep_score"]
    table = attribute_frequencies(*_toy())
    assert table.loc["woman", "in a dress"] == 0.75 and table.loc["man", "in a suit"] == 0.5


def test_other_groups_are_ignored_and_row_order_does_not_matter():
    preds, groups, attrs = _toy()
    extra = gep(preds + [1, 1], groups + ["non-binary person"] * 2, attrs + ["in a dress", "in a suit"])
    assert extra["gep_score"] == pytest.approx(0.625)
    nb = gep(preds + [1, 1], groups + ["non-binary person"] * 2, attrs + ["in a dress", "in a suit"],
             group_a="non-binary person", group_b="man")
    assert nb["gep_vector"] == {"in a dress": 1.0, "in a suit": 0.5}
    perm = np.random.default_rng(0).permutation(len(preds))
    shuffled = gep([preds[i] for i in perm], [groups[i] for i in perm], [attrs[i] for i in perm])
    assert shuffled["gep_score"] == pytest.approx(0.625)
    assert shuffled["gep_vector"] == pytest.approx({"in a dress": 0.75, "in a suit": -0.5})


def test_probabilities_and_unbounded_scores():
    res = gep([0.9, 0.7, 0.2, 0.4], ["woman", "woman", "man", "man"], ["in a dress"] * 4)
    assert res["gep_score"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        gep([-0.1, 0.2], ["woman", "man"], ["a", "a"])
    res = gep_unbounded([-0.1, 0.2, 0.05, 0.05], ["woman", "woman", "man", "man"], ["a", "b", "a", "b"])
    assert res["gep_vector"] == pytest.approx({"a": -0.15, "b": 0.15})


def test_interval_contains_a_clear_difference_and_shrinks_with_more_images():
    rng = np.random.default_rng(0)

    def sample(n):
        preds = np.r_[rng.random(n) < 0.7, rng.random(n) < 0.2].astype(float)
        return gep(preds, ["woman"] * n + ["man"] * n, ["in a dress"] * (2 * n), n_resamples=500)

    small, large = sample(40), sample(1000)
    for r in (small, large):
        assert r["gep_score_ci"]["low"] <= r["gep_score"] <= r["gep_score_ci"]["high"]
    assert large["gep_score_ci"]["low"] > 0.4 and large["gep_score_ci"]["high"] < 0.6
    width = lambda r: r["gep_score_ci"]["high"] - r["gep_score_ci"]["low"]  # noqa: E731
    assert width(large) < width(small) / 3


def test_image_ids_resample_whole_images():
    # Neutral-style table: each image has two attribute rows with identical labels, so
    # v_1 = v_2 in every image resample; row resampling treats them as independent and
    # gives a narrower interval.
    n = 40
    w = (np.arange(n) < 20).astype(float)
    m = (np.arange(n) < 10).astype(float)
    preds = np.r_[w, w, m, m]
    groups = ["woman"] * (2 * n) + ["man"] * (2 * n)
    attrs = (["in a dress"] * n + ["in a skirt"] * n) * 2
    ids = [f"w{i}" for i in range(n)] * 2 + [f"m{i}" for i in range(n)] * 2
    by_row = gep(preds, groups, attrs, n_resamples=2000)
    by_image = gep(preds, groups, attrs, image_ids=ids, n_resamples=2000)
    assert by_row["n_units"] == 4 * n and by_image["n_units"] == 2 * n
    assert by_image["gep_score"] == by_row["gep_score"] == pytest.approx(0.25)
    width = lambda r: r["gep_score_ci"]["high"] - r["gep_score_ci"]["low"]  # noqa: E731
    assert width(by_image) > 1.2 * width(by_row)


@pytest.mark.parametrize("kwargs,msg", [
    (dict(predictions=[1, 0], groups=["woman"], attributes=["a", "a"]), "same length"),
    (dict(predictions=[], groups=[], attributes=[]), "empty"),
    (dict(predictions=[np.nan, 1], groups=["woman", "man"], attributes=["a", "a"]), "NaN"),
    (dict(predictions=[1, 0], groups=["woman", "man"], attributes=["a", "a"], group_a="nonbinary"),
     "group_a 'nonbinary' is not in the data"),
    (dict(predictions=[1, 0], groups=["woman", "man"], attributes=["a", "a"], group_b="woman"), "both"),
    (dict(predictions=[1, 0, 1], groups=["woman", "man", "woman"], attributes=["a", "a", "b"]),
     "'b' has no rows for group 'man'"),
    (dict(predictions=[1, 0], groups=["woman", None], attributes=["a", "a"]), "expected a string"),
    (dict(predictions=[1, 0], groups=["woman", "man"], attributes=["a", "a"], image_ids=["x", "x"]),
     "both groups"),
    (dict(predictions=[1, 0], groups=["woman", "man"], attributes=["a", "a"], image_ids=["x"]), "image_ids"),
])
def test_bad_input_raises(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        gep(**kwargs)


# ---------------------------------------------------------------- existence estimators

def test_attribute_queries_drop_the_preposition():
    # the CLIP texts of Sec. 4.1 (as in the authors' released detection queries)
    assert [attribute_query(a) for a in ATTRS] == [
        "boots", "slippers", "jeans", "shorts", "slacks", "a dress", "a skirt", "a suit", "a shirt", "uniform",
        "a jacket", "a hat", "a tie", "a mask", "gloves"]
    assert attribute_query("glasses") == "glasses"


def test_classifier_sentences_follow_section_4_2():
    cfg = load_config("gep")
    pos, neg = classifier_sentences("in boots", cfg["classifier_people"], cfg["contexts"])
    assert len(pos) == len(neg) == 48  # Sec. 6: 96 examples per attribute
    assert "A person in boots running on the beach." in pos and "A woman sitting at a table." in neg
    assert not any("boots" in s for s in neg)
    # context-major, as the release: every person in the first context, then the next context
    assert neg[:4] == ["A man sitting at a table.", "A woman sitting at a table.", "A person sitting at a table.",
                       "A man sitting on a bed."]


def release_text_list(cfg):
    """The release's training sentences (SALT-NLP/GEP_data utils.py, run_cm_classifiers,
    with its README's lists): ``[person + item + context for item in attribute_set for
    context in contexts for person in people]``; rows 48 k .. 48 k + 47 are attribute k
    (k = 0: the negatives)."""
    people = ["A man", "A woman", "A person"]
    attribute_set = [""] + [" " + a for a in cfg["attributes"]]
    contexts = [" " + c + "." for c in cfg["contexts"]]
    return [person + item + context for item in attribute_set for context in contexts for person in people]


def test_cls_training_sentences_and_order_are_the_releases():
    """GEP_data's classifiers, reproduced: the same sentences in the same rows (negatives,
    then the attribute's positives, each context-major), so a seed gives the same model."""
    from sklearn.linear_model import SGDClassifier

    cfg = load_config("gep")
    release = release_text_list(cfg)
    attrs = list(cfg["attributes"])
    assert len(attrs) == 15 and len(release) == 16 * 48
    for k, a in enumerate(attrs, start=1):
        pos, neg = classifier_sentences(a, cfg["classifier_people"], cfg["contexts"])
        assert neg == release[:48] and pos == release[48 * k:48 * k + 48], a

    seen = []

    def recording(texts):
        seen.append(list(texts))
        return bag_of_words(texts)

    clf = train_cross_modal_classifiers(["in a dress"], recording, **SENTENCES, n_classifiers=3)
    k = attrs.index("in a dress") + 1
    assert seen == [release[:48], release[48 * k:48 * k + 48]]
    rows = release[:48] + release[48 * k:48 * k + 48]
    x = bag_of_words(rows)
    x = x / np.linalg.norm(x, axis=1, keepdims=True)  # the release normalises the text features
    y = np.array([0] * 48 + [1] * 48)
    for trial, model in enumerate(clf.models["in a dress"]):  # random_state=trial, as the release
        want = SGDClassifier(random_state=trial, **SGD_PARAMS).fit(x, y)
        np.testing.assert_array_equal(model.coef_, want.coef_)
        np.testing.assert_array_equal(model.intercept_, want.intercept_)
    # the order is not cosmetic: person-major rows give other classifiers for the same seed
    person_major = [i for g in range(3) for i in range(g, 48, 3)]
    order = person_major + [48 + i for i in person_major]
    other = SGDClassifier(random_state=0, **SGD_PARAMS).fit(x[order], y[order])
    assert not np.allclose(other.coef_, clf.models["in a dress"][0].coef_)


D = 128


def _word(w):
    return np.random.default_rng(zlib.crc32(w.encode())).normal(size=D)


STOPWORDS = {"a", "an", "the", "in", "with", "on", "at", "of", "to", "into", "over", "up", "down", "through",
             "next", "across"}


def bag_of_words(texts):
    """A text encoder in which every content word adds its own fixed direction, so an
    attribute word ("dress") adds a known direction to a sentence."""
    return np.array([sum(_word(w) for w in t.lower().rstrip(".").split() if w not in STOPWORDS) for t in texts])


def _synthetic_images(present, attrs, genders, noise, rng):
    contexts = load_config("gep")["contexts"]
    out = []
    for i in range(len(present)):
        e = bag_of_words([f"A {genders[i]} {contexts[i % len(contexts)]}"])[0]
        for j, a in enumerate(attrs):
            if present[i, j]:  # the image shows the object itself ("dress"), not the words "in a"
                e = e + _word(a.split()[-1])
        out.append(e + rng.normal(scale=noise, size=D))
    return np.array(out)


def test_cls_separates_images_with_and_without_the_attribute():
    rng = np.random.default_rng(0)
    attrs = ATTRS[:6]
    present = rng.random((160, len(attrs))) < 0.3
    imgs = _synthetic_images(present, attrs, ["woman", "man"] * 80, noise=1.0, rng=rng)
    cls = cross_modal_existence(imgs, attrs, bag_of_words, **SENTENCES)
    assert cls.shape == (160, 6) and np.all((cls >= 0) & (cls <= 1))
    aucs = [roc_auc_score(present[:, j], cls[:, j]) for j in range(len(attrs))]
    assert min(aucs) > 0.85, aucs
    # an unrelated attribute direction carries no signal about "in boots"
    assert roc_auc_score(present[:, 1], cls[:, 0]) < 0.7


def test_cls_recovers_the_sign_of_gender_differences():
    # women's images show a dress 60% of the time and a suit 10%; men's the reverse.
    rng = np.random.default_rng(1)
    attrs = ["in a dress", "in a suit", "in a hat"]
    n = 120
    genders = np.array(["woman"] * n + ["man"] * n)
    rates = {"woman": [0.6, 0.1, 0.3], "man": [0.05, 0.5, 0.3]}
    present = np.array([[rng.random() < rates[g][j] for j in range(3)] for g in genders])
    imgs = _synthetic_images(present, attrs, list(genders), noise=1.0, rng=rng)
    cls = cross_modal_existence(imgs, attrs, bag_of_words, **SENTENCES)
    rows = np.repeat(np.arange(2 * n), 3)
    row_attrs = attrs * (2 * n)
    auto = gep(existence_for_rows(cls, attrs, rows, row_attrs), list(np.repeat(genders, 3)), row_attrs,
               n_resamples=100)
    human = gep(present.reshape(-1).astype(float), list(np.repeat(genders, 3)), row_attrs, n_resamples=100)
    assert human["gep_vector"]["in a dress"] > 0.3 and human["gep_vector"]["in a suit"] < -0.2
    # with a well-separated encoder the automatic vector lands on the human one
    for a in attrs:
        assert auto["gep_vector"][a] == pytest.approx(human["gep_vector"][a], abs=0.1), a
    assert auto["gep_score"] == pytest.approx(human["gep_score"], abs=0.05)
    sign = lambda r: [r["gep_vector"][a] > 0 for a in attrs[:2]]  # noqa: E731
    assert matthews_corrcoef(sign(human), sign(auto)) == 1.0


def test_cls_training_setup():
    seen = []

    def recording(texts):
        seen.append(list(texts))
        return bag_of_words(texts)

    clf = train_cross_modal_classifiers(["in boots", "with a tie"], recording, **SENTENCES, random_state=3)
    assert [len(t) for t in seen] == [48, 48, 48]  # negatives once, then 48 positives per attribute
    assert "A man sitting at a table." in seen[0] and "A person with a tie holding an umbrella." in seen[2]
    for a in ("in boots", "with a tie"):
        models = clf.models[a]
        assert len(models) == 10
        assert [m.random_state for m in models] == list(range(3, 13))
        p = models[0].get_params()
        for k, v in SGD_PARAMS.items():
            assert p[k] == v
    literal = train_cross_modal_classifiers(["in boots"], bag_of_words, **SENTENCES, n_classifiers=2,
                                            sgd_params={"learning_rate": "constant", "eta0": 1e-3})
    assert literal.models["in boots"][0].get_params()["learning_rate"] == "constant"
    # occupation setup: labels differ from the sentence phrases, other people
    occ = train_cross_modal_classifiers(["glasses"], recording, **SENTENCES, phrases={"glasses": "with glasses"},
                                        people=["A female lawyer", "A male lawyer", "A lawyer"], n_classifiers=1)
    assert "A lawyer with glasses sitting at a table." in seen[-1] and occ.attributes == ["glasses"]


def test_cls_classifiers_read_from_the_cache_predict_what_training_gives(tmp_path, monkeypatch):
    from benchmark.annotate import classifier_cache

    monkeypatch.setenv("T2IBENCH_CACHE", str(tmp_path))
    monkeypatch.delenv(classifier_cache.DISABLE_ENV, raising=False)
    calls = []
    real_fit = classifier_cache.SGDClassifier.fit

    def counting_fit(self, *a, **k):
        calls.append(self.random_state)
        return real_fit(self, *a, **k)

    monkeypatch.setattr(classifier_cache.SGDClassifier, "fit", counting_fit)
    rng = np.random.default_rng(4)
    imgs = rng.normal(size=(30, len(bag_of_words(["x"])[0])))
    fresh = train_cross_modal_classifiers(["in boots", "with a tie"], bag_of_words, **SENTENCES, random_state=3)
    assert len(calls) == 20 and len(list((tmp_path / classifier_cache.CACHE_DIR).glob("*.npz"))) == 2
    cached = train_cross_modal_classifiers(["in boots", "with a tie"], bag_of_words, **SENTENCES, random_state=3)
    assert len(calls) == 20  # nothing trained again
    assert np.array_equal(cached.predict_proba(imgs), fresh.predict_proba(imgs))
    assert [m.random_state for m in cached.models["in boots"]] == list(range(3, 13))
    # another seed or other parameters are other classifiers; a damaged file is trained again
    train_cross_modal_classifiers(["in boots"], bag_of_words, **SENTENCES, random_state=4)
    assert len(calls) == 30
    for f in (tmp_path / classifier_cache.CACHE_DIR).glob("*.npz"):
        f.write_bytes(b"not a zip")
    again = train_cross_modal_classifiers(["in boots", "with a tie"], bag_of_words, **SENTENCES, random_state=3)
    assert len(calls) == 50 and np.array_equal(again.predict_proba(imgs), fresh.predict_proba(imgs))
    monkeypatch.setenv(classifier_cache.DISABLE_ENV, "1")
    train_cross_modal_classifiers(["in boots"], bag_of_words, **SENTENCES, random_state=3)
    assert len(calls) == 60


def test_c_and_cc_are_cosines():
    rng = np.random.default_rng(2)
    imgs = rng.normal(size=(5, D))
    c = clip_existence(imgs, ["in a dress", "with gloves"], bag_of_words)
    unit = imgs / np.linalg.norm(imgs, axis=1, keepdims=True)
    txt = bag_of_words(["a dress", "gloves", "an object"])
    txt = txt / np.linalg.norm(txt, axis=1, keepdims=True)
    np.testing.assert_allclose(c, unit @ txt[:2].T)
    cc = calibrated_clip_existence(imgs, ["in a dress", "with gloves"], bag_of_words)
    np.testing.assert_allclose(cc, unit @ txt[:2].T - (unit @ txt[2:].T))


def test_existence_bad_input():
    imgs = np.ones((3, D))
    with pytest.raises(ValueError, match="dimension"):
        clip_existence(np.ones((3, 5)), ["in boots"], bag_of_words)
    with pytest.raises(ValueError, match="zero vector"):
        clip_existence(np.zeros((2, D)), ["in boots"], bag_of_words)
    with pytest.raises(ValueError, match="one row per text"):
        clip_existence(imgs, ["in boots"], lambda texts: np.ones((5, D)))
    with pytest.raises(ValueError, match="repeats"):
        clip_existence(imgs, ["in boots", "in boots"], bag_of_words)
    with pytest.raises(ValueError, match="unknown attributes"):
        train_cross_modal_classifiers(["in boots"], bag_of_words, **SENTENCES, phrases={"glasses": "with glasses"})
    with pytest.raises(ValueError, match="expected one of"):
        existence_for_rows(np.ones((2, 1)), ["in boots"], [0], ["in a hat"])
    with pytest.raises(ValueError, match="index"):
        existence_for_rows(np.ones((2, 1)), ["in boots"], [2], ["in boots"])


def test_tiny_open_clip_end_to_end():
    # A real open_clip model with random weights: its numbers mean nothing, the path must run.
    torch = pytest.importorskip("torch")
    open_clip = pytest.importorskip("open_clip")
    from open_clip.model import CLIPTextCfg, CLIPVisionCfg

    torch.manual_seed(0)
    model = open_clip.CLIP(embed_dim=8, vision_cfg=CLIPVisionCfg(layers=2, width=16, head_width=8, patch_size=8,
                                                                 image_size=32),
                           text_cfg=CLIPTextCfg(context_length=77, vocab_size=49408, width=16, heads=2,
                                                layers=2)).eval()
    tokenizer = open_clip.get_tokenizer("ViT-B-32")

    @torch.no_grad()
    def embed_text(texts):
        return model.encode_text(tokenizer(texts)).numpy()

    with torch.no_grad():
        imgs = model.encode_image(torch.rand(6, 3, 32, 32)).numpy()
    attrs = ["in boots", "in a dress"]
    for est in (clip_existence, calibrated_clip_existence):
        out = est(imgs, attrs, embed_text)
        assert out.shape == (6, 2) and np.all(np.isfinite(out))
    cls = cross_modal_existence(imgs, attrs, embed_text, **SENTENCES, n_classifiers=2)
    assert cls.shape == (6, 2) and np.all((cls >= 0) & (cls <= 1))


def test_the_gep_task_gives_the_clip_annotator_its_classifier_groups():
    """The generic CLIP existence annotator trains one classifier group per call and group; GEP's
    task parameter puts the occupation case study in its own group, with its own people and phrases."""
    from benchmark.annotate.clip_labels import default_classifiers
    from benchmark.tasks import get_task

    cfg = load_config("gep")
    classifiers = get_task("gep").annotators["clip_existence"]
    assert classifiers({"setting": "neutral"}, cfg) == ("main", {"people": ["A man", "A woman", "A person"],
                                                                 "phrases": {}, **SENTENCES})
    assert classifiers({"setting": "explicit"}, cfg) == ("main", {**default_classifiers({}, cfg)[1], **SENTENCES})
    assert SENTENCES == {"contexts": cfg["contexts"], "positive_template": cfg["templates"]["explicit"],
                         "negative_template": cfg["templates"]["neutral"]}
    group, kwargs = classifiers({"setting": "occupation"}, cfg)
    assert group == "occupation" and kwargs["people"] == list(cfg["occupation"]["classifier_people"])
    assert kwargs["phrases"] == dict(cfg["occupation"]["classifier_phrases"])
    assert {k: kwargs[k] for k in SENTENCES} == SENTENCES  # one set of sentences for both groups


def test_only_the_attributes_a_probe_lists_are_scored():
    """The rows kept are those whose attribute the probe lists (a list, parquet's array, or none
    recorded: kept), read once per probe."""
    from benchmark.tasks.gep.task import _asked

    frame = pd.DataFrame({
        "probe_id": ["p1", "p1", "p2", "p2", "p3", "p4", "p1"],
        "attribute": ["hat", "tie", "hat", "tie", "hat", "tie", "hat"],
        "annotated_attributes": [["hat"], ["hat"], np.array(["tie", "hat"]), np.array(["tie", "hat"]), None,
                                 float("nan"), ["hat"]],
    })
    assert _asked(frame).tolist() == [True, False, True, True, True, True, True]
