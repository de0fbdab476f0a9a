"""Score metadata of GEP: the GEP score of neutral, explicit and occupation prompts.

Registered in :data:`benchmark.scores.metadata.SCORE_METADATA`, and the paper's
citation in :data:`benchmark.papers.PAPERS`, when this folder is imported; the registries list
the task folders in folder order and a folder's scores in the order below.
"""

from __future__ import annotations

from benchmark.papers import register_paper
from benchmark.scores.metadata import ScoreMetadata, register_score
from benchmark.tasks.gep.citation import GEP_PAPER

SCORES = (
    ScoreMetadata("gep_score_neutral", "GEP (neutral)", "Mean absolute difference between women and men in the "
                  "frequency of 15 presentation attributes, prompts without attributes.", "gep", 0.0, 1.0, True,
                  0.0, headline=True, absolute_value=True),
    ScoreMetadata("gep_score_explicit", "GEP (explicit)", "Mean absolute difference between women and men in the "
                  "frequency of each attribute when the prompt asks for it.", "gep", 0.0, 1.0, True, 0.0,
                  headline=True, absolute_value=True),
    ScoreMetadata("gep_score_occupation", "GEP (occupation)", "Mean absolute difference between female and male "
                  "variants of an occupation prompt in the frequency of its attributes (GEP Sec. 7).", "gep",
                  0.0, 1.0, True, 0.0, absolute_value=True),
)

register_paper(GEP_PAPER)
for _meta in SCORES:
    register_score(_meta)
