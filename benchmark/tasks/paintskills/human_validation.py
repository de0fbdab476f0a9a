"""PaintSkills' human labelling: this benchmark's instructions for the skill questions
(:mod:`.questions`; DALL-Eval Sec. 5.2 prints none for its expert), the card of a human-labels
dataset, and people's answers as ``labels/detections.parquet`` rows (:mod:`.people_labels`), which
correct the PaintSkills accuracies."""

from __future__ import annotations

from benchmark.annotate.label_files import BUILTIN_LABEL_FILES
from benchmark.tasks.human_validation import AnswersAsLabels, HumanValidation, LabelsCard
from benchmark.tasks.paintskills.people_labels import answers_as_detections, judged
from benchmark.tasks.paintskills.questions import (COUNT_NUMBER_QUESTION, COUNT_QUESTION, INSTRUCTIONS,
                                                   OBJECT_QUESTION, QUESTION_TYPE, SPATIAL_OBJECTS_QUESTION,
                                                   SPATIAL_QUESTION)

_DETECTIONS = next(f for f in BUILTIN_LABEL_FILES if f.name == "detections")
#: the columns of labels/detections.parquet people's answers replace: all but its key (probe_id, detector)
DETECTION_VALUES = tuple(c for c in _DETECTIONS.columns if c not in _DETECTIONS.key)


def labels_card_instructions(question_types, suites) -> list[str]:
    """The card of a human-labels dataset: the skill questions and this benchmark's instructions."""
    if QUESTION_TYPE not in question_types or not suites:
        return []
    asked = "; ".join(f"\u201c{q}\u201d" for q in (OBJECT_QUESTION, COUNT_QUESTION, COUNT_NUMBER_QUESTION,
                                                       SPATIAL_OBJECTS_QUESTION, SPATIAL_QUESTION))
    return ["**PaintSkills** (DALL-Eval Sec. 4.1 and Fig. 5b; Sec. 5.2 has an expert judge the images but prints "
            f"no wording, so the questions and instructions are this benchmark's), answers Yes / No: {asked}. "
            "Instructions:", "\n".join(f"> {t}" for t in INSTRUCTIONS)]


HUMAN_VALIDATION = HumanValidation(
    instructions={QUESTION_TYPE: INSTRUCTIONS},
    labels_card=LabelsCard("dalleval", labels_card_instructions, order=3),
    answers_as_labels=AnswersAsLabels(
        label_file=_DETECTIONS.name, keys=("probe_id",), values=DETECTION_VALUES, question_types=(QUESTION_TYPE,),
        rows=answers_as_detections, judged=judged, annotator_column="detector"),
)
