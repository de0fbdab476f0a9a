"""VQA annotators: perceived gender (``labels/gender.parquet``) and attribute presence
(``labels/attributes.parquet``), and answers turned into labels.

Which questions an image gets is its task's business, passed in as each suite's parameter:
a function ``(row, config) -> [(person or attribute, question, allowed answers), ...]``
(:class:`VQAQuestion`; DALL-Eval asks its
config's gender question and one "Is the person wearing {a}?" per attribute; PST asks the
row's own ``question`` / left and right ``questions``). A probe-config variant with other
wording therefore needs no code change.

Questions are passed to the VQA model raw; a BLIP-2 model wraps each one as the paper's
code does ("Question: {q} Answer:", ``benchmark.models.vqa.BLIP2_PROMPT``).

Answers -> labels. Closed-set mode (the default): the most likely allowed answer, or
``unidentifiable`` by the rule of :func:`benchmark.annotate.vqa_answers.label_from_distribution` (a
tie, a top probability under ``abstain_below``, or an abstaining answer such as "cannot
identify"); attributes are present when "yes" wins. Generate mode (the papers' free-text
protocol): :func:`perceived_gender_label` (the models' ``gender_label`` plus PST's
"masculine" / "feminine" wording), :func:`presence_label` (``yes_no_label``; "yes" -> 1,
anything else -> 0, as DALL-Eval counts an attribute present only on "yes"). The label
files say which (``estimator``: ``vqa closed-set`` / ``vqa generate``).
"""

from __future__ import annotations

import re
from typing import Any, Mapping, NamedTuple, Sequence

from benchmark.models.defaults import DEFAULT_VQA, TINY_VQA
from benchmark.models.vqa import check_vqa_spec, load_vqa
from benchmark.registries import Registrations

from .registry import (
    AnnotateContext,
    Annotator,
    AnnotatorKind,
    WorkItem,
    with_prepared,
)
from .vqa_answers import DEFAULT_ABSTAIN_BELOW, gender_label, label_from_distribution, yes_no_label

__all__ = ["VQA_MODES", "VQAQuestion", "VQAGenderAnnotator", "VQAAttributeAnnotator", "YES_NO",
           "perceived_gender_label", "presence_label"]

_GENDER_SYNONYMS = ((re.compile(r"\bmasculine\b"), "male"), (re.compile(r"\bfeminine\b"), "female"))


def perceived_gender_label(answer: str) -> str:
    """``male`` / ``female`` / ``unidentifiable`` for a free-text answer.

    PST's annotation wording "masculine" / "feminine" counts as male / female; everything
    else is :func:`benchmark.annotate.vqa_answers.gender_label` (word match, "female" never matches
    "male"; both or neither gender -> ``unidentifiable``).
    """
    text = str(answer).lower()
    for pattern, word in _GENDER_SYNONYMS:
        text = pattern.sub(word, text)
    return gender_label(text)


def presence_label(answer: str) -> int:
    """1 when the answer is yes (``yes_no_label``), else 0 (no or unidentifiable)."""
    return int(yes_no_label(answer) == "yes")


#: how a VQA annotator turns a question into a label (``--vqa-mode``)
VQA_MODES = ("closed-set", "generate")
DEFAULT_VQA_MODE = "closed-set"


class VQAQuestion(NamedTuple):
    """One question a task asks of an image: ``key`` (the person, or the attribute), the text,
    and the answers it allows (closed-set mode scores exactly these)."""

    key: str
    question: str
    answers: tuple[str, ...]


class _VQAAnnotator(Annotator):
    """Asks each image its suite's questions (the task's function) and keeps the labels.

    ``mode="closed-set"`` (default): the model scores each allowed answer by its likelihood
    (:meth:`benchmark.models.vqa.VQAModel.rank_answers`) and the label is the most likely
    one, or ``unidentifiable`` by :func:`benchmark.annotate.vqa_answers.label_from_distribution`
    (``abstain_below``). ``mode="generate"``: the papers' free-text protocol (greedy decoding,
    then the parsing rules of :func:`perceived_gender_label` / :func:`presence_label`). Either
    way each image goes through the vision encoder once per batch, shared by every VQA
    annotator of the same model (``ctx.batch``), and questions of all images are batched
    together whatever their text.
    """

    inputs = "pixels"
    model_key = "vqa"

    def __init__(self, model: Any, params: Mapping[str, Any], *, vqa_mode: str | None = None,
                 vqa_abstain_below: float | None = None):
        super().__init__(model, params)
        self.mode = vqa_mode or DEFAULT_VQA_MODE
        if self.mode not in VQA_MODES:
            raise ValueError(f"unknown VQA mode {self.mode!r}: use {' or '.join(VQA_MODES)}")
        self.abstain_below = DEFAULT_ABSTAIN_BELOW if vqa_abstain_below is None else float(vqa_abstain_below)
        self.estimator = f"vqa {self.mode}"
        self.allowed: dict[tuple, tuple[str, ...]] = {}  # key -> the answers its question allows

    def check(self) -> None:
        if isinstance(self.model, str):
            check_vqa_spec(self.model)

    def questions(self, row: Mapping[str, Any], ctx: AnnotateContext) -> list[VQAQuestion]:
        ask = self.params.get(str(row["suite"]))
        return [VQAQuestion(*q) for q in ask(row, ctx.config_of(row))] if ask is not None else []

    def load_model(self, spec: str, ctx: AnnotateContext) -> Any:
        return load_vqa(spec, device=ctx.device, batch_size=ctx.batch_size)

    def _features(self, model: Any, ctx: AnnotateContext) -> tuple[Any, dict[str, int]]:
        """The batch's image features, computed once for every VQA annotator of this model."""
        def encode():
            pids = ctx.batch.needing(self.model_key, self.model)
            images = [ctx.batch.images[p] for p in pids]
            feats = with_prepared(model.encode_images, images, ctx.prepared(self.model_key, self.model, pids))
            return feats, {p: i for i, p in enumerate(pids)}

        return ctx.batch.shared((self.model_key, self.name), encode)

    def ask(self, items: Sequence[WorkItem], ctx: AnnotateContext) -> list[tuple[tuple, str, dict | None]]:
        """(key, answer, distribution or None) for every missing key of ``items``."""
        model = self.load(ctx)
        asked = [(it, key, self.allowed[key]) for it in items for key in it.keys]
        if not asked:
            return []
        feats, index = self._features(model, ctx)
        if self.mode == "generate":
            answers = model.answer_items(feats, [(index[it.probe_id], self.question_of(k)) for it, k, _ in asked])
            return [(k, ans, None) for (_, k, _), ans in zip(asked, answers)]
        dists = model.rank_answers(feats, [(index[it.probe_id], self.question_of(k), allowed)
                                           for it, k, allowed in asked])
        return [(k, max(d, key=d.get), d) for (_, k, _), d in zip(asked, dists)]

    def label(self, answer: str, dist: dict | None) -> str:
        return label_from_distribution(dist, abstain_below=self.abstain_below)

    def keys(self, row: Mapping[str, Any], ctx: AnnotateContext) -> list[tuple]:
        out = []
        for q in self.questions(row, ctx):
            key = self.make_key(str(row["probe_id"]), q)
            self.allowed[key] = tuple(q.answers)
            out.append(key)
        return out

    @staticmethod
    def question_of(key: tuple) -> str:
        raise NotImplementedError

    def make_key(self, probe_id: str, q: VQAQuestion) -> tuple:
        raise NotImplementedError


class VQAGenderAnnotator(_VQAAnnotator):
    """Perceived gender of each person the suite's questions name (``single``, or ``left`` and
    ``right`` in a pair)."""

    kind = "vqa_gender"
    label_file = "gender"

    def make_key(self, probe_id: str, q: VQAQuestion) -> tuple:
        return (probe_id, q.key, q.question, self.estimator, self.name)

    @staticmethod
    def question_of(key: tuple) -> str:
        return key[2]

    def label(self, answer: str, dist: dict | None) -> str:
        return perceived_gender_label(answer) if dist is None else super().label(answer, dist)

    def annotate(self, items: Sequence[WorkItem], ctx: AnnotateContext) -> list[dict]:
        rows = []
        for key, ans, dist in self.ask(items, ctx):
            label = self.label(ans, dist)
            rows.append({"probe_id": key[0], "person": key[1], "question": key[2], "answer": ans, "label": label,
                         "score": None if dist is None else dist.get(label), "estimator": self.estimator,
                         "annotator": self.name})
        return rows


class VQAAttributeAnnotator(_VQAAnnotator):
    """Presence of each attribute the suite asks about: label 1 on yes; ``score`` is the
    probability of yes (closed-set) or the 0/1 label (generate)."""

    kind = "vqa_attributes"
    label_file = "attributes"

    def make_key(self, probe_id: str, q: VQAQuestion) -> tuple:
        return (probe_id, q.key, self.estimator, self.name, q.question)

    @staticmethod
    def question_of(key: tuple) -> str:
        return key[4]

    def annotate(self, items: Sequence[WorkItem], ctx: AnnotateContext) -> list[dict]:
        rows = []
        for key, ans, dist in self.ask(items, ctx):
            present = presence_label(ans) if dist is None else int(self.label(ans, dist) == YES)
            rows.append({"probe_id": key[0], "attribute": key[1],
                         "score": float(present) if dist is None else float(dist.get(YES, 0.0)), "label": present,
                         "estimator": self.estimator, "annotator": self.name, "question": key[4], "answer": ans})
        return rows


YES = "yes"
#: the answers of a yes / no question in closed-set mode
YES_NO = (YES, "no")


def _default_vqa(builtin: bool) -> str:
    return TINY_VQA if builtin else DEFAULT_VQA


VQA_HELP = "VQA model for gender / attribute questions (default Salesforce/blip2-opt-2.7b)"
VQA_SETTINGS = ("vqa_mode", "vqa_abstain_below")
REGISTRATIONS = Registrations(annotators=(
    AnnotatorKind("vqa_gender", VQAGenderAnnotator, option="vqa", default=_default_vqa, help=VQA_HELP,
                  settings=VQA_SETTINGS),
    AnnotatorKind("vqa_attributes", VQAAttributeAnnotator, option="vqa", default=_default_vqa, help=VQA_HELP,
                  settings=VQA_SETTINGS),
))
