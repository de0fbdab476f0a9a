"""Attribute existence from CLIP embeddings: the C, CC and CLS estimators of GEP.

Given the image embeddings of some images (one CLIP encoder, rows aligned with the probe
rows) and the encoder's text function, :func:`existence_rows` returns one row per
(image, attribute in the row's ``annotated_attributes``, estimator):

* **C** (Eq. 4): ``score`` = cos(image, attribute text without its preposition)
  (``benchmark.scores.existence.clip_existence``);
* **CC** (Eq. 5): ``score`` = C - cos(image, "an object")
  (``calibrated_clip_existence``);
* **CLS** (Eq. 6-7): ``score`` = mean probability of the 10 logistic-regression
  classifiers trained on CLIP *text* embeddings of "[g] [a] [c]." vs "[g] [c]." and
  applied to the image embedding (:mod:`benchmark.annotate.cross_modal`). The classifiers
  are trained once per classifier group and call. Which group a row belongs to, with its
  people g and phrases, is the task's parameter for this annotator (``Task.annotators =
  {"clip_existence": classifiers}``, ``classifiers(row, config) -> (group, {"people": [...],
  "phrases": {...}, "contexts": [...], "positive_template": ..., "negative_template": ...})``:
  the keyword arguments of :func:`benchmark.annotate.cross_modal.train_cross_modal_classifiers`).
  :func:`default_classifiers` gives the people and phrases of one group for every row, the
  config's ``classifier_people`` (A man, A woman, A person) and the attribute itself as the
  phrase ("in boots"); the task adds the sentences' contexts and templates. GEP's occupation
  case study has its own group (``benchmark/tasks/gep/classifiers.py``).

Labels (0/1) are a convenience, not the paper's estimate (the paper averages the raw
values): C and CC -> 1 when CC > :data:`CC_THRESHOLD` (0: the attribute text is closer
to the image than the reference "an object"), CLS -> 1 when the mean probability >=
:data:`CLS_THRESHOLD` (0.5). GEP from C / CC uses ``score`` through ``gep_unbounded``.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from benchmark.annotate.cross_modal import train_cross_modal_classifiers
from benchmark.annotate.registry import AnnotateContext, Annotator, AnnotatorKind, WorkItem
from benchmark.models import load_encoder
from benchmark.models.defaults import DEFAULT_ENCODER, TINY_ENCODER
from benchmark.models.encoders import check_encoder_spec
from benchmark.registries import Registrations
from benchmark.scores.existence import REFERENCE_STRING, calibrated_clip_existence, clip_existence

__all__ = ["CC_THRESHOLD", "CLS_THRESHOLD", "ESTIMATORS", "DEFAULT_PEOPLE", "CLIPEmbeddingAnnotator",
           "CLIPExistenceAnnotator", "ClassifierSetup", "annotated_attributes", "default_classifiers", "existence_rows",
           "load_clip"]

#: C and CC labels: 1 when cos(image, a) - cos(image, "an object") > CC_THRESHOLD
CC_THRESHOLD = 0.0
#: CLS labels: 1 when the ensemble's mean probability >= CLS_THRESHOLD
CLS_THRESHOLD = 0.5
ESTIMATORS = ("C", "CC", "CLS")
#: the people g of the CLS training sentences when the config names none
DEFAULT_PEOPLE = ("A man", "A woman", "A person")

#: a task's parameter for this annotator: ``(row, config) -> (classifier group, keyword
#: arguments of train_cross_modal_classifiers: people, phrases, contexts, templates)``
ClassifierSetup = Callable[[Mapping[str, Any], dict], tuple[str, dict]]


def annotated_attributes(value: Any) -> list[str]:
    """A row's ``annotated_attributes`` as a list of strings (parquet gives numpy arrays)."""
    if value is None:
        return []
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def default_classifiers(row: Mapping[str, Any], config: dict) -> tuple[str, dict]:
    """One classifier group for every row: g in the config's ``classifier_people`` (else
    :data:`DEFAULT_PEOPLE`), the attribute itself as the phrase."""
    return "main", {"people": list(config.get("classifier_people") or DEFAULT_PEOPLE), "phrases": {}}


def _one_group(row: Mapping[str, Any]) -> tuple[str, dict]:
    return default_classifiers(row, {})


def _memo(embed_texts: Callable[[list[str]], Any]) -> Callable[[list[str]], np.ndarray]:
    """Embed each distinct text once (C, CC and CLS share attribute and sentence texts)."""
    cache: dict[str, np.ndarray] = {}

    def embed(texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in cache]
        if todo:
            for t, e in zip(todo, np.asarray(embed_texts(todo), dtype=np.float32)):
                cache[t] = e
        return np.stack([cache[t] for t in texts]) if texts else np.zeros((0, 0), np.float32)

    return embed


def existence_rows(
    probe_rows: Sequence[Mapping[str, Any]],
    image_embeddings: np.ndarray,
    embed_texts: Callable[[list[str]], Any],
    annotator: str,
    *,
    classifiers: Callable[[Mapping[str, Any]], tuple[str, dict]] | None = None,
    estimators: Sequence[str] = ESTIMATORS,
    random_state: int = 0,
    sgd_params: Mapping[str, Any] | None = None,
) -> list[dict]:
    """Rows ``probe_id, attribute, score, label, estimator, annotator`` (plus ``question`` /
    ``answer`` = None) for every image x annotated attribute x estimator.

    ``probe_rows[i]`` (needs ``probe_id`` and ``annotated_attributes``) is the image whose
    embedding is ``image_embeddings[i]``. ``classifiers(row) -> (group, {"people", "phrases",
    "contexts", "positive_template", "negative_template"})`` groups the rows whose CLS classifiers
    are trained together (the first row of a group gives their training sentences); CLS needs it,
    C and CC do not.
    """
    unknown = set(estimators) - set(ESTIMATORS)
    if unknown:
        raise ValueError(f"unknown existence estimators {sorted(unknown)}; use {ESTIMATORS}")
    if classifiers is None and "CLS" in estimators:
        raise ValueError("the CLS estimator needs classifiers=: the task's training sentences per row")
    classifiers = classifiers or _one_group
    emb = np.asarray(image_embeddings, dtype=np.float64)
    if emb.ndim != 2 or emb.shape[0] != len(probe_rows):
        raise ValueError(f"{len(probe_rows)} probe rows but image embeddings of shape {emb.shape}")
    embed = _memo(embed_texts)

    groups: dict[str, list[int]] = {}
    setups: dict[str, dict] = {}  # group -> people and phrases of its classifiers
    for i, r in enumerate(probe_rows):
        group, kwargs = classifiers(r)
        groups.setdefault(group, []).append(i)
        setups.setdefault(group, kwargs)

    values: dict[tuple[int, str, str], float] = {}  # (row index, attribute, estimator) -> score
    for group, idx in groups.items():
        attrs = list(dict.fromkeys(a for i in idx for a in annotated_attributes(probe_rows[i]["annotated_attributes"])))
        if not attrs:
            continue
        sub = emb[idx]
        mats: dict[str, np.ndarray] = {}
        if "C" in estimators:
            mats["C"] = clip_existence(sub, attrs, embed)
        if "CC" in estimators:
            mats["CC"] = calibrated_clip_existence(sub, attrs, embed)
        if "CLS" in estimators:
            clf = train_cross_modal_classifiers(attrs, embed, random_state=random_state, sgd_params=sgd_params,
                                                **setups[group])
            mats["CLS"] = clf.predict_proba(sub)
        col = {a: j for j, a in enumerate(attrs)}
        for k, i in enumerate(idx):
            for a in annotated_attributes(probe_rows[i]["annotated_attributes"]):
                for est, m in mats.items():
                    values[(i, a, est)] = float(m[k, col[a]])

    rows = []
    for i, r in enumerate(probe_rows):
        for a in annotated_attributes(r["annotated_attributes"]):
            cc = values.get((i, a, "CC"))
            for est in estimators:
                score = values[(i, a, est)]
                if est == "CLS":
                    label = int(score >= CLS_THRESHOLD)
                else:
                    calib = cc if cc is not None else score - _reference_cos(emb[i], embed)
                    label = int(calib > CC_THRESHOLD)
                rows.append({"probe_id": str(r["probe_id"]), "attribute": a, "score": score, "label": label,
                             "estimator": est, "annotator": annotator, "question": None, "answer": None})
    return rows


def _reference_cos(image_embedding: np.ndarray, embed) -> float:
    ref = np.asarray(embed([REFERENCE_STRING])[0], dtype=np.float64)
    img = np.asarray(image_embedding, dtype=np.float64)
    return float(img @ ref / (np.linalg.norm(img) * np.linalg.norm(ref)))


class CLIPEmbeddingAnnotator(Annotator):
    """An annotator that reads the image embeddings of one CLIP encoder (the annotate stage
    embeds each image once per encoder): its spec checked before anything loads, the encoder
    loaded once and shared by every annotator of the same spec (:func:`load_clip`)."""

    inputs = "embeddings"
    model_key = "clip"

    def check(self) -> None:
        if isinstance(self.model, str):
            check_encoder_spec(self.model)

    def load_model(self, spec: str, ctx: AnnotateContext) -> Any:
        return load_clip(spec, ctx)


class CLIPExistenceAnnotator(CLIPEmbeddingAnnotator):
    """GEP's C, CC and CLS estimators (``labels/attributes.parquet``) from the image embeddings
    of one CLIP encoder, for every attribute in a row's ``annotated_attributes``. A suite's
    parameter (its task's) is its :data:`ClassifierSetup`; None: :func:`default_classifiers`."""

    kind = "clip_existence"
    label_file = "attributes"

    def keys(self, row: Mapping[str, Any], ctx: AnnotateContext) -> list[tuple]:
        pid = str(row["probe_id"])
        return [(pid, a, est, self.name, "") for a in annotated_attributes(row.get("annotated_attributes"))
                for est in ESTIMATORS]

    def annotate(self, items: Sequence[WorkItem], ctx: AnnotateContext) -> list[dict]:
        encoder = self.load(ctx)
        emb = np.stack([np.asarray(it.embedding, dtype=np.float32) for it in items]) if items else np.zeros((0, 0))
        return existence_rows([it.row for it in items], emb, encoder.embed_texts, self.name,
                              classifiers=lambda row: self.classifiers(row, ctx))

    def classifiers(self, row: Mapping[str, Any], ctx: AnnotateContext) -> tuple[str, dict]:
        """The classifier group of ``row`` and its training sentences, by its suite's task."""
        setup = self.params.get(str(row["suite"])) or default_classifiers
        return setup(row, ctx.config_of(row))


def load_clip(spec: str, ctx: AnnotateContext) -> Any:
    """A CLIP encoder for the annotate stage: images reach it ``ctx.batch_size`` at a time (the
    embedding cache batches them); its own batch size only chunks texts (CLS training
    sentences, MCAS texts), which are cheap."""
    return load_encoder(spec, device=ctx.device, batch_size=max(ctx.batch_size, TEXT_BATCH_SIZE))


TEXT_BATCH_SIZE = 256


def _default_encoder(builtin: bool) -> str:
    return TINY_ENCODER if builtin else DEFAULT_ENCODER


REGISTRATIONS = Registrations(annotators=(AnnotatorKind(
    "clip_existence", CLIPExistenceAnnotator, option="encoder", default=_default_encoder,
    help="CLIP encoder of the existence estimators C, CC, CLS (default open_clip:ViT-L-14:openai; builtin:tiny-clip for builtin models)"),))
