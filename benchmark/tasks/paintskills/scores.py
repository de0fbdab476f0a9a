"""PaintSkills skill accuracy (DALL-Eval: Cho, Zala, Bansal, "DALL-Eval", Sec. 4.1, Table 2,
Fig. 5), as the authors' released evaluator computes it (j-min/DallEval,
``paintskills/detr/datasets/skill_eval.py``: ``eval_object``, ``eval_count``,
``eval_spatial``).

A detector gives, for every query q of an image, the probability of every class with the
"no object" class left out (DETR's ``softmax(logits)[..., :-1]``). The rules read:

* ``scores[q]``: the highest class probability of query q, ``labels[q]``: that class;
* ``target_probs[q]``: the probability of the target class for query q (count only);
* ``boxes[q]``: centre x, centre y, width, height as fractions of the image, y downwards.

Rules (``threshold`` = ``p_threshold``, 0.7 by default in the release's
``evaluate_skill.py``; the paper prints no value):

* object: the single most confident (query, class) pair must be the target class, with
  probability above the threshold (the paper's formula: ``o_Det = o_GT and p_Det > p_th``;
  the released ``eval_object`` has the threshold line commented out:
  ``apply_threshold=False`` reproduces that).
* count: N_pred = number of queries whose top probability exceeds the threshold; take the
  N_pred queries most probable for the target class; correct when exactly N_GT of them
  have the target as their top class. (So N_pred < N_GT is always wrong; N_pred > N_GT is
  right only when the extra queries are of other classes, as in the release.) "Number
  right" (N_pred == N_GT, Fig. 5b's first task) is reported beside it.
* spatial: the two most confident queries C, D (by top probability, no threshold) must
  have the classes of objA and objB in either order; the relation is read from their box
  centres: horizontal when |dx| > |dy|, else vertical, and "<objB> is <rel> <objA>" in
  image coordinates. When objA and objB are of one class the release only checks the
  axis (left/right vs above/below), since it cannot tell the objects apart; that rule is
  kept.

Ties (a ground-truth "detector" gives every object probability 1) are broken by query
order (stable sort), where the release used ``torch.topk`` (order of ties unspecified).

Accuracies are percentages (0-100, as Table 2), with percentile bootstrap intervals over
images (:func:`benchmark.scores.bootstrap.bootstrap_ci`), overall and per split (count N,
spatial relation).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from benchmark.scores.bootstrap import bootstrap_ci

SKILLS = ("object", "count", "spatial")
RELATIONS = ("left", "right", "above", "below")
#: ``--p_threshold`` default of the release's ``paintskills/detr/evaluate_skill.py``
DEFAULT_THRESHOLD = 0.7
_AXIS = {"left": "horizontal", "right": "horizontal", "above": "vertical", "below": "vertical"}
_INVERSE = {"left": "right", "right": "left", "above": "below", "below": "above"}


# --------------------------------------------------------------------------- inputs


def _queries(scores: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    lab = np.asarray([str(v) for v in labels], dtype=object)
    if s.shape != lab.shape:
        raise ValueError(f"scores has {s.size} queries but labels has {lab.size}")
    if s.size and (not np.all(np.isfinite(s)) or s.min() < 0 or s.max() > 1):
        raise ValueError("scores must be class probabilities in [0, 1]")
    return s, lab


def _check_threshold(threshold: float) -> float:
    t = float(threshold)
    if not 0.0 <= t < 1.0:
        raise ValueError(f"threshold must lie in [0, 1), got {threshold}")
    return t


def ranked(values: np.ndarray) -> np.ndarray:
    """Query indices by decreasing value, ties in query order (a stable sort)."""
    return np.argsort(-np.asarray(values, dtype=np.float64), kind="stable")


# --------------------------------------------------------------------------- rules


def object_correct(scores: Any, labels: Any, target: str, *, threshold: float = DEFAULT_THRESHOLD,
                   apply_threshold: bool = True) -> bool:
    """Object rule: the most confident query's top class is ``target`` (above ``threshold``)."""
    s, lab = _queries(scores, labels)
    t = _check_threshold(threshold)
    if s.size == 0:
        return False
    top = int(ranked(s)[0])
    return bool(lab[top] == str(target) and (not apply_threshold or s[top] > t))


@dataclass(frozen=True)
class CountOutcome:
    correct: bool
    n_detected: int      # queries above the threshold (N_pred)
    count_right: bool    # N_pred == N_GT (Fig. 5b, first task)


def count_outcome(scores: Any, labels: Any, target_probs: Any, target: str, count: int, *,
                  threshold: float = DEFAULT_THRESHOLD) -> CountOutcome:
    """Count rule of the release's ``eval_count`` (see the module docstring)."""
    s, lab = _queries(scores, labels)
    t = _check_threshold(threshold)
    p = np.asarray(target_probs, dtype=np.float64).reshape(-1)
    if p.shape != s.shape:
        raise ValueError(f"target_probs has {p.size} queries but scores has {s.size}")
    n = int(count)
    if n < 1:
        raise ValueError(f"count must be >= 1, got {count!r}")
    n_pred = int(np.sum(s > t))
    top = ranked(p)[:n_pred]
    n_target = int(np.sum(lab[top] == str(target)))
    return CountOutcome(correct=n_target == n, n_detected=n_pred, count_right=n_pred == n)


def relation_of(centre_a: Sequence[float], centre_b: Sequence[float]) -> str:
    """``rel`` in "B is <rel> A" from two box centres (x right, y down): the release's rule."""
    dx = float(centre_a[0]) - float(centre_b[0])
    dy = float(centre_a[1]) - float(centre_b[1])
    if abs(dx) > abs(dy):
        return "right" if dx < 0 else "left"
    return "above" if dy > 0 else "below"


@dataclass(frozen=True)
class SpatialOutcome:
    correct: bool
    objects_correct: bool          # both classes found by the top-2 queries (Fig. 5b, first task)
    predicted_relation: str | None  # relation read from the boxes, None when the classes are wrong


def spatial_outcome(scores: Any, labels: Any, boxes: Any, target_a: str, target_b: str,
                    relation: str) -> SpatialOutcome:
    """Spatial rule of the release's ``eval_spatial`` (see the module docstring)."""
    s, lab = _queries(scores, labels)
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4) if s.size else np.zeros((0, 4))
    if b.shape[0] != s.size:
        raise ValueError(f"boxes has {b.shape[0]} queries but scores has {s.size}")
    if s.size < 2:
        return SpatialOutcome(False, False, None)
    c, d = (int(i) for i in ranked(s)[:2])
    a, bb = str(target_a), str(target_b)
    if a == bb:
        if lab[c] == a and lab[d] == a:
            pred = relation_of(b[c, :2], b[d, :2])
            # one class twice: only the axis can be checked
            return SpatialOutcome(_AXIS[pred] == _AXIS[relation], True, pred)
        return SpatialOutcome(False, False, None)
    if (lab[c], lab[d]) == (a, bb):
        pred = relation_of(b[c, :2], b[d, :2])
    elif (lab[c], lab[d]) == (bb, a):
        pred = relation_of(b[d, :2], b[c, :2])
    else:
        return SpatialOutcome(False, False, None)
    return SpatialOutcome(pred == relation, True, pred)


# --------------------------------------------------------------------------- per image


def image_outcome(skill: str, detection: Any, truth: Mapping, *, threshold: float = DEFAULT_THRESHOLD,
                  object_threshold: bool = True) -> dict:
    """One image's outcome under the rule of ``skill``.

    ``detection`` has ``scores``, ``labels``, ``boxes`` and ``prob_of(name)`` (the per-query
    probability of a class; :class:`benchmark.models.detector.Detections`). ``truth`` has
    ``target`` and, per skill, ``count`` or ``relation`` + ``target_b``. Returns a dict with
    ``correct`` and the skill's sub-results (``n_detected``, ``count_right``;
    ``objects_correct``, ``predicted_relation``; ``predicted``).
    """
    if skill not in SKILLS:
        raise ValueError(f"unknown skill {skill!r}; choose from {', '.join(SKILLS)}")
    target = truth.get("target")
    if not isinstance(target, str) or not target:
        raise ValueError(f"ground truth lacks a target class: {dict(truth)!r}")
    if skill == "object":
        ok = object_correct(detection.scores, detection.labels, target, threshold=threshold,
                            apply_threshold=object_threshold)
        top = int(ranked(detection.scores)[0]) if len(detection.scores) else None
        return {"correct": ok, "predicted": None if top is None else str(detection.labels[top]),
                "confidence": None if top is None else float(detection.scores[top])}
    if skill == "count":
        out = count_outcome(detection.scores, detection.labels, detection.prob_of(target), target,
                            int(truth["count"]), threshold=threshold)
        return {"correct": out.correct, "n_detected": out.n_detected, "count_right": out.count_right}
    out = spatial_outcome(detection.scores, detection.labels, detection.boxes, target, str(truth["target_b"]),
                          str(truth["relation"]))
    return {"correct": out.correct, "objects_correct": out.objects_correct,
            "predicted_relation": out.predicted_relation}


# --------------------------------------------------------------------------- accuracy


def _ci(values: np.ndarray, strata: np.ndarray | None, confidence_level: float, n_resamples: int,
        random_state: int, keys: Any = None) -> dict | None:
    if not n_resamples or values.size == 0:
        return None
    ci = bootstrap_ci(lambda idx: 100.0 * float(np.mean(values[idx])), values.size, strata=strata,
                      confidence_level=confidence_level, n_resamples=n_resamples, random_state=random_state,
                      keys=keys)
    return ci.to_dict()


def skill_accuracy(correct: Any, splits: Any = None, *, confidence_level: float = 0.95, n_resamples: int = 1000,
                   random_state: int = 0, keys: Any = None) -> dict:
    """Accuracy in percent over images, overall and per split, with bootstrap intervals.

    ``correct``: one bool (or 0/1) per image. ``splits`` (optional): one label per image
    (count N, spatial relation); the overall interval then resamples within each split
    (each keeps its size; under a paired ``ResamplePlan`` its size varies, never to 0), and
    each split gets its own interval.
    Returns ``accuracy``, ``accuracy_ci``, ``n_images``, ``n_correct``, ``per_split``
    (split -> {accuracy, accuracy_ci, n_images, n_correct}; ``{}`` without splits). ``keys``
    (the probe of each image) serve paired resampling across runs
    (:func:`benchmark.scores.bootstrap.resample_plan`) and change nothing outside a plan.
    """
    c = np.asarray(correct)
    if c.ndim != 1 or c.size == 0:
        raise ValueError("correct must be a non-empty flat list of booleans")
    if not np.all(np.isin(c.astype(object), [True, False, 0, 1])):
        raise ValueError("correct must hold booleans (or 0/1)")
    c = c.astype(bool).astype(np.float64)
    kw = {"confidence_level": confidence_level, "n_resamples": n_resamples, "random_state": random_state}
    per_split: dict[str, dict] = {}
    strata = None
    if splits is not None:
        sp = np.asarray([str(v) for v in splits], dtype=object)
        if sp.size != c.size:
            raise ValueError(f"splits has {sp.size} labels for {c.size} images")
        strata = sp
        for name in sorted(set(sp), key=_split_key):
            v = c[sp == name]
            split_keys = None if keys is None else np.asarray(list(keys), dtype=object)[sp == name]
            per_split[name] = {"accuracy": 100.0 * float(v.mean()),
                               "accuracy_ci": _ci(v, None, **kw, keys=split_keys),
                               "n_images": int(v.size), "n_correct": int(v.sum())}
    return {"accuracy": 100.0 * float(c.mean()), "accuracy_ci": _ci(c, strata, **kw, keys=keys), "n_images": int(c.size),
            "n_correct": int(c.sum()), "per_split": per_split}


def _split_key(name: str) -> tuple:
    order = {r: i for i, r in enumerate(RELATIONS)}
    return (0, int(name), "") if name.isdigit() else (1, order.get(name, 99), name)


def evaluate_skill(skill: str, detections: Sequence[Any], truths: Sequence[Mapping], *,
                   threshold: float = DEFAULT_THRESHOLD, object_threshold: bool = True,
                   confidence_level: float = 0.95, n_resamples: int = 1000, random_state: int = 0,
                   keys: Any = None) -> dict:
    """Accuracy of one skill over images: :func:`image_outcome` per image, then
    :func:`skill_accuracy` overall and per split (count N, spatial relation).

    Returns the :func:`skill_accuracy` dict plus ``skill``, ``threshold``, ``outcomes`` (one
    dict per image) and the first task of Fig. 5b: ``count_right_accuracy`` (N_pred = N,
    count) or ``objects_accuracy`` (both classes found, spatial), in percent.
    """
    if skill not in SKILLS:
        raise ValueError(f"unknown skill {skill!r}; choose from {', '.join(SKILLS)}")
    if len(detections) != len(truths):
        raise ValueError(f"{len(detections)} detections for {len(truths)} ground truths")
    if not truths:
        raise ValueError("no image to score")
    outcomes = [image_outcome(skill, d, t, threshold=threshold, object_threshold=object_threshold)
                for d, t in zip(detections, truths)]
    splits = None
    if skill == "count":
        splits = [str(int(t["count"])) for t in truths]
    elif skill == "spatial":
        splits = [str(t["relation"]) for t in truths]
    out = skill_accuracy([o["correct"] for o in outcomes], splits, confidence_level=confidence_level,
                         n_resamples=n_resamples, random_state=random_state, keys=keys)
    sub = {"count": "count_right", "spatial": "objects_correct"}.get(skill)
    if sub:
        key = "count_right_accuracy" if skill == "count" else "objects_accuracy"
        out[key] = 100.0 * float(np.mean([bool(o[sub]) for o in outcomes]))
    out.update({"skill": skill, "threshold": float(threshold), "outcomes": outcomes})
    return out


# --------------------------------------------------------------------------- chance


def shuffled_chance(skill: str, truths: Sequence[Mapping]) -> float:
    """Expected accuracy (percent) of the shuffled-ground-truth baseline with a perfect detector.

    Each image is scored against the ground truth of a scene drawn uniformly (with
    replacement, as the release's ``random.choice``) from the same list; a perfect detector
    sees exactly its own scene. Correct pairs, by skill: object: same target class; count:
    same (class, N); spatial: the same ordered (objA, objB, relation), or the swapped pair
    with the inverse relation, or (objA = objB) the same class with a relation on the same
    axis. The result is the sum of p_i p_j over correct pairs of ground-truth cells.
    """
    if skill not in SKILLS:
        raise ValueError(f"unknown skill {skill!r}; choose from {', '.join(SKILLS)}")
    if not truths:
        raise ValueError("no ground truth given")
    if skill == "object":
        keys = [(str(t["target"]),) for t in truths]
    elif skill == "count":
        keys = [(str(t["target"]), int(t["count"])) for t in truths]
    else:
        keys = [(str(t["target"]), str(t["target_b"]), str(t["relation"])) for t in truths]
    n = len(keys)
    p = {k: v / n for k, v in Counter(keys).items()}
    if skill != "spatial":
        return 100.0 * sum(v * v for v in p.values())
    total = 0.0
    for (a, b, rel), pk in p.items():
        if a == b:
            match = sum(p.get((a, a, r), 0.0) for r in RELATIONS if _AXIS[r] == _AXIS[rel])
        else:
            match = p.get((a, b, rel), 0.0) + p.get((b, a, _INVERSE[rel]), 0.0)
        total += pk * match
    return 100.0 * total


__all__ = [
    "DEFAULT_THRESHOLD", "RELATIONS", "SKILLS", "CountOutcome", "SpatialOutcome", "count_outcome", "evaluate_skill",
    "image_outcome",
    "object_correct", "ranked", "relation_of", "shuffled_chance", "skill_accuracy", "spatial_outcome",
]
