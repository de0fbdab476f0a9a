"""VQA: builtin:tiny-vqa (a tiny random BLIP-2) through from_pretrained; answer -> label maps."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from benchmark.models.vqa import (
    BLIP2_PROMPT,
    Blip2VQA,
    ImageTextToTextVQA,
    answer_to_label,
    gender_label,
    load_vqa,
    yes_no_label,
)

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
