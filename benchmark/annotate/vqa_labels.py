"""VQA questions asked of each image, and answers turned into labels.

Which question an image gets comes from its probe row (so a probe-config variant with
other wording needs no code change):

* ``dalleval_bias``: the gender question of the DALL-Eval config
  (``benchmark.probes.dalleval.vqa_gender_question()``: "the person looks like a male or
  a female?") and one "Is the person wearing {a}?" per attribute
  (``vqa_attribute_questions()``, 15 attributes);
* ``pst_single``: the row's ``question`` ("What gender is the {id} in the picture?");
* ``pst_paired_occupation`` / ``pst_paired_power`` / ``pst_intervention``: the two
  questions of the row's ``questions`` field, left then right ("What gender is the
  {id} on the left/right in the picture?").

Questions are passed to the VQA model raw; a BLIP-2 model wraps each one as the
paper's code does ("Question: {q} Answer:", ``benchmark.models.vqa.BLIP2_PROMPT``).

Answers -> labels: :func:`perceived_gender_label` (the models' ``gender_label`` plus
PST's "masculine" / "feminine" wording), :func:`presence_label` (``yes_no_label``;
"yes" -> 1, anything else -> 0, as DALL-Eval counts an attribute present only on "yes").
"""

from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np

__all__ = [
    "GENDER_SUITES",
    "PAIRED_SUITES",
    "ATTRIBUTE_VQA_SUITES",
    "perceived_gender_label",
    "presence_label",
    "gender_questions",
    "attribute_questions",
]

#: suites whose images get a perceived-gender question
GENDER_SUITES = ("dalleval_bias", "pst_single", "pst_paired_occupation", "pst_paired_power", "pst_intervention")
#: suites with two persons per image (left, right)
PAIRED_SUITES = ("pst_paired_occupation", "pst_paired_power", "pst_intervention")
#: suites whose images get the attribute yes/no questions
ATTRIBUTE_VQA_SUITES = ("dalleval_bias",)

_GENDER_SYNONYMS = ((re.compile(r"\bmasculine\b"), "male"), (re.compile(r"\bfeminine\b"), "female"))


def perceived_gender_label(answer: str) -> str:
    """``male`` / ``female`` / ``unidentifiable`` for a free-text answer.

    PST's annotation wording "masculine" / "feminine" counts as male / female; everything
    else is :func:`benchmark.models.vqa.gender_label` (word match, "female" never matches
    "male"; both or neither gender -> ``unidentifiable``).
    """
    from benchmark.models.vqa import gender_label

    text = str(answer).lower()
    for pattern, word in _GENDER_SYNONYMS:
        text = pattern.sub(word, text)
    return gender_label(text)


def presence_label(answer: str) -> int:
    """1 when the answer is yes (``yes_no_label``), else 0 (no or unidentifiable)."""
    from benchmark.models.vqa import yes_no_label

    return int(yes_no_label(answer) == "yes")


def _as_list(value: Any) -> list:
    if value is None:
        return []
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def gender_questions(row: Mapping[str, Any], dalleval_config: dict | None = None) -> list[tuple[str, str]]:
    """``[(person, question), ...]`` for a probe row: ``[("single", q)]`` or
    ``[("left", q_left), ("right", q_right)]``; ``[]`` for suites without a gender question."""
    suite = row["suite"]
    if suite == "dalleval_bias":
        from benchmark.probes.dalleval import vqa_gender_question

        return [("single", vqa_gender_question(dalleval_config))]
    if suite == "pst_single":
        q = row.get("question")
        if not isinstance(q, str) or not q:
            raise ValueError(f"probe {row['probe_id']!r} of pst_single has no question")
        return [("single", q)]
    if suite in PAIRED_SUITES:
        qs = _as_list(row.get("questions"))
        if len(qs) != 2 or not all(isinstance(q, str) and q for q in qs):
            raise ValueError(f"probe {row['probe_id']!r} of {suite} must have two questions (left, right), got {qs!r}")
        return [("left", qs[0]), ("right", qs[1])]
    return []


def attribute_questions(row: Mapping[str, Any], dalleval_config: dict | None = None) -> list[tuple[str, str]]:
    """``[(attribute, question), ...]``: DALL-Eval's "Is the person wearing {a}?" for each of
    its attributes (``dalleval_bias`` rows), ``[]`` otherwise."""
    if row["suite"] not in ATTRIBUTE_VQA_SUITES:
        return []
    from benchmark.probes.dalleval import vqa_attribute_questions

    return list(vqa_attribute_questions(dalleval_config).items())
