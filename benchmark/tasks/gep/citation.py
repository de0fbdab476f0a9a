"""The citation of GEP (Zhang et al., EAAMO 2024).

Only the :class:`~benchmark.papers.Paper` (the ``metadata`` module of this folder registers
it): ``metrics/inline_scores.py`` copies it into the evaluate modules that cite the paper.
"""

from __future__ import annotations

from benchmark.papers import Paper

GEP_PAPER = Paper(
    key="gep",
    label="GEP",
    title="Auditing Gender Presentation Differences in Text-to-Image Models",
    authors="Yanzhe Zhang, Lu Jiang, Greg Turk, Diyi Yang",
    venue="EAAMO 2024",
    url="https://arxiv.org/abs/2302.03675",
    prompt_source="SALT-NLP/GEP_data, MIT",
    bibtex="""@inproceedings{zhang2024gep,
  title     = {Auditing Gender Presentation Differences in Text-to-Image Models},
  author    = {Zhang, Yanzhe and Jiang, Lu and Turk, Greg and Yang, Diyi},
  booktitle = {Proceedings of the 4th ACM Conference on Equity and Access in Algorithms, Mechanisms, and Optimization (EAAMO)},
  year      = {2024},
  eprint    = {2302.03675},
  archivePrefix = {arXiv}
}""",
)
