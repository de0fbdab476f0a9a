"""Score metadata of PaintSkills (DALL-Eval's visual reasoning skills): object, count and
spatial accuracy, their average and the first-task shares of Fig. 5b. The ``dalleval``
folder cites the paper.

Declared here, registered from this folder's ``task.py`` (``REGISTRATIONS``); the registry lists
the task folders in folder order and a folder's scores in the order below.
"""

from __future__ import annotations

from benchmark.registries import EvaluateModuleSpec
from benchmark.scores.metadata import ScoreMetadata

SCORES = (
    ScoreMetadata(
        name="paintskills_object", display_name="PaintSkills object",
        description="Object recognition accuracy (DALL-Eval Sec. 4.1): the "
                    "detector's most confident query is the prompt's class above a 0.7 class probability.",
        paper="dalleval", min_value=0.0, max_value=100.0, lower_is_better=False, ideal=100.0, unit="%",
        headline=True, column_group="PaintSkills"),
    ScoreMetadata(
        name="paintskills_count", display_name="PaintSkills count",
        description="Object counting accuracy: the detections above a 0.7 "
                    "class probability hold exactly the prompt's N objects of its class (overall; subset 'N = k' per "
                    "count, Fig. 5a).",
        paper="dalleval", min_value=0.0, max_value=100.0, lower_is_better=False, ideal=100.0, unit="%",
        headline=True, column_group="PaintSkills"),
    ScoreMetadata(
        name="paintskills_spatial", display_name="PaintSkills spatial",
        description="Spatial relation accuracy: the two most confident "
                    "detections are the prompt's two classes and their box centres give its relation (overall; subset "
                    "'relation: r' per relation, Fig. 5a).",
        paper="dalleval", min_value=0.0, max_value=100.0, lower_is_better=False, ideal=100.0, unit="%",
        headline=True, column_group="PaintSkills"),
    ScoreMetadata(
        name="paintskills_average", display_name="PaintSkills average",
        description="Mean of the object, count and spatial accuracies "
                    "(Table 2, Avg.).",
        paper="dalleval", min_value=0.0, max_value=100.0, lower_is_better=False, ideal=100.0, unit="%",
        spans=("paintskills_object", "paintskills_count", "paintskills_spatial"), column_group="PaintSkills"),
    ScoreMetadata(
        name="paintskills_count_number", display_name="PaintSkills count: number right",
        description="Share of count images with as many "
                    "detections above the threshold as the prompt's N, whatever their class (Fig. 5b, first task).",
        paper="dalleval", min_value=0.0, max_value=100.0, lower_is_better=False, ideal=100.0, unit="%",
        column_group="PaintSkills"),
    ScoreMetadata(
        name="paintskills_spatial_objects", display_name="PaintSkills spatial: objects right",
        description="Share of spatial images whose "
                    "two most confident detections are the prompt's two classes, whatever the relation (Fig. 5b, "
                    "first task).",
        paper="dalleval", min_value=0.0, max_value=100.0, lower_is_better=False, ideal=100.0, unit="%",
        column_group="PaintSkills"),
)

# What the hand-written part of the evaluate modules in metrics/ uses from this folder
# (metrics/inline_scores.py copies it into their scripts)
EVALUATE_MODULES = (
    EvaluateModuleSpec("paintskills_accuracy",
                       ("benchmark.tasks.dalleval.citation:DALLEVAL_PAPER", "benchmark.models.detector:Detections",
                        "benchmark.tasks.paintskills.scores:DEFAULT_THRESHOLD",
                        "benchmark.tasks.paintskills.scores:SKILLS", "benchmark.tasks.paintskills.scores:evaluate_skill"),
                       imports=("import datasets", "import evaluate", "import numpy as np"),
                       inputs="`predictions` (per image: detector query `scores`, `labels`, `boxes`, optional "
                              "`target_scores`), `references` (`target`, `count` or `relation` + `target_b`)",
                       keywords="`skill` (object / count / spatial), `threshold=0.7`, `n_resamples`",
                       outputs="`accuracy` in [0, 100] with CI, per count N / relation, per-image correctness",
                       cites="DALL-Eval Sec. 4.1"),
)
