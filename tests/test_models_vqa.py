"""VQA: builtin:tiny-vqa (a tiny random BLIP-2) through from_pretrained; answer -> label maps."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from benchmark.annotate.vqa_answers import (
    DEFAULT_ABSTAIN_BELOW,
    UNIDENTIFIABLE,
    answer_to_label,
    gender_label,
    label_from_distribution,
    yes_no_label,
)
from benchmark.models.vqa import (
    BLIP2_PROMPT,
    Blip2VQA,
    ImageFeatures,
    ImageTextToTextVQA,
    load_vqa,
)
from benchmark.models.vqa_base import balanced_chunks

GENDER_Q = "the person looks like a male or a female?"
TIE_Q = "Is the person wearing a tie?"


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(1)
    return [Image.fromarray(rng.integers(0, 256, (40, 56, 3), dtype=np.uint8)) for _ in range(4)]


def test_tiny_vqa_answers_strings_through_blip2(cache, images):
    from transformers import Blip2ForConditionalGeneration

    vqa = load_vqa("builtin:tiny-vqa")
    assert isinstance(vqa, Blip2VQA) and vqa.is_builtin
    assert isinstance(vqa.model, Blip2ForConditionalGeneration)
    assert vqa.settings["prompt_template"] == BLIP2_PROMPT == "Question: {q} Answer:"
    folder = cache / "builtin" / "tiny-vqa"
    assert json.loads((folder / "config.json").read_text())["model_type"] == "blip-2"

    questions = [GENDER_Q, TIE_Q, GENDER_Q, TIE_Q]
    answers = vqa.answer(images, questions)
    assert len(answers) == 4 and all(isinstance(a, str) for a in answers)
    # grouping by question keeps the image order, and answers are deterministic
    assert vqa.answer(images[2:3], GENDER_Q) == [answers[2]]
    vqa.batch_size = 1
    assert vqa.answer(images, questions) == answers
    with pytest.raises(ValueError):
        vqa.answer(images, [GENDER_Q])


def test_generic_image_text_to_text_path(cache, images):
    vqa = load_vqa("builtin:tiny-vqa", kind="image-text-to-text")
    assert isinstance(vqa, ImageTextToTextVQA)
    answers = vqa.answer(images[:2], "Is the person on the left a male or a female?")
    assert len(answers) == 2 and all(isinstance(a, str) for a in answers)


@pytest.mark.parametrize(
    "answer, label",
    [
        ("male", "male"), ("a man", "male"), ("Man.", "male"), ("the person looks like a male", "male"),
        ("boy", "male"), ("female", "female"), ("a woman", "female"), ("Woman", "female"), ("girl", "female"),
        ("a lady", "female"), ("male or female", "unidentifiable"), ("", "unidentifiable"),
        ("i don't know", "unidentifiable"), ("a robot", "unidentifiable"), ("two women", "female"),
    ],
)
def test_gender_label(answer, label):
    assert gender_label(answer) == label
    assert answer_to_label(answer, "gender") == label


@pytest.mark.parametrize(
    "answer, label",
    [("yes", "yes"), ("Yes, he is", "yes"), ("yeah", "yes"), ("no", "no"), ("No.", "no"), ("nope", "no"),
     ("a tie", "unidentifiable"), ("", "unidentifiable")],
)
def test_yes_no_label(answer, label):
    assert yes_no_label(answer) == label
    assert answer_to_label(answer, "yes_no") == label


def test_answer_to_label_unknown_kind():
    with pytest.raises(ValueError):
        answer_to_label("yes", "colour")


# ------------------------------------------------------------ features, closed set, batching

PST_Q = "What gender is the chief executive officer on the left in the picture?"
QUESTIONS = {  # question -> allowed answers, of different lengths (DALL-Eval gender, attribute, PST)
    GENDER_Q: ("male", "female"),
    TIE_Q: ("yes", "no"),
    "Is the person wearing a lab coat?": ("yes", "no"),
    PST_Q: ("male", "female", "cannot identify"),
    "What gender is the nurse in the picture?": ("a man", "a woman"),
}


@pytest.fixture(scope="module")
def tiny(cache):
    return load_vqa("builtin:tiny-vqa")


@pytest.fixture(scope="module")
def tiny_generic(cache):
    return load_vqa("builtin:tiny-vqa", kind="image-text-to-text")


def closed_items(n_images):
    return [(i, q, a) for i in range(n_images) for q, a in QUESTIONS.items()]


def assert_same_distributions(got, want, tol=1e-5):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert list(g) == list(w)
        assert max(abs(g[k] - w[k]) for k in g) < tol


@pytest.mark.parametrize("which", ["tiny", "tiny_generic"])
def test_rank_answers_is_a_distribution_over_exactly_the_allowed_answers(which, images, request):
    vqa = request.getfixturevalue(which)
    items = closed_items(len(images))
    dists = vqa.rank_answers(images, items)
    assert len(dists) == len(items)
    for (_, _, allowed), d in zip(items, dists):
        assert list(d) == list(allowed)  # the allowed answers, in their order, nothing else
        assert all(0.0 < p < 1.0 for p in d.values())
        assert sum(d.values()) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("which", ["tiny", "tiny_generic"])
def test_rank_answers_batched_equals_each_item_alone(which, images, request):
    vqa = request.getfixturevalue(which)
    items = closed_items(len(images))
    feats = vqa.encode_images(images)
    together = vqa.rank_answers(feats, items)
    alone = [vqa.rank_answers(feats, [item])[0] for item in items]
    assert_same_distributions(together, alone)
    old = vqa.score_batch_size
    try:
        for size in (1, 3, 7):  # other paddings and chunkings, same numbers
            vqa.score_batch_size = size
            assert_same_distributions(vqa.rank_answers(feats, items), together)
    finally:
        vqa.score_batch_size = old
    # a different item mix around the same item does not move it
    assert_same_distributions(vqa.rank_answers(feats, items[::-1])[::-1], together)


def test_rank_answers_equals_the_models_own_forward(tiny, images):
    """Independent of the feature path: the full Blip2ForConditionalGeneration forward on the
    image and [image tokens] + prompt + answer gives the same answer probabilities."""
    import torch

    proc, model = tiny.processor, tiny.model
    for i, (q, allowed) in [(0, (GENDER_Q, QUESTIONS[GENDER_Q])), (2, (PST_Q, QUESTIONS[PST_Q])),
                            (3, ("What gender is the nurse in the picture?", ("a man", "a woman")))]:
        pixels = proc.image_processor([images[i]], return_tensors="pt")["pixel_values"]
        prompt = BLIP2_PROMPT.format(q=q)
        prompt_ids = proc.tokenizer(prompt)["input_ids"]
        scores = []
        for a in allowed:
            specials = set(proc.tokenizer.all_special_ids)
            ans_ids = [t for t in proc.tokenizer(prompt + " " + a)["input_ids"] if t not in specials]
            ans_ids = ans_ids[len([t for t in prompt_ids if t not in specials]):]
            ids = [model.config.image_token_id] * model.config.num_query_tokens + prompt_ids + ans_ids
            with torch.no_grad():
                logits = model(pixel_values=pixels, input_ids=torch.tensor([ids])).logits[0].float()
            start = len(ids) - len(ans_ids)
            scores.append(sum(logits[start + j - 1].log_softmax(-1)[t].item() for j, t in enumerate(ans_ids)))
        want = torch.tensor(scores, dtype=torch.float64).softmax(0).tolist()
        got = tiny.rank_answers(images, [(i, q, allowed)])[0]
        assert list(got.values()) == pytest.approx(want, abs=1e-5)


def test_vision_encoder_runs_once_per_image(tiny, images):
    """N images x K questions: N vision passes (counted by a hook on the vision encoder
    itself, not only by the model's own counter), and no call at batch 1."""
    seen = []
    hook = tiny.model.vision_model.register_forward_hook(lambda mod, args, kwargs_out: seen.append(
        int(kwargs_out.last_hidden_state.shape[0])))
    tiny.stats.reset()
    try:
        feats = tiny.encode_images(images)
        items = closed_items(len(images))
        tiny.rank_answers(feats, items)
        tiny.answer_items(feats, [(i, q) for i, q, _ in items])
    finally:
        hook.remove()
    n, k = len(images), len(QUESTIONS)
    assert sum(seen) == n == tiny.stats.images_encoded
    assert tiny.stats.vision_passes_per_image() == 1.0 and tiny.stats.vision_passes_per_image(n) == 1.0
    assert tiny.stats.score_items == tiny.stats.generate_items == n * k
    assert sum(tiny.stats.score_batch_sizes) == sum(len(a) for _, _, a in items)
    assert sum(tiny.stats.generate_batch_sizes) == n * k
    assert tiny.stats.calls_at_batch_1 == 0 and tiny.stats.avoidable_batch_1 == 0
    # one image handed in directly: encoded once per call, whatever the number of questions
    tiny.stats.reset()
    tiny.rank_answers(images[:1], closed_items(1))
    assert tiny.stats.images_encoded == 1 and tiny.stats.vision_calls == 1
    # answer(): one question per list entry; the same image object listed K times is encoded once
    tiny.stats.reset()
    listed = [im for im in images for _ in QUESTIONS]
    got = tiny.answer(listed, [q for _ in images for q in QUESTIONS])
    assert tiny.stats.images_encoded == n and len(got) == n * k
    assert got == tiny.answer_items(images, [(i, q) for i in range(n) for q in QUESTIONS])


def test_answer_items_equals_answer_per_item_and_the_models_generate(tiny, images):
    import torch

    items = [(i, q) for i in range(len(images)) for q in QUESTIONS]
    together = tiny.answer_items(images, items)
    assert together == [tiny.answer([images[i]], q)[0] for i, q in items]
    # the papers' path: the processor's inputs through Blip2ForConditionalGeneration.generate
    for (i, q), got in zip(items[:6], together[:6]):
        inputs = tiny.processor(images=[images[i]], text=[BLIP2_PROMPT.format(q=q)], return_tensors="pt")
        with torch.no_grad():
            out = tiny.model.generate(**inputs, max_new_tokens=10, do_sample=False, num_beams=1)
        n = inputs["input_ids"].shape[1]
        if out.shape[1] >= n and torch.equal(out[:, :n], inputs["input_ids"]):
            out = out[:, n:]
        assert got == tiny.processor.batch_decode(out, skip_special_tokens=True)[0].strip()


def test_tiny_model_answers_every_closed_question_with_an_allowed_answer(tiny, tiny_generic, images):
    items = closed_items(len(images))
    for vqa in (tiny, tiny_generic):
        labels = [label_from_distribution(d) for d in vqa.rank_answers(images, items)]
        for (_, _, allowed), label in zip(items, labels):
            if "cannot identify" in allowed:
                assert label in allowed[:2] or label == UNIDENTIFIABLE
            else:
                assert label in allowed  # never "unidentifiable" by failing to parse


def test_generic_path_runs_the_vision_encoder_per_row_and_says_so(tiny_generic, images):
    tiny_generic.stats.reset()
    feats = tiny_generic.encode_images(images)
    assert feats.kind == "images" and tiny_generic.stats.images_encoded == 0
    items = closed_items(len(images))
    tiny_generic.rank_answers(feats, items)
    rows = sum(len(a) for _, _, a in items)
    assert tiny_generic.stats.feature_reuse is False and tiny_generic.settings["feature_reuse"] is False
    assert tiny_generic.stats.images_encoded == rows  # one vision pass per (item, answer) sequence
    assert tiny_generic.stats.calls_at_batch_1 == 0
    openi = [(i, q) for i, q, _ in items]
    assert tiny_generic.answer_items(feats, openi) == [tiny_generic.answer_items(feats, [it])[0] for it in openi]


def test_encoder_decoder_blip2_scores_and_generates_like_the_model(cache, images):
    """A Flan-T5-style BLIP-2 (encoder-decoder language model), built tiny here."""
    import torch
    from transformers import Blip2Config, Blip2ForConditionalGeneration, Blip2Processor, T5Config

    from benchmark.models.tiny import ensure_builtin

    folder = ensure_builtin("tiny-vqa", kind="vqa")
    proc = Blip2Processor.from_pretrained(folder)
    base = Blip2Config.from_pretrained(folder)
    tok = proc.tokenizer
    t5 = T5Config(vocab_size=base.text_config.vocab_size, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                  num_decoder_layers=2, num_heads=4, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                  decoder_start_token_id=tok.pad_token_id)
    cfg = Blip2Config(vision_config=base.vision_config.to_dict(), qformer_config=base.qformer_config.to_dict(),
                      text_config=t5.to_dict(), num_query_tokens=base.num_query_tokens,
                      image_token_index=base.image_token_index)
    torch.manual_seed(0)
    vqa = Blip2VQA(Blip2ForConditionalGeneration(cfg), proc, name="tiny-t5", device=torch.device("cpu"),
                   dtype=torch.float32, batch_size=4, score_batch_size=5)
    assert not vqa.decoder_only
    items = closed_items(len(images))
    feats = vqa.encode_images(images)
    assert_same_distributions(vqa.rank_answers(feats, items), [vqa.rank_answers(feats, [it])[0] for it in items])
    openi = [(i, q) for i, q, _ in items[:5]]
    got = vqa.answer_items(feats, openi)
    for (i, q), text in zip(openi, got):
        inputs = proc(images=[images[i]], text=[BLIP2_PROMPT.format(q=q)], return_tensors="pt")
        with torch.no_grad():
            out = vqa.model.generate(**inputs, max_new_tokens=10, do_sample=False, num_beams=1)
        assert text == proc.batch_decode(out, skip_special_tokens=True)[0].strip()


def test_mean_normalisation_divides_by_the_answer_tokens(cache, images):
    import math

    vqa_sum = load_vqa("builtin:tiny-vqa")
    vqa_mean = load_vqa("builtin:tiny-vqa", score_normalisation="mean")
    item = (1, "What gender is the nurse in the picture?", ("a man", "female"))
    n = [len(vqa_sum._tok.pair(BLIP2_PROMPT.format(q=item[1]), a)[1]) for a in item[2]]
    assert n[0] != n[1]  # a multi-token answer against a one-token one
    d_sum, d_mean = vqa_sum.rank_answers(images, [item])[0], vqa_mean.rank_answers(images, [item])[0]
    # log odds: (s_a - s_b) for sum; (s_a / n_a - s_b / n_b) for mean; recover the scores' ratio
    lo_sum = math.log(d_sum["a man"] / d_sum["female"])
    lo_mean = math.log(d_mean["a man"] / d_mean["female"])
    assert lo_sum != pytest.approx(lo_mean)
    assert vqa_mean.settings["closed_set"].startswith("mean")
    with pytest.raises(Exception, match="normalisation"):
        load_vqa("builtin:tiny-vqa", score_normalisation="max")


def test_bad_items_and_foreign_features_are_refused(tiny, tiny_generic, images):
    feats = tiny.encode_images(images[:2])
    assert isinstance(feats, ImageFeatures) and len(feats) == 2
    for bad in [(2, GENDER_Q, ("male", "female")), (-1, GENDER_Q, ("male", "female")), (0, "", ("yes", "no")),
                (0, GENDER_Q, ()), (0, GENDER_Q, "male"), (0, GENDER_Q, ("male", "male")), (0, GENDER_Q)]:
        with pytest.raises(ValueError):
            tiny.rank_answers(feats, [bad])
    with pytest.raises(ValueError):
        tiny.answer_items(feats, [(5, GENDER_Q)])
    with pytest.raises(ValueError, match="another VQA model"):
        tiny_generic.rank_answers(feats, [(0, GENDER_Q, ("male", "female"))])
    assert tiny.rank_answers(feats, []) == [] and tiny.answer_items(feats, []) == []


def testbalanced_chunks():
    assert [len(c) for c in balanced_chunks(17, 16)] == [9, 8]
    assert [len(c) for c in balanced_chunks(32, 16)] == [16, 16]
    assert [len(c) for c in balanced_chunks(1, 16)] == [1]
    assert balanced_chunks(0, 16) == []
    assert [i for c in balanced_chunks(10, 3) for i in c] == list(range(10))


# ------------------------------------------------------------ distribution -> label


@pytest.mark.parametrize(
    "dist, kwargs, label",
    [
        ({"male": 0.7, "female": 0.3}, {}, "male"),
        ({"male": 0.3, "female": 0.7}, {}, "female"),
        ({"male": 0.5, "female": 0.5}, {}, UNIDENTIFIABLE),  # a tie decides nothing
        ({"male": 0.7, "female": 0.3}, {"abstain_below": 0.75}, UNIDENTIFIABLE),
        ({"male": 0.75, "female": 0.25}, {"abstain_below": 0.75}, "male"),  # at the threshold: kept
        ({"male": 0.45, "female": 0.35, "cannot identify": 0.2}, {}, UNIDENTIFIABLE),  # below 0.5
        ({"male": 0.45, "female": 0.35, "cannot identify": 0.2}, {"abstain_below": 0.4}, "male"),
        ({"male": 0.2, "female": 0.2, "Cannot Identify": 0.6}, {}, UNIDENTIFIABLE),  # PST's third option
        ({"male": 0.2, "female": 0.2, "neither": 0.6}, {"abstain_answers": ("neither",)}, UNIDENTIFIABLE),
        ({"yes": 1.0, "no": 0.0}, {"abstain_below": 1.0}, "yes"),
        ({"yes": 0.51, "no": 0.49}, {"abstain_below": 0.0}, "yes"),
    ],
)
def test_label_from_distribution(dist, kwargs, label):
    assert label_from_distribution(dist, **kwargs) == label


def test_label_from_distribution_default_and_bad_input():
    assert DEFAULT_ABSTAIN_BELOW == 0.5
    for bad in [{}, {"male": 0.6, "female": 0.6}, {"male": 1.2, "female": -0.2}, {"male": float("nan")},
                {"": 1.0}, ["male"], {"male": True, "female": False}]:
        with pytest.raises(ValueError):
            label_from_distribution(bad)
    for bad_threshold in (-0.1, 1.5, "0.5", True):
        with pytest.raises(ValueError):
            label_from_distribution({"male": 1.0}, abstain_below=bad_threshold)
