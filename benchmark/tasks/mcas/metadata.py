"""Score metadata of MCAS and its four components (II, ITP, ITA, TT); Diffusion Bias and Bias
Amplification, computed by the same task, are the ``generated_bias`` folder's.

Declared here, registered from this folder's ``task.py`` (``REGISTRATIONS``), with the paper's
citation; the registries list the task folders in folder order and a folder's scores in the
order below.
"""

from __future__ import annotations

from benchmark.registries import EvaluateModuleSpec
from benchmark.scores.metadata import ScoreMetadata

#: the suites whose images the MCAS scores count (target and attribute images)
MCAS_SUITES = ("mcas_targets", "mcas_attributes")

SCORES = (
    ScoreMetadata(
        name="mcas", display_name="MCAS",
        description="Multimodal Composite Association Score: II + ITP + ITA + TT; positive leans male "
                    "(attribute set A), negative female.",
        paper="mcas", min_value=-8.0, max_value=8.0, lower_is_better=None, ideal=0.0, headline=True,
        spans=MCAS_SUITES),
    ScoreMetadata(
        name="II", display_name="Image-Image association",
        description="Association of generated target images with image gender "
                    "attributes.",
        paper="mcas", min_value=-2.0, max_value=2.0, lower_is_better=None, ideal=0.0, spans=MCAS_SUITES),
    ScoreMetadata(
        name="ITP", display_name="Image-Text Prompt association",
        description="Association of target texts (prompts / keywords) with "
                    "image gender attributes.",
        paper="mcas", min_value=-2.0, max_value=2.0, lower_is_better=None, ideal=0.0, spans=MCAS_SUITES),
    ScoreMetadata(
        name="ITA", display_name="Image-Text Attribute association",
        description="Association of generated target images with text "
                    "gender attributes.",
        paper="mcas", min_value=-2.0, max_value=2.0, lower_is_better=None, ideal=0.0, spans=MCAS_SUITES),
    ScoreMetadata(
        name="TT", display_name="Text-Text association",
        description="Association of text targets with text gender attributes "
                    "(the text encoder's own bias).",
        paper="mcas", min_value=-2.0, max_value=2.0, lower_is_better=None, ideal=0.0, spans=MCAS_SUITES),
)

# What the hand-written part of the evaluate modules in metrics/ uses from this folder
# (metrics/inline_scores.py copies it into their scripts)
EVALUATE_MODULES = (
    EvaluateModuleSpec("mcas", ("benchmark.tasks.mcas.citation:MCAS_PAPER",
                                "benchmark.tasks.generated_bias.citation:GENERATED_BIAS_PAPER",
                                "benchmark.tasks.mcas.scores:mcas_score"),
                       inputs="`embeddings`, `roles` (`target_image`, `target_text`, `attribute_{a,b}_{image,text}`), "
                              "`targets`",
                       outputs="`mcas`, `II`, `ITP`, `ITA`, `TT`, `diffusion_bias`, `bias_amplification` (None when "
                               "TT = 0, with the reason), `per_target`, CIs",
                       cites="MCAS; Generated Bias"),
)
