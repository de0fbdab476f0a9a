"""DALL-Eval's human labelling: the gender options (the paper's two categories, plus "cannot
identify"), this benchmark's instructions and the qualification questions (Sec. 4.2.3)."""

from __future__ import annotations

from benchmark.tasks.dalleval.questions import (DALLEVAL_GENDER_QUESTION, DALLEVAL_INSTRUCTIONS,
                                                SKIN_TONE_QUESTION, dalleval_attribute_question)
from benchmark.tasks.human_validation import HumanValidation

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


HUMAN_VALIDATION = HumanValidation(
    options={"gender_single": GENDER_OPTIONS},
    instructions={t: DALLEVAL_INSTRUCTIONS for t in ("attribute", "gender_single", "skin_tone")},
    qualification_question=qualification_question,
)
