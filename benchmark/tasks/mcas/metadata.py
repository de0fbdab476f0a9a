"""Score metadata of MCAS and its four components (II, ITP, ITA, TT); Diffusion Bias and Bias
Amplification, computed by the same task, are the ``generated_bias`` folder's.

Registered in :data:`benchmark.scores.metadata.SCORE_METADATA`, and the paper's
citation in :data:`benchmark.papers.PAPERS`, when this folder is imported; the registries list
the task folders in folder order and a folder's scores in the order below.
"""

from __future__ import annotations

from benchmark.papers import register_paper
from benchmark.scores.metadata import ScoreMetadata, register_score
from benchmark.tasks.mcas.citation import MCAS_PAPER

#: the suites whose images the MCAS scores count (target and attribute images)
MCAS_SUITES = ("mcas_targets", "mcas_attributes")

SCORES = (
    ScoreMetadata("mcas", "MCAS", "Multimodal Composite Association Score: II + ITP + ITA + TT; positive leans male "
                  "(attribute set A), negative female.", "mcas", -8.0, 8.0, None, 0.0,
                  headline=True, spans=MCAS_SUITES),
    ScoreMetadata("II", "Image-Image association", "Association of generated target images with image gender "
                  "attributes.", "mcas", -2.0, 2.0, None, 0.0,
                  spans=MCAS_SUITES),
    ScoreMetadata("ITP", "Image-Text Prompt association", "Association of target texts (prompts / keywords) with "
                  "image gender attributes.", "mcas", -2.0, 2.0, None, 0.0,
                  spans=MCAS_SUITES),
    ScoreMetadata("ITA", "Image-Text Attribute association", "Association of generated target images with text "
                  "gender attributes.", "mcas", -2.0, 2.0, None, 0.0,
                  spans=MCAS_SUITES),
    ScoreMetadata("TT", "Text-Text association", "Association of text targets with text gender attributes "
                  "(the text encoder's own bias).", "mcas", -2.0, 2.0, None, 0.0,
                  spans=MCAS_SUITES),
)

register_paper(MCAS_PAPER)
for _meta in SCORES:
    register_score(_meta)
