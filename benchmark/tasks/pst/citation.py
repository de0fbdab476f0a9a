"""The citation of PST (Wan and Chang, 2024).

Only the :class:`~benchmark.papers.Paper` (the ``metadata`` module of this folder registers
it): ``metrics/inline_scores.py`` copies it into the evaluate modules that cite the paper.
"""

from __future__ import annotations

from benchmark.papers import Paper

PST_PAPER = Paper(
    key="pst",
    label="PST",
    title="The Male CEO and the Female Assistant: Probing Gender Biases in Text-To-Image Models Through Paired Stereotype Test",
    authors="Yixin Wan, Kai-Wei Chang",
    venue="arXiv 2024",
    url="https://arxiv.org/abs/2402.11089",
    prompt_source="arXiv 2402.11089, CC0",
    bibtex="""@article{wan2024pst,
  title   = {The Male CEO and the Female Assistant: Probing Gender Biases in Text-To-Image Models Through Paired Stereotype Test},
  author  = {Wan, Yixin and Chang, Kai-Wei},
  journal = {arXiv preprint arXiv:2402.11089},
  year    = {2024}
}""",
)
