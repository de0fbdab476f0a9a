"""What the human labelling app and ``t2ibench agreement`` ask a task, beside the questions
about its images (``Task.human_questions``): a task declares it as ``Task.human_validation``
(the built-in tasks in ``benchmark/tasks/<paper>/human_validation.py``).

The generic code (:mod:`benchmark.human`) knows the question *types* (``attribute``,
``gender_single``, ``gender_paired``, ``skin_tone``), their answer values and the
statistics that compare automatic labels with the human majority; a task says how its
questions are put to a person (answer options, instructions, the wording of a qualification
question) and which analyses of its own the agreement tables add (GEP's vectors, PST's
subsets of the perceived-gender table), and what the card of a human-labels dataset says of
its questions (:class:`LabelsCard`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

__all__ = ["AgreementTable", "AnswersAsLabels", "LabelsCard", "HumanValidation"]


@dataclass(frozen=True)
class AgreementTable:
    """A table a task adds to ``report/agreement.json`` (``key``), shown under ``heading`` in
    agreement.md and under ``report_title`` in the run's report."""

    key: str
    heading: str
    report_title: str


@dataclass(frozen=True)
class LabelsCard:
    """What a task adds to the card of a human-labels dataset
    (:mod:`benchmark.human.label_dataset`, ``python -m dataset_builders.human_labels``).

    ``paper``: the citation key of the paper whose questions the task asks (the card names it by
    its label and cites it). ``instructions(question_types, suites)``: the Markdown paragraphs
    quoting the task's questions and instructions, given the question types the dataset has
    answers for and its suites of the task's probe family ([] when it has none of the task's). ``setting``: how the paper's
    annotators were recruited and paid, for comparison ("" when it says nothing). ``order``: the
    card's paragraphs follow it (ties in task order).
    """

    paper: str
    instructions: Callable[[Sequence[str], Sequence[str]], list[str]]
    setting: str = ""
    order: int = 0


@dataclass(frozen=True)
class AnswersAsLabels:
    """People's answers to a task's questions as rows of one of its label files, for a label file
    no generic question type stands for (the generic ones: perceived gender, attributes, skin
    tone). The score stage scores the task again, its scorer unchanged, on these rows in place of
    the annotator's, which is how people's labels correct the task's scores
    (:mod:`benchmark.human.correction_labels`, docs/human_correction.md).

    ``label_file``: the label file people's answers stand in for; ``keys``: its columns that say
    which of its rows an image's answers replace (every annotator's row of the image: ``probe_id``);
    ``values``: the columns the answers replace; ``annotator_column``: its column naming who made a
    row. ``question_types``: the question types whose answers it reads.
    ``rows(answers, probes)``: the ``keys`` + ``values`` columns, one row per image answered
    completely, from the majority answers (``probe_id``, ``question_type``, ``question_key``,
    ``majority``; ties left out) and the manifest rows of those images. ``judged(rows, config)``:
    each label row (joined with its probe fields) judged as the scorer judges an image, with the
    task's probe config: a label compared between the annotator and people image by image
    (the annotator's error rates).
    """

    label_file: str
    keys: tuple[str, ...]
    values: tuple[str, ...]
    question_types: tuple[str, ...]
    rows: Callable[[Any, Any], Any]
    judged: Callable[[Any, dict], Any] | None = None
    annotator_column: str = "annotator"


@dataclass(frozen=True)
class HumanValidation:
    """How a task's images are labelled by people and its automatic labels checked against them.

    ``options``: question type -> the answer values offered for the task's questions of that
    type (default: the question type's, :data:`benchmark.human.questions.DEFAULT_OPTIONS`).
    ``instructions``: question type -> the instruction paragraphs shown with them.
    ``qualification_question(question_type, key, identity, phrase, own)``: the wording of a
    qualification question about an image (a file, or an image of the run), or None when the
    task does not ask it with these fields; ``own`` is true when the item names one of the
    task's suites (another task's items fall back to the first task that words them).
    ``needs_identity``: question types whose wording names the person (a qualification image
    file then needs ``identity``). ``attribute_tables(pairs, manifest)``: tables compared on
    the human-majority attribute labels joined with the automatic scores (``pairs``: probe_id,
    suite, attribute, human, score, label, estimator, annotator), by key in ``tables``' order;
    each registered task adds its tables, empty when the run has none of its images.
    ``attribute_analyses(run_dir, human, random_state) -> (tables, notes)``: analyses of the
    run built on the human-majority attribute labels (``human``: probe_id, suite, attribute,
    human), e.g. GEP's artificial datasets; added to agreement.json in the order returned,
    after the label comparisons (``t2ibench agreement --no-artificial`` skips them).
    ``markdown(tables) -> [str | DataFrame]``: the task's sections of agreement.md after the
    label comparisons (a DataFrame is written as a table), [] when it has none.
    ``gender_subset(manifest row)``: the row of the perceived-gender table an image belongs to.
    ``labels_card``: what the card of a human-labels dataset says of the task's questions.
    ``answers_as_labels``: people's answers as rows of a label file the generic question types do
    not cover (:class:`AnswersAsLabels`), so that they correct the task's scores.
    """

    options: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    instructions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    qualification_question: Callable[[str, str, str | None, str | None, bool], str | None] | None = None
    needs_identity: tuple[str, ...] = ()
    attribute_tables: Callable[[Any, Any], dict] | None = None
    tables: tuple[AgreementTable, ...] = ()
    attribute_analyses: Callable[[Any, Any, int], tuple[dict, list[str]]] | None = None
    markdown: Callable[[Mapping], list] | None = None
    gender_subset: Callable[[Mapping], str] | None = None
    labels_card: LabelsCard | None = None
    answers_as_labels: AnswersAsLabels | None = None
