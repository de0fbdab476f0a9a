"""What the human annotators are asked: the answer options and instructions per question type.

The questions themselves are the papers' (``benchmark/tasks/<paper>/questions.py``, quoted
from the paper that defines the label, or marked as this benchmark's choice).
The stored answer values (``OPTION_VALUES``) are lower-case and fixed: the labels file and
the agreement statistics rely on them.
"""

from __future__ import annotations

# The papers' wording lives in their task folders; imported here for the app and the dataset card.
from benchmark.human.question_types import QUESTION_TYPES  # noqa: F401 (re-exported)
from benchmark.tasks.dalleval.questions import (DALLEVAL_ATTRIBUTE_QUESTION, DALLEVAL_GENDER_QUESTION,
                                                DALLEVAL_INSTRUCTIONS, SKIN_TONE_QUESTION, dalleval_attribute_question)
from benchmark.tasks.gep.questions import GEP_INSTRUCTIONS, GEP_QUESTION, gep_question
from benchmark.tasks.pst.questions import (PST_PAIRED_INSTRUCTION, PST_PAIRED_QUESTION, PST_PREAMBLE,
                                           PST_SINGLE_INSTRUCTION, PST_SINGLE_QUESTION, pst_paired_question,
                                           pst_single_question)


# ----------------------------------------------------------------------------- answers

YES, NO = "yes", "no"
FEMININE, MASCULINE, CANNOT_IDENTIFY = "feminine", "masculine", "cannot identify"
MALE, FEMALE = "male", "female"
MONK_TONES = tuple(str(i) for i in range(1, 11))

#: The options offered per question type and suite family (the answer values stored).
ATTRIBUTE_OPTIONS = (YES, NO)                               # GEP Sec. 5 / DALL-Eval Fig. 6 (Y / N)
PST_GENDER_OPTIONS = (FEMININE, MASCULINE, CANNOT_IDENTIFY)  # PST App. C.2, Table 10
# DALL-Eval Sec. 4.2.2 uses the two categories {male, female}; "cannot identify" is added
# (this benchmark's choice, borrowed from PST) so that an image without a recognisable
# person is not forced into a binary answer; MAD drops it as it drops the VQA's
# "unidentifiable".
DALLEVAL_GENDER_OPTIONS = (MALE, FEMALE, CANNOT_IDENTIFY)
SKIN_TONE_OPTIONS = MONK_TONES                              # DALL-Eval Sec. 4.2.2: MST 1..10

#: Every value an answer of each question type may take.
OPTION_VALUES: dict[str, tuple[str, ...]] = {
    "attribute": ATTRIBUTE_OPTIONS,
    "gender_paired": PST_GENDER_OPTIONS,
    "gender_single": (FEMININE, MASCULINE, MALE, FEMALE, CANNOT_IDENTIFY),
    "skin_tone": SKIN_TONE_OPTIONS,
}

#: Button text of each answer value.
OPTION_LABELS = {YES: "Yes", NO: "No", FEMININE: "Feminine", MASCULINE: "Masculine",
                 CANNOT_IDENTIFY: "Cannot Identify", MALE: "Male", FEMALE: "Female",
                 **{t: t for t in MONK_TONES}}

#: How each answer maps to the label the automatic annotators write (labels/gender.parquet
#: ``label``, labels/attributes.parquet ``label``, labels/skin_tone.parquet ``mst``).
AUTOMATIC_LABEL = {YES: 1, NO: 0, FEMININE: "female", FEMALE: "female", MASCULINE: "male", MALE: "male",
                   CANNOT_IDENTIFY: "unidentifiable", **{t: int(t) for t in MONK_TONES}}

#: The 10 MST swatches in sRGB (HELM's values, the official MST colours #f6ede4 .. #292420;
#: benchmark/tasks/dalleval/probes.yaml ``monk_skin_tone_rgb``), MST 1..10.
MONK_SWATCH_RGB = ((246, 237, 228), (243, 231, 219), (247, 234, 208), (234, 218, 186), (215, 189, 150),
                   (160, 126, 86), (130, 92, 67), (96, 65, 52), (58, 49, 42), (41, 36, 32))


def swatch_hex(tone: int | str) -> str:
    """``"#f6ede4"`` for MST 1."""
    r, g, b = MONK_SWATCH_RGB[int(tone) - 1]
    return f"#{r:02x}{g:02x}{b:02x}"


def instructions_for(question_type: str, suite: str) -> tuple[str, ...]:
    """The instruction paragraphs shown with a question of this type and suite."""
    if question_type == "attribute" and suite.startswith("gep"):
        return GEP_INSTRUCTIONS
    if question_type == "gender_paired":
        return (PST_PREAMBLE, PST_PAIRED_INSTRUCTION)
    if question_type == "gender_single" and suite.startswith("pst"):
        return (PST_PREAMBLE, PST_SINGLE_INSTRUCTION)
    return DALLEVAL_INSTRUCTIONS


def options_for(question_type: str, suite: str) -> tuple[str, ...]:
    """The answer values offered for a question of this type in this suite."""
    if question_type not in QUESTION_TYPES:
        raise ValueError(f"unknown question type {question_type!r}; expected one of {list(QUESTION_TYPES)}")
    if question_type == "gender_single":
        return DALLEVAL_GENDER_OPTIONS if suite.startswith("dalleval") else PST_GENDER_OPTIONS
    return {"attribute": ATTRIBUTE_OPTIONS, "gender_paired": PST_GENDER_OPTIONS,
            "skin_tone": SKIN_TONE_OPTIONS}[question_type]
