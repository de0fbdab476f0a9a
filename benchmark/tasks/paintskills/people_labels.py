"""People's answers to the PaintSkills questions (:mod:`.questions`) as ``labels/detections.parquet``
rows, so that the task's scorer, unchanged, scores what people saw (``t2ibench score`` corrects the
PaintSkills accuracies with them, docs/human_correction.md).

The scorer reads detections through the released evaluator's rules
(:mod:`benchmark.tasks.paintskills.scores`); an image's row here is what a detector that sees what
people see would report, built so that each rule gives people's answer, as the oracle detector
(:mod:`benchmark.tasks.paintskills.detector.ground_truth`) gives the rendered scene's: every query is
one object with class probability 1 (above any threshold the config may set), in a fixed order.

* object: one query, the target class if people see the target, else :data:`OTHER`;
* count (people's "exactly N of the target" = ``right``, "exactly N objects" = ``number``):
  N target queries (both yes); N targets and one other object (right, not the number); N - 1
  targets and one other (the number, not right); N + 1 other objects (neither);
* spatial: the two objects (people see both) or two other objects; the second object's box is
  placed in the prompt's relation to the first when people answer yes to it, else on the other
  axis (never right, even under the rule's axis-only check of one class twice).

:func:`judged` reads any detection row (the detector's or people's) through the same rule, so the
annotator's errors are counted image by image (results.json ``human_labels.annotator_errors``).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from benchmark.models.detector import Detections
from benchmark.tasks.paintskills import probes as ps_probes
from benchmark.tasks.paintskills.questions import KEYS, NUMBER, OBJECTS, QUESTION_TYPE, RIGHT
from benchmark.tasks.paintskills.scores import image_outcome

__all__ = ["OTHER", "RIGHT_LABEL", "WRONG_LABEL", "people_detections", "answers_as_detections", "judged"]

#: the class of an object people see that is none of the prompt's
OTHER = "(another object)"
#: how :func:`judged` names an image the skill's rule accepts / rejects
RIGHT_LABEL, WRONG_LABEL = "right", "wrong"
#: where the second object sits relative to the first (box centres, fractions of the image, y
#: downwards) for "<second> is <relation> <first>" (the rule's reading, ``relation_of``)
_OFFSET = {"left": (-0.25, 0.0), "right": (0.25, 0.0), "above": (0.0, -0.25), "below": (0.0, 0.25)}
#: a relation on the other axis: what people's "no" to the relation question becomes
_ACROSS = {"left": "above", "right": "above", "above": "left", "below": "left"}


def _detections(labels: list[str], centres: list[tuple[float, float]]) -> Detections:
    """One query per object, probability 1 for its class, a small box at its centre."""
    classes = tuple(dict.fromkeys(labels))
    probs = np.zeros((len(labels), len(classes)), dtype=np.float32)
    for q, name in enumerate(labels):
        probs[q, classes.index(name)] = 1.0
    boxes = np.asarray([[x, y, 0.1, 0.1] for x, y in centres], dtype=np.float32).reshape(-1, 4)
    return Detections(np.ones(len(labels), dtype=np.float32), tuple(labels), boxes, probs, classes or None)


def _count_labels(target: str, n: int, right: bool, number: bool) -> list[str]:
    if right and number:
        return [target] * n
    if right:
        return [target] * n + [OTHER]
    if number:
        return [target] * (n - 1) + [OTHER]
    return [OTHER] * (n + 1)


def people_detections(row: Mapping, said: Mapping[str, bool]) -> Detections:
    """The detections whose rule outcome is people's answers ``said`` (question key -> yes) about the
    image of probe ``row`` (its ``skill`` and ground truth). ValueError when an answer is missing."""
    skill = str(row.get("skill"))
    missing = [k for k in KEYS.get(skill, ()) if k not in said]
    if skill not in KEYS or missing:
        raise ValueError(f"probe {row.get('probe_id')!r} ({skill}): no answer to {missing or 'its questions'}")
    truth = ps_probes.truth_of(row)
    target = str(truth["target"])
    if skill == "object":
        return _detections([target if said[RIGHT] else OTHER], [(0.5, 0.5)])
    if skill == "count":
        labels = _count_labels(target, int(truth["count"]), bool(said[RIGHT]), bool(said[NUMBER]))
        return _detections(labels, [(0.1 + 0.8 * i / len(labels), 0.5) for i in range(len(labels))])
    relation = str(truth["relation"])
    both = bool(said[OBJECTS])
    dx, dy = _OFFSET[relation if both and said[RIGHT] else _ACROSS[relation]]
    labels = [target, str(truth["target_b"])] if both else [OTHER, OTHER]
    return _detections(labels, [(0.5, 0.5), (0.5 + dx, 0.5 + dy)])


def answers_as_detections(answers: pd.DataFrame, probes: pd.DataFrame) -> pd.DataFrame:
    """``labels/detections.parquet``'s value columns (``probe_id`` + :meth:`Detections.to_record`) of
    each image whose every question of its skill has a majority answer. ``answers``: the majority
    answers (``probe_id``, ``question_type``, ``question_key``, ``majority``), ties left out;
    ``probes``: the run's manifest rows (``probe_id`` and the probe fields)."""
    ours = answers[answers["question_type"] == QUESTION_TYPE]
    said: dict[str, dict[str, bool]] = {}
    for pid, key, majority in zip(ours["probe_id"].astype(str), ours["question_key"].fillna(""), ours["majority"]):
        said.setdefault(pid, {})[str(key)] = str(majority) == "yes"
    rows = probes.set_index(probes["probe_id"].astype(str))
    out = []
    for pid, given in said.items():
        if pid not in rows.index:
            continue
        row = rows.loc[pid].to_dict()
        if all(k in given for k in KEYS.get(str(row.get("skill")), ("?",))):
            out.append({"probe_id": pid, **people_detections(row, given).to_record()})
    columns = ["probe_id", *Detections(np.zeros(0), (), np.zeros((0, 4))).to_record()]
    return pd.DataFrame(out, columns=columns)


def judged(rows: pd.DataFrame, config: dict) -> pd.Series:
    """Each detection row (joined with its probe fields) judged by its skill's rule, with the
    config's thresholds: :data:`RIGHT_LABEL` or :data:`WRONG_LABEL`."""
    threshold, object_threshold = ps_probes.threshold(config), ps_probes.object_threshold(config)

    def one(r: Mapping) -> str:
        out = image_outcome(str(r["skill"]), Detections.from_record(r), ps_probes.truth_of(r), threshold=threshold,
                            object_threshold=object_threshold)
        return RIGHT_LABEL if out["correct"] else WRONG_LABEL

    return pd.Series([one(r) for r in rows.to_dict("records")], index=rows.index, dtype=object)
