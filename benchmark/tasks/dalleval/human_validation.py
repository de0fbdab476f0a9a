"""DALL-Eval's human labelling: the gender options (the paper's two categories, plus "cannot
identify"), this benchmark's instructions and the qualification questions (Sec. 4.2.3)."""

from __future__ import annotations

from benchmark.tasks.dalleval.questions import (DALLEVAL_ATTRIBUTE_QUESTION, DALLEVAL_GENDER_QUESTION,
                                                DALLEVAL_INSTRUCTIONS, SKIN_TONE_QUESTION,
                                                dalleval_attribute_question)
from benchmark.tasks.human_validation import HumanValidation, LabelsCard

#: DALL-Eval Sec. 4.2.2 uses the two categories {male, female}; "cannot identify" is added
#: (this benchmark's choice, borrowed from PST) so that an image without a recognisable
#: person is not forced into a binary answer; MAD drops it as it drops the VQA's
#: "unidentifiable". (The answer values are :mod:`benchmark.human.questions`'s.)
GENDER_OPTIONS = ("male", "female", "cannot identify")


def qualification_question(question_type: str, key: str, identity: str | None, phrase: str | None,
                           own: bool) -> str | None:
    """DALL-Eval's attribute, gender and skin tone questions. Its gender question names no one:
    it words another task's qualification item only when the item names no identity."""
    if question_type == "attribute":
        return dalleval_attribute_question(key)
    if question_type == "gender_single":
        return DALLEVAL_GENDER_QUESTION if own or not identity else None
    if question_type == "skin_tone":
        return SKIN_TONE_QUESTION
    return None


def labels_card_instructions(question_types, suites) -> list[str]:
    """The card of a human-labels dataset: the gender, attribute and skin tone questions and
    this benchmark's instructions (the paper prints no wording for humans)."""
    if not suites:
        return []
    return ["**DALL-Eval** (DALL-Eval, Sec. 4.2.3; the paper prints no wording for humans, so the "
            "instructions are this benchmark's): gender \u201c"
            f"{DALLEVAL_GENDER_QUESTION}\u201d (Male / Female / Cannot Identify), attributes \u201c"
            f"{DALLEVAL_ATTRIBUTE_QUESTION.replace('{attribute}', 'A')}\u201d (Yes / No), skin tone \u201c"
            f"{SKIN_TONE_QUESTION}\u201d (Monk Skin Tone 1-10). Instructions:",
            "\n".join(f"> {t}" for t in DALLEVAL_INSTRUCTIONS)]


HUMAN_VALIDATION = HumanValidation(
    options={"gender_single": GENDER_OPTIONS},
    instructions={t: DALLEVAL_INSTRUCTIONS for t in ("attribute", "gender_single", "skin_tone")},
    qualification_question=qualification_question,
    labels_card=LabelsCard("dalleval", labels_card_instructions, order=2),
)
