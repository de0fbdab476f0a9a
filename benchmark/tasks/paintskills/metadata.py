"""Score metadata of PaintSkills (DALL-Eval's visual reasoning skills): object, count and
spatial accuracy, their average and the first-task shares of Fig. 5b. The ``dalleval``
folder cites the paper.

Registered in :data:`benchmark.scores.metadata.SCORE_METADATA` when this folder is imported;
the registry lists the task folders in folder order and a folder's scores in the order below.
"""

from __future__ import annotations

from benchmark.scores.metadata import ScoreMetadata, register_score

SCORES = (
    ScoreMetadata("paintskills_object", "PaintSkills object", "Object recognition accuracy (DALL-Eval Sec. 4.1): the "
                  "detector's most confident query is the prompt's class above a 0.7 class probability.", "dalleval",
                  0.0, 100.0, False, 100.0, unit="%", headline=True,
                  column_group="PaintSkills"),
    ScoreMetadata("paintskills_count", "PaintSkills count", "Object counting accuracy: the detections above a 0.7 "
                  "class probability hold exactly the prompt's N objects of its class (overall; subset 'N = k' per "
                  "count, Fig. 5a).", "dalleval", 0.0, 100.0, False, 100.0, unit="%", headline=True,
                  column_group="PaintSkills"),
    ScoreMetadata("paintskills_spatial", "PaintSkills spatial", "Spatial relation accuracy: the two most confident "
                  "detections are the prompt's two classes and their box centres give its relation (overall; subset "
                  "'relation: r' per relation, Fig. 5a).", "dalleval", 0.0, 100.0, False, 100.0, unit="%",
                  headline=True, column_group="PaintSkills"),
    ScoreMetadata("paintskills_average", "PaintSkills average", "Mean of the object, count and spatial accuracies "
                  "(Table 2, Avg.).", "dalleval", 0.0, 100.0, False, 100.0, unit="%",
                  spans=("paintskills_object", "paintskills_count", "paintskills_spatial"), column_group="PaintSkills"),
    ScoreMetadata("paintskills_count_number", "PaintSkills count: number right", "Share of count images with as many "
                  "detections above the threshold as the prompt's N, whatever their class (Fig. 5b, first task).",
                  "dalleval", 0.0, 100.0, False, 100.0, unit="%", column_group="PaintSkills"),
    ScoreMetadata("paintskills_spatial_objects", "PaintSkills spatial: objects right", "Share of spatial images whose "
                  "two most confident detections are the prompt's two classes, whatever the relation (Fig. 5b, "
                  "first task).", "dalleval", 0.0, 100.0, False, 100.0, unit="%", column_group="PaintSkills"),
)

for _meta in SCORES:
    register_score(_meta)
