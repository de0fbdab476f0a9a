"""PaintSkills accuracy: object / count / spatial skill accuracy from detector outputs
(Cho et al., DALL-Eval, ICCV 2023, Sec. 4.1 and the authors' released evaluator).

A thin evaluate wrapper: the maths lives in ``benchmark.scores.paintskills``.
"""

import datasets
import evaluate
import numpy as np

from benchmark.models.detector import Detections  # From: t2i-bias-benchmark
from benchmark.papers import PAPERS  # From: t2i-bias-benchmark
from benchmark.scores.paintskills import DEFAULT_THRESHOLD  # From: t2i-bias-benchmark
from benchmark.scores.paintskills import SKILLS  # From: t2i-bias-benchmark
from benchmark.scores.paintskills import evaluate_skill  # From: t2i-bias-benchmark

_DESCRIPTION = """\
PaintSkills (DALL-Eval, Cho et al., Sec. 4.1) measures three visual reasoning skills of a
text-to-image model with an object detector run on its images: object recognition ("a
photo of a dog"), counting ("a photo of 3 dogs") and spatial relations ("a photo of a dog
and a chair; the chair is to the left of the dog"). Per image and per detector query the
rules need the top class and its probability ("no object" left out), the box (centre x,
centre y, width, height as fractions of the image), and for counting the probability of
the target class. Rules as the released code: object = the most confident query is the
target class above the threshold (0.7); count = N_pred queries above the threshold, the
N_pred queries most probable for the target hold exactly N of the target class; spatial =
the two most confident queries have both classes and their box centres give the
relation "<objB> is <rel> <objA>". Accuracy in percent with a percentile bootstrap
interval over images, overall and per count N / per relation.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `dict`): one per image, the detector's queries:
        scores (`list` of `float`): top class probability of each query, "no object" excluded;
        labels (`list` of `str`): that class's name;
        boxes (`list` of [cx, cy, w, h], fractions of the image, y downwards): spatial;
        target_scores (`list` of `float`, optional): probability of the target class for each
            query (count; without it, the score where the label is the target and 0 elsewhere).
    references (`list` of `dict`): one per image: target (`str`, objA), count (`int`, count),
        relation (`str` in left / right / above / below: "<target_b> is <relation> <target>")
        and target_b (`str`) for spatial.
    skill (`str`, required): "object", "count" or "spatial".
    threshold (`float`, default 0.7): the release's p_threshold.
    object_threshold (`bool`, default True): apply the threshold to object (the paper's formula);
        False reproduces the released eval_object, whose threshold line is commented out.
    confidence_level (`float`, default 0.95), n_resamples (`int`, default 1000; 0 skips the
        interval), random_state (`int`, default 0).
Returns:
    accuracy (`float`, percent), accuracy_ci (`dict` or None), n_images, n_correct,
    per_split (`dict`: count N or relation -> accuracy, accuracy_ci, n_images, n_correct),
    correct (`list` of `bool`, per image), skill, threshold, and count_right_accuracy
    (N_pred = N) for count or objects_accuracy (both classes found) for spatial.
Examples:
    >>> acc = evaluate.load("t2i-bias-benchmark/paintskills_accuracy")
    >>> acc.compute(predictions=[{"scores": [0.9, 0.2], "labels": ["dog", "cat"]}],
    ...             references=[{"target": "dog"}], skill="object", n_resamples=0)["accuracy"]
    100.0
"""


_PRED_KEYS = ("scores", "labels", "boxes", "target_scores")
_REF_KEYS = ("target", "count", "relation", "target_b")
# evaluate's type check refuses None for string fields: a missing string is "".
_STRINGS = ("target", "relation", "target_b")


def _filled(rows, keys):
    if rows is None:
        return None
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"row {i} must be a dict with keys among {list(keys)}, got {row!r}")
        unknown = [k for k in row if k not in keys]
        if unknown:
            raise ValueError(f"row {i} has unknown keys {unknown}; expected keys among {list(keys)}")
        out.append({k: ("" if k in _STRINGS and row.get(k) is None else row.get(k)) for k in keys})
    return out


class _Queries:
    """One image's queries in the form the rules read (scores, labels, boxes, prob_of)."""

    def __init__(self, pred, target):
        if pred is None or pred.get("scores") is None or pred.get("labels") is None:
            raise ValueError("each prediction needs `scores` and `labels` (one per detector query)")
        scores = np.asarray(pred["scores"], dtype=np.float64)
        boxes = pred.get("boxes")
        boxes = np.zeros((scores.size, 4)) if boxes is None else np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
        target_scores = pred.get("target_scores")
        probs, names = None, None
        if target_scores is not None and target:
            probs, names = np.asarray(target_scores, dtype=np.float64).reshape(-1, 1), (str(target),)
        try:
            self.detections = Detections(scores, tuple(str(v) for v in pred["labels"]), boxes, probs, names)
        except ValueError as exc:
            raise ValueError(f"prediction: {exc}") from None


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PaintskillsAccuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=PAPERS["dalleval"].bibtex,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "predictions": {
                    "scores": datasets.Sequence(datasets.Value("float64")),
                    "labels": datasets.Sequence(datasets.Value("string")),
                    "boxes": datasets.Sequence(datasets.Sequence(datasets.Value("float64"))),
                    "target_scores": datasets.Sequence(datasets.Value("float64")),
                },
                "references": {
                    "target": datasets.Value("string"),
                    "count": datasets.Value("int64"),
                    "relation": datasets.Value("string"),
                    "target_b": datasets.Value("string"),
                },
            }),
            homepage=PAPERS["dalleval"].url,
            codebase_urls=["https://github.com/j-min/DallEval"],
            reference_urls=[PAPERS["dalleval"].url],
        )

    # Optional fields (boxes, target_scores, count, relation, target_b) may be left out of a
    # row; datasets' encoder needs every key, so they are filled here (None, or "" for strings).
    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of images (missing optional fields become None)."""
        return super().add_batch(predictions=_filled(predictions, _PRED_KEYS),
                                 references=_filled(references, _REF_KEYS), **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one image (missing optional fields become None)."""
        return super().add(prediction=_filled([prediction], _PRED_KEYS)[0],
                           reference=_filled([reference], _REF_KEYS)[0], **kwargs)

    def _compute(self, predictions, references, skill=None, threshold=DEFAULT_THRESHOLD, object_threshold=True,
                 confidence_level=0.95, n_resamples=1000, random_state=0):
        if skill not in SKILLS:
            raise ValueError(f"paintskills_accuracy needs skill= one of {', '.join(SKILLS)}, got {skill!r}")
        if not predictions:
            raise ValueError("no image to score")
        for i, ref in enumerate(references):
            need = {"object": ("target",), "count": ("target", "count"),
                    "spatial": ("target", "relation", "target_b")}[skill]
            missing = [k for k in need if ref.get(k) is None or ref.get(k) == ""]
            if missing:
                raise ValueError(f"references[{i}] lacks {missing} for skill {skill!r}")
            if skill == "spatial" and predictions[i].get("boxes") is None:
                raise ValueError(f"predictions[{i}] lacks `boxes`, which the spatial rule reads")
        dets = [_Queries(p, r.get("target")).detections for p, r in zip(predictions, references)]
        out = evaluate_skill(skill, dets, references, threshold=threshold, object_threshold=object_threshold,
                             confidence_level=confidence_level, n_resamples=n_resamples, random_state=random_state)
        out["correct"] = [bool(o["correct"]) for o in out.pop("outcomes")]
        return out
