"""VQA annotators: perceived gender (``labels/gender.parquet``) and attribute presence
(``labels/attributes.parquet``), and answers turned into labels.

Which questions an image gets is its task's business, passed in as each suite's parameter:
a function ``(row, config) -> [(person or attribute, question), ...]`` (DALL-Eval asks its
config's gender question and one "Is the person wearing {a}?" per attribute; PST asks the
row's own ``question`` / left and right ``questions``). A probe-config variant with other
wording therefore needs no code change.

Questions are passed to the VQA model raw; a BLIP-2 model wraps each one as the paper's
code does ("Question: {q} Answer:", ``benchmark.models.vqa.BLIP2_PROMPT``).

Answers -> labels: :func:`perceived_gender_label` (the models' ``gender_label`` plus PST's
"masculine" / "feminine" wording), :func:`presence_label` (``yes_no_label``; "yes" -> 1,
anything else -> 0, as DALL-Eval counts an attribute present only on "yes").
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from benchmark.annotate.registry import AnnotateContext, Annotator, AnnotatorKind, WorkItem, register_annotator

__all__ = ["VQAGenderAnnotator", "VQAAttributeAnnotator", "perceived_gender_label", "presence_label"]

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


class _VQAAnnotator(Annotator):
    """Asks each image its suite's questions (the task's function) and keeps the answers."""

    inputs = "pixels"
    model_key = "vqa"

    def questions(self, row: Mapping[str, Any], ctx: AnnotateContext) -> list[tuple[str, str]]:
        ask = self.params.get(str(row["suite"]))
        return list(ask(row, ctx.config_of(row))) if ask is not None else []

    def load_model(self, spec: str, ctx: AnnotateContext) -> Any:
        from benchmark.models import load_vqa

        return load_vqa(spec, device=ctx.device, batch_size=ctx.batch_size)

    def ask(self, items: Sequence[WorkItem], ctx: AnnotateContext) -> list[tuple[WorkItem, tuple, str]]:
        """(item, key, answer) for every missing key of ``items``; the question is in the key."""
        asked = [(it, key) for it in items for key in it.keys]
        answers = self.load(ctx).answer([it.image for it, _ in asked], [self.question_of(key) for _, key in asked])
        return [(it, key, ans) for (it, key), ans in zip(asked, answers)]

    @staticmethod
    def question_of(key: tuple) -> str:
        raise NotImplementedError


class VQAGenderAnnotator(_VQAAnnotator):
    """Perceived gender of each person the suite's questions name (``single``, or ``left`` and
    ``right`` in a pair)."""

    kind = "vqa_gender"
    label_file = "gender"

    def keys(self, row: Mapping[str, Any], ctx: AnnotateContext) -> list[tuple]:
        return [(str(row["probe_id"]), person, q, self.name) for person, q in self.questions(row, ctx)]

    @staticmethod
    def question_of(key: tuple) -> str:
        return key[2]

    def annotate(self, items: Sequence[WorkItem], ctx: AnnotateContext) -> list[dict]:
        return [{"probe_id": key[0], "person": key[1], "question": key[2], "answer": ans,
                 "label": perceived_gender_label(ans), "annotator": self.name} for _, key, ans in self.ask(items, ctx)]


class VQAAttributeAnnotator(_VQAAnnotator):
    """Presence of each attribute the suite asks about (yes -> 1)."""

    kind = "vqa_attributes"
    label_file = "attributes"

    def keys(self, row: Mapping[str, Any], ctx: AnnotateContext) -> list[tuple]:
        return [(str(row["probe_id"]), attr, "vqa", self.name, q) for attr, q in self.questions(row, ctx)]

    @staticmethod
    def question_of(key: tuple) -> str:
        return key[4]

    def annotate(self, items: Sequence[WorkItem], ctx: AnnotateContext) -> list[dict]:
        return [{"probe_id": key[0], "attribute": key[1], "score": float(presence_label(ans)),
                 "label": presence_label(ans), "estimator": "vqa", "annotator": self.name, "question": key[4],
                 "answer": ans} for _, key, ans in self.ask(items, ctx)]


def _default_vqa(builtin: bool) -> str:
    from benchmark.models.defaults import DEFAULT_VQA, TINY_VQA

    return TINY_VQA if builtin else DEFAULT_VQA


VQA_HELP = "VQA model for gender / attribute questions (default Salesforce/blip2-opt-2.7b)"
register_annotator(AnnotatorKind("vqa_gender", VQAGenderAnnotator, option="vqa", default=_default_vqa,
                                 help=VQA_HELP))
register_annotator(AnnotatorKind("vqa_attributes", VQAAttributeAnnotator, option="vqa", default=_default_vqa,
                                 help=VQA_HELP))
