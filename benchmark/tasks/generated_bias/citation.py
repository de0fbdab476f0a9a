"""The citation of Generated Bias (Mandal et al., 2024). Its key is ``diffusion_bias`` (the name
of its headline score), as results.json and the leaderboard record it in each score's
``paper``; its short name is "Diffusion Bias".

Only the :class:`~benchmark.papers.Paper` (the ``metadata`` module of this folder registers
it): ``metrics/inline_scores.py`` copies it into the evaluate modules that cite the paper.
"""

from __future__ import annotations

from benchmark.papers import Paper

GENERATED_BIAS_PAPER = Paper(
    key="diffusion_bias",
    label="Diffusion Bias",
    title="Generated Bias: Auditing Internal Bias Dynamics of Text-To-Image Generative Models",
    authors="Abhishek Mandal, Susan Leavy, Suzanne Little",
    venue="arXiv 2024",
    url="https://arxiv.org/abs/2410.07884",
    bibtex="""@article{mandal2024generatedbias,
  title   = {Generated Bias: Auditing Internal Bias Dynamics of Text-To-Image Generative Models},
  author  = {Mandal, Abhishek and Leavy, Susan and Little, Suzanne},
  journal = {arXiv preprint arXiv:2410.07884},
  year    = {2024}
}""",
)
