"""The citation of DALL-Eval (Cho et al., ICCV 2023): the social-bias part and PaintSkills.

Only the :class:`~benchmark.papers.Paper` (the ``metadata`` module of this folder registers
it): ``metrics/inline_scores.py`` copies it into the evaluate modules that cite the paper.
"""

from __future__ import annotations

from benchmark.papers import Paper

DALLEVAL_PAPER = Paper(
    key="dalleval",
    label="DALL-Eval",
    title="DALL-Eval: Probing the Reasoning Skills and Social Biases of Text-to-Image Generation Models",
    authors="Jaemin Cho, Abhay Zala, Mohit Bansal",
    venue="ICCV 2023",
    url="https://arxiv.org/abs/2202.04053",
    prompt_source="j-min/DallEval, MIT",
    bibtex="""@inproceedings{cho2023dalleval,
  title     = {DALL-Eval: Probing the Reasoning Skills and Social Biases of Text-to-Image Generation Models},
  author    = {Cho, Jaemin and Zala, Abhay and Bansal, Mohit},
  booktitle = {Proceedings of the IEEE/CVF International Conference on Computer Vision (ICCV)},
  year      = {2023}
}""",
)
