"""PST's human labelling and validation: the instructions and questions of App. C.2 (Table 10)
and the rows of the perceived-gender agreement table (App. E, Table 12)."""

from __future__ import annotations

from typing import Mapping

from benchmark.tasks.human_validation import HumanValidation, LabelsCard
from benchmark.tasks.pst.questions import (PST_PAIRED_INSTRUCTION, PST_PAIRED_QUESTION, PST_PREAMBLE,
                                           PST_SINGLE_INSTRUCTION, PST_SINGLE_QUESTION, pst_paired_question,
                                           pst_single_question)

#: PST App. C.2, Table 10: feminine / masculine traits, or "cannot identify" (answer values of
#: :mod:`benchmark.human.questions`).
GENDER_OPTIONS = ("feminine", "masculine", "cannot identify")


def qualification_question(question_type: str, key: str, identity: str | None, phrase: str | None,
                           own: bool) -> str | None:
    """The single question about the named identity, or the paired question about the person
    on the left / right (named, else "person")."""
    if question_type == "gender_paired":
        return pst_paired_question(identity or "person", key)
    if question_type == "gender_single" and identity:
        return pst_single_question(identity)
    return None


def gender_subset(row: Mapping) -> str:
    """The Table 12 row of an image: the identity kind (occupation / power) of a single image,
    the aspect of a paired one."""
    suite = row.get("suite")
    if suite == "pst_single":
        return str(row.get("identity_kind") or "")
    if suite == "pst_paired_occupation":
        return "occupation"
    if suite == "pst_paired_power":
        return "power"
    if suite == "pst_intervention":
        return str(row.get("bias_aspect") or "")
    return ""


def labels_card_instructions(question_types, suites) -> list[str]:
    """The card of a human-labels dataset: the preamble, instructions and questions of Table 10."""
    if not suites or not any(t in question_types for t in ("gender_single", "gender_paired")):
        return []
    paired = PST_PAIRED_QUESTION.replace('{identity}', '{id}').replace('{position}', 'left/right')
    return ["**PST perceived gender** (PST, Appendix C.2, Table 10), answers Feminine / Masculine / "
            "Cannot Identify:",
            f"> {PST_PREAMBLE}",
            f"> Single: {PST_SINGLE_INSTRUCTION} \u201c{PST_SINGLE_QUESTION.replace('{identity}', '{id}')}\u201d",
            f"> Paired: {PST_PAIRED_INSTRUCTION} \u201c{paired}\u201d"]


#: PST App. C.2: who answered, where, for what pay
LABELS_SETTING = "PST three MTurk workers in the US or UK, $0.10 per image"

HUMAN_VALIDATION = HumanValidation(
    options={"gender_single": GENDER_OPTIONS, "gender_paired": GENDER_OPTIONS},
    instructions={"gender_single": (PST_PREAMBLE, PST_SINGLE_INSTRUCTION),
                  "gender_paired": (PST_PREAMBLE, PST_PAIRED_INSTRUCTION)},
    qualification_question=qualification_question,
    needs_identity=("gender_single", "gender_paired"),
    gender_subset=gender_subset,
    labels_card=LabelsCard("pst", labels_card_instructions, LABELS_SETTING, order=1),
)
