"""Object detectors: ``detect(images) -> list[Detections]`` (PaintSkills' annotator).

The official PaintSkills rules (:mod:`benchmark.tasks.paintskills.scores`) need, per image and
per detector query, the probability of each class (the "no object" class left out) and a
box, so a :class:`Detections` keeps every query: its top class and probability, its box,
and the full class-probability matrix (or the columns of the classes a rule asks about).

* :class:`DetrDetector` - a transformers DETR (``DetrForObjectDetection`` + its image
  processor) loaded by Hub model ID (COCO checkpoints: ``facebook/detr-resnet-50``,
  ``facebook/detr-resnet-101``, ...), a local folder (e.g. a fine-tuned one written by
  ``t2ibench train-detector``) or ``builtin:tiny-detr``, in the device's dtype (bf16 on
  a recent GPU, float32 on a CPU).
* ``builtin:tiny-detr``: a ``DetrForObjectDetection`` built from a config (a tiny ResNet
  backbone through the AutoBackbone API, no timm, nothing pretrained) with COCO's 91-id
  label map and a ``DetrImageProcessor`` that resizes to 64 px, saved with
  ``save_pretrained`` and loaded back through the same ``from_pretrained`` path a Hub DETR
  takes. Its detections are meaningless: it runs the PaintSkills evaluation and
  ``t2ibench train-detector`` offline.

The scenes' own boxes as an oracle detector live with the scenes
(:class:`benchmark.tasks.paintskills.detector.ground_truth.GroundTruthDetector`).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.extras import require

from .builtin_cache import BUILTIN_SEED, build_builtin, check_builtin_name
from .defaults import DEFAULT_DETECTOR, TINY_DETECTOR
from .device import resolve_device, resolve_dtype
from .errors import MalformedSpecError
from .hub_access import ensure_hub_model, looks_like_path

__all__ = ["COCO_NAMES", "DEFAULT_DETECTOR", "TINY_DETECTOR", "TINY_DETR_CONFIG", "Detections", "Detector",
           "DetrDetector", "build_tiny_detr", "check_detector_spec", "load_detector", "resolve_detector_source",
           "tiny_detr_config"]

#: COCO category names by id in the 91-id scheme (DETR's id2label; "N/A" = unused id)
COCO_NAMES = (
    "N/A", "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
    "fire hydrant", "N/A", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
    "elephant", "bear", "zebra", "giraffe", "N/A", "backpack", "umbrella", "N/A", "N/A", "handbag", "tie",
    "suitcase", "frisbee", "skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove",
    "skateboard", "surfboard", "tennis racket", "bottle", "N/A", "wine glass", "cup", "fork", "knife", "spoon",
    "bowl", "banana", "apple", "sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake",
    "chair", "couch", "potted plant", "bed", "N/A", "dining table", "N/A", "N/A", "toilet", "N/A", "tv", "laptop",
    "mouse", "remote", "keyboard", "cell phone", "microwave", "oven", "toaster", "sink", "refrigerator", "N/A",
    "book", "clock", "vase", "scissors", "teddy bear", "hair drier", "toothbrush",
)


@dataclass(frozen=True)
class Detections:
    """One image's detector output, one entry per query.

    ``scores[q]``: highest class probability of query q ("no object" left out);
    ``labels[q]``: that class's name; ``boxes[q]``: centre x, centre y, width, height as
    fractions of the image (y downwards); ``probs`` (Q, C) with ``class_names`` (C): the
    probability of each class per query, for all classes or only some (see :meth:`restrict`).
    """

    scores: np.ndarray
    labels: tuple[str, ...]
    boxes: np.ndarray
    probs: np.ndarray | None = None
    class_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        q = len(self.scores)
        if len(self.labels) != q or np.shape(self.boxes) != (q, 4):
            raise ValueError(f"detections disagree on the number of queries: {q} scores, {len(self.labels)} "
                             f"labels, boxes of shape {np.shape(self.boxes)}")
        if self.probs is not None and (self.class_names is None or np.shape(self.probs) != (q, len(self.class_names))):
            raise ValueError("probs must have shape (queries, len(class_names))")

    @property
    def n_queries(self) -> int:
        return len(self.scores)

    def prob_of(self, name: str) -> np.ndarray:
        """Probability of class ``name`` for every query.

        Exact when ``probs`` holds the class; otherwise the top-class probability where the
        query's top class is ``name`` and 0 elsewhere (a lower bound)."""
        if self.probs is not None and name in self.class_names:
            return np.asarray(self.probs[:, self.class_names.index(name)], dtype=np.float64)
        return np.where(np.asarray(self.labels, dtype=object) == name, np.asarray(self.scores, dtype=np.float64), 0.0)

    def restrict(self, names: Sequence[str]) -> "Detections":
        """The same detections keeping the probability columns of ``names`` only (to store)."""
        names = tuple(dict.fromkeys(str(n) for n in names if n))
        cols = np.stack([self.prob_of(n) for n in names], axis=1) if names else np.zeros((self.n_queries, 0))
        return Detections(self.scores, self.labels, self.boxes, cols.astype(np.float32), names)

    @classmethod
    def from_probs(cls, probs: np.ndarray, boxes: np.ndarray, class_names: Sequence[str]) -> "Detections":
        """From a (Q, C) probability matrix ("no object" already left out) and (Q, 4) boxes."""
        p = np.asarray(probs, dtype=np.float32)
        top = p.argmax(axis=1) if p.shape[1] else np.zeros(p.shape[0], dtype=int)
        names = tuple(str(n) for n in class_names)
        return cls(p.max(axis=1) if p.shape[1] else np.zeros(p.shape[0], np.float32),
                   tuple(names[i] for i in top), np.asarray(boxes, dtype=np.float32).reshape(-1, 4), p, names)

    def to_record(self) -> dict:
        """Flat lists for a parquet row (see ``labels/detections.parquet`` in docs/annotate.md)."""
        return {"n_queries": self.n_queries, "query_scores": [float(v) for v in self.scores],
                "query_labels": list(self.labels), "query_boxes": [float(v) for v in np.ravel(self.boxes)],
                "prob_classes": list(self.class_names or ()),
                "query_probs": [] if self.probs is None else [float(v) for v in np.ravel(self.probs)]}

    @classmethod
    def from_record(cls, row: Mapping) -> "Detections":
        q = int(row["n_queries"])
        names = tuple(str(n) for n in (row.get("prob_classes") if row.get("prob_classes") is not None else ()))
        probs = row.get("query_probs")
        probs = None if probs is None or not names else np.asarray(probs, dtype=np.float32).reshape(q, len(names))
        return cls(np.asarray(row["query_scores"], dtype=np.float32), tuple(str(v) for v in row["query_labels"]),
                   np.asarray(row["query_boxes"], dtype=np.float32).reshape(q, 4), probs, names or None)


class Detector(ABC):
    """``detect(images) -> list[Detections]``: one per image, in order."""

    name: str
    settings: dict[str, Any]
    is_builtin: bool = False

    @abstractmethod
    def detect(self, images: Sequence) -> list[Detections]: ...

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


# --------------------------------------------------------------------------- DETR


class DetrDetector(Detector):
    """A transformers DETR: per-query class probabilities = ``softmax(logits)[..., :-1]`` (the
    release's ``probas``), boxes = ``pred_boxes`` (centre x, centre y, w, h in [0, 1]).

    Runs in ``dtype``: the device's (bf16 on CUDA GPUs that have it, else fp16; fp32 on a
    CPU, see :func:`benchmark.models.device.resolve_dtype`). The processor's pixels are
    cast to it; probabilities and boxes come back as float32."""

    def __init__(self, model, processor, *, name: str, device, batch_size: int = 16, is_builtin: bool = False,
                 dtype=None):
        import torch

        self.model = model.eval()
        self.processor = processor
        self.name = name
        self.device = device
        self.dtype = dtype if dtype is not None else next(model.parameters()).dtype
        self.batch_size = int(batch_size)
        self.is_builtin = is_builtin
        cfg = model.config
        self.class_names = tuple(str(cfg.id2label.get(i, cfg.id2label.get(str(i), f"LABEL_{i}")))
                                 for i in range(int(cfg.num_labels)))
        if not isinstance(self.dtype, torch.dtype) or not self.dtype.is_floating_point:
            raise ValueError(f"DETR dtype must be a floating torch dtype, got {self.dtype!r}")
        self.settings = {"kind": "detr", "num_queries": int(cfg.num_queries), "num_labels": int(cfg.num_labels),
                         "dtype": str(self.dtype).removeprefix("torch.")}

    @classmethod
    def from_pretrained(cls, model_id_or_path: str, revision: str | None = None, device=None, *,
                        batch_size: int = 16, token: str | bool | None = None, dtype=None) -> "DetrDetector":
        """Load ``DetrForObjectDetection`` + ``AutoImageProcessor`` from a Hub ID, a local folder
        or ``builtin:tiny-detr``; one-line errors (bad spec, not cached offline, no GPU, bad
        dtype) first. ``dtype`` defaults to the device's (:func:`resolve_dtype`); a CPU runs
        float32 whatever is asked, as the other annotators do."""
        require("torch", "transformers", "PIL", extra="audit", purpose="detect objects with DETR")
        import torch

        check_detector_spec(model_id_or_path, revision=revision, token=token)
        dev = resolve_device(device)
        dt = resolve_dtype(dtype, dev)
        if dev.type == "cpu":
            dt = torch.float32
        source, revision, is_builtin = resolve_detector_source(model_id_or_path, revision=revision, token=token)
        spec = str(model_id_or_path).strip()
        from transformers import AutoImageProcessor, DetrForObjectDetection

        kw: dict[str, Any] = {"token": token}
        if revision:
            kw["revision"] = revision
        model = DetrForObjectDetection.from_pretrained(source, dtype=dt, **kw).to(dev)
        processor = AutoImageProcessor.from_pretrained(source, **kw)
        return cls(model, processor, name=spec, device=dev, batch_size=batch_size, is_builtin=is_builtin, dtype=dt)

    def prepare_images(self, images: Sequence) -> list[dict]:
        """The CPU part of :meth:`detect`: the processor's ``pixel_values`` and ``pixel_mask``
        (resized to 800 px, normalised, padded) per ``batch_size`` images. The annotate stage
        calls it on its decode threads."""
        out = []
        for start in range(0, len(images), self.batch_size):
            batch = [im.convert("RGB") for im in images[start:start + self.batch_size]]
            inputs = self.processor(images=batch, return_tensors="pt")
            out.append({k: v for k, v in inputs.items() if k in ("pixel_values", "pixel_mask")})
        return out

    def _model_inputs(self, prepared: dict) -> dict:
        """One batch of :meth:`prepare_images` on the device, pixels in the model's dtype."""
        import torch

        return {k: (v.to(self.device, self.dtype) if torch.is_floating_point(v) else v.to(self.device))
                for k, v in prepared.items()}

    def detect(self, images: Sequence, prepared: list[dict] | None = None) -> list[Detections]:
        """One :class:`Detections` per image; ``prepared``: what :meth:`prepare_images` made of
        ``images`` (computed here when not given)."""
        import torch

        out: list[Detections] = []
        for chunk in (self.prepare_images(images) if prepared is None else prepared):
            inputs = self._model_inputs(chunk)
            with torch.inference_mode():
                res = self.model(**inputs)
            probs = res.logits.float().softmax(-1)[..., :-1].cpu().numpy()
            boxes = res.pred_boxes.float().cpu().numpy()
            out.extend(Detections.from_probs(p, b, self.class_names) for p, b in zip(probs, boxes))
        return out


def check_detector_spec(spec: Any, *, revision: str | None = None, token: str | bool | None = None) -> None:
    """One-line errors for a detector spec before anything is loaded: an unknown built-in, a
    missing local folder, a malformed ID, or a Hub model that is not cached while offline,
    gated or absent (:func:`benchmark.models.hub_access.ensure_hub_model`)."""
    if isinstance(spec, Detector):
        return
    text = str(spec or "").strip()
    if not text:
        raise MalformedSpecError("malformed detector spec: empty")
    if text.startswith("builtin:"):
        check_builtin_name(text[len("builtin:"):], "detector")
        return
    if Path(os.path.expanduser(text)).is_dir():
        return
    if looks_like_path(text):
        raise MalformedSpecError(f"local detector folder {text!r} does not exist")
    if ":" in text:
        raise MalformedSpecError(f"malformed detector spec {text!r}: use a Hub model ID (e.g. {DEFAULT_DETECTOR}), "
                                 f"a local folder or {TINY_DETECTOR}")
    ensure_hub_model(text, ["config.json"], revision=revision, token=token, what="detector")


def resolve_detector_source(spec: str, *, revision: str | None = None,
                            token: str | bool | None = None) -> tuple[str, str | None, bool]:
    """(what ``from_pretrained`` loads, its revision, is_builtin) for a checked detector spec;
    a built-in is built into its cache folder on first use. Call :func:`check_detector_spec` first."""
    text = str(spec).strip()
    if text.startswith("builtin:"):
        return str(build_builtin(text[len("builtin:"):], build_tiny_detr, kind="detector")), None, True
    local = Path(os.path.expanduser(text))
    if local.is_dir():
        return str(local.resolve()), None, False
    return text, revision, False


def load_detector(spec: Any = DEFAULT_DETECTOR, *, revision: str | None = None, device=None,
                  batch_size: int = 16, dtype=None) -> Detector:
    """A :class:`Detector` as is, or a DETR by spec (Hub ID, folder, ``builtin:tiny-detr``) in
    the device's dtype (or ``dtype``; float32 on a CPU)."""
    if isinstance(spec, Detector):
        return spec
    return DetrDetector.from_pretrained(spec, revision=revision, device=device, batch_size=batch_size, dtype=dtype)


# --------------------------------------------------------------------------- builtin:tiny-detr

#: DETR hyper-parameters of builtin:tiny-detr (the ResNet backbone is set in tiny_detr_config)
TINY_DETR_CONFIG = {
    "d_model": 32, "encoder_layers": 1, "decoder_layers": 1, "encoder_attention_heads": 2,
    "decoder_attention_heads": 2, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "num_queries": 16,
}
TINY_IMAGE_SIZE = 64


def tiny_detr_config(**overrides):
    """A test-sized ``DetrConfig`` with COCO's label map (no timm, no pretrained backbone)."""
    from transformers import DetrConfig, ResNetConfig

    backbone = ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
                            layer_type="basic", out_features=["stage2"])
    id2label = {i: n for i, n in enumerate(COCO_NAMES)}
    kw = {**TINY_DETR_CONFIG, **overrides}
    return DetrConfig(use_timm_backbone=False, use_pretrained_backbone=False, backbone_config=backbone,
                      num_labels=len(COCO_NAMES), id2label=id2label, label2id={n: i for i, n in id2label.items()},
                      **kw)


def build_tiny_detr(folder: Path) -> None:
    """Write builtin:tiny-detr (model + image processor) into ``folder``."""
    import torch
    from transformers import DetrForObjectDetection, DetrImageProcessor

    torch.manual_seed(BUILTIN_SEED)
    model = DetrForObjectDetection(tiny_detr_config())
    model.save_pretrained(folder, safe_serialization=True)
    DetrImageProcessor(size={"shortest_edge": TINY_IMAGE_SIZE, "longest_edge": TINY_IMAGE_SIZE}).save_pretrained(folder)
