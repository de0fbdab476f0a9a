"""Score metadata of GEP: the GEP score of neutral, explicit and occupation prompts.

Declared here, registered from this folder's ``task.py`` (``REGISTRATIONS``), with the paper's
citation; the registries list the task folders in folder order and a folder's scores in the
order below.
"""

from __future__ import annotations

from benchmark.registries import EvaluateModuleSpec
from benchmark.scores.metadata import ScoreMetadata

SCORES = (
    ScoreMetadata(
        name="gep_score_neutral", display_name="GEP (neutral)",
        description="Mean absolute difference between women and men in the "
                    "frequency of 15 presentation attributes, prompts without attributes.",
        paper="gep", min_value=0.0, max_value=1.0, lower_is_better=True, ideal=0.0, headline=True,
        absolute_value=True),
    ScoreMetadata(
        name="gep_score_explicit", display_name="GEP (explicit)",
        description="Mean absolute difference between women and men in the "
                    "frequency of each attribute when the prompt asks for it.",
        paper="gep", min_value=0.0, max_value=1.0, lower_is_better=True, ideal=0.0, headline=True,
        absolute_value=True),
    ScoreMetadata(
        name="gep_score_occupation", display_name="GEP (occupation)",
        description="Mean absolute difference between female and male "
                    "variants of an occupation prompt in the frequency of its attributes (GEP Sec. 7).",
        paper="gep", min_value=0.0, max_value=1.0, lower_is_better=True, ideal=0.0, absolute_value=True),
)

# What the hand-written part of the evaluate modules in metrics/ uses from this folder
# (metrics/inline_scores.py copies it into their scripts)
EVALUATE_MODULES = (
    EvaluateModuleSpec("gep", ("benchmark.tasks.gep.citation:GEP_PAPER", "benchmark.tasks.gep.scores:gep"),
                       inputs="`predictions` (attribute present in the image: 0/1 or a probability), `groups`, "
                              "`attributes`",
                       keywords='`group_a="woman"`, `group_b="man"`, `image_ids`',
                       outputs="`gep_score` in [0, 1], `gep_vector` (attribute -> f_a - f_b), `frequencies`, "
                               "`gep_score_ci`",
                       cites="GEP Eq. 1-2"),
    # the human-agreement module cites the papers whose human validation it scores (this one and PST)
    EvaluateModuleSpec("human_agreement", ("benchmark.tasks.gep.citation:GEP_PAPER",
                                           "benchmark.scores.agreement:binary_agreement",
                                           "benchmark.scores.agreement:vector_agreement"),
                       inputs="`predictions` (automatic), `references` (human)",
                       keywords='`task="binary"` or `"vector"`, `groups`',
                       outputs="ROC-AUC (per group), Cohen's kappa, MCC, accuracy; or Kendall tau-b, MCC on signs, "
                               "Pearson",
                       cites="GEP Sec. 5-6, App. D"),
)
