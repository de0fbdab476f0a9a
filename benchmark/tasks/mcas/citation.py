"""The citation of MCAS (Mandal et al., 2023).

Only the :class:`~benchmark.papers.Paper` (the ``metadata`` module of this folder registers
it): ``metrics/inline_scores.py`` copies it into the evaluate modules that cite the paper.
"""

from __future__ import annotations

from benchmark.papers import Paper

MCAS_PAPER = Paper(
    key="mcas",
    label="MCAS",
    title="Multimodal Composite Association Score: Measuring Gender Bias in Generative Multimodal Models",
    authors="Abhishek Mandal, Susan Leavy, Suzanne Little",
    venue="BIAS @ ECML-PKDD 2023",
    url="https://arxiv.org/abs/2304.13855",
    prompt_source="the appendices of MCAS and Generated Bias",
    bibtex="""@inproceedings{mandal2023mcas,
  title     = {Multimodal Composite Association Score: Measuring Gender Bias in Generative Multimodal Models},
  author    = {Mandal, Abhishek and Leavy, Susan and Little, Suzanne},
  booktitle = {Advances in Bias and Fairness in Information Retrieval (BIAS 2023)},
  year      = {2023},
  eprint    = {2304.13855},
  archivePrefix = {arXiv}
}""",
)
