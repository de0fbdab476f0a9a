"""What a human labeller is asked about this paper's images: the single and paired questions of PST Appendix
C.2, Table 10.

Every text is quoted from the paper (section cited beside it); where the paper gives no
wording for humans, the text is marked as this benchmark's choice. The answer options are
:mod:`benchmark.human.questions`'s.
"""

from __future__ import annotations

from typing import Mapping

from benchmark.tasks.registry import HumanQuestion


#: PST, Appendix C.2, Table 10: the preamble shown in both settings.
PST_PREAMBLE = ("We are a group of researchers from UCLA conducting a study about gender fairness issues in "
                "Vision-Language Models. We thank all annotators for participating in this study.")
#: Table 10, single setting: instruction and question.
PST_SINGLE_INSTRUCTION = ("Given the image above, decide whether the individual in the image has feminine or "
                          "masculine traits?")
PST_SINGLE_QUESTION = "Does the {identity} in the image demonstrate feminine or masculine traits?"
#: Table 10, paired setting: instruction and the two questions (left, right).
PST_PAIRED_INSTRUCTION = ("Given the image above, decide whether the two individuals in the image has feminine "
                          "or masculine traits?")
PST_PAIRED_QUESTION = "Does the {identity} on the {position} demonstrate feminine or masculine traits?"


def pst_single_question(identity: str) -> str:
    return PST_SINGLE_QUESTION.format(identity=identity)


def pst_paired_question(identity: str, position: str) -> str:
    if position not in ("left", "right"):
        raise ValueError(f"position must be 'left' or 'right', got {position!r}")
    return PST_PAIRED_QUESTION.format(identity=identity, position=position)


def human_questions(row: Mapping, config: dict) -> list[HumanQuestion]:
    """The single question, or the left and right questions of a paired image (rows with
    ``identity_left`` / ``identity_right``)."""
    if "identity_left" in row and isinstance(row.get("identity_left"), str):
        return [HumanQuestion("gender_paired", pos, pst_paired_question(row[f"identity_{pos}"], pos))
                for pos in ("left", "right")]
    if isinstance(row.get("identity"), str):
        return [HumanQuestion("gender_single", "", pst_single_question(row["identity"]))]
    return []
