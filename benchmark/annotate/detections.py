"""The object-detector annotator (PaintSkills, DALL-Eval Sec. 4.1): every detector query of
each image (top class, probability, box) and the probabilities of the classes its probe
asks about (``target``, ``target_b``), in ``labels/detections.parquet``.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from benchmark.annotate.registry import (
    AnnotateContext,
    Annotator,
    AnnotatorKind,
    WorkItem,
    with_prepared,
)
from benchmark.models.defaults import DEFAULT_DETECTOR, TINY_DETECTOR
from benchmark.registries import Registrations
from benchmark.models.detector import check_detector_spec, load_detector

__all__ = ["DetectionAnnotator"]


class DetectionAnnotator(Annotator):
    """A DETR by Hub ID or folder, ``builtin:tiny-detr``, or a loaded ``Detector``."""

    kind = "detections"
    label_file = "detections"
    inputs = "pixels"
    model_key = "detector"

    def check(self) -> None:
        if isinstance(self.model, str):
            check_detector_spec(self.model)

    def keys(self, row: Mapping[str, Any], ctx: AnnotateContext) -> list[tuple]:
        return [(str(row["probe_id"]), self.name)]

    def load_model(self, spec: str, ctx: AnnotateContext) -> Any:
        return load_detector(spec, device=ctx.device, batch_size=ctx.batch_size)

    def annotate(self, items: Sequence[WorkItem], ctx: AnnotateContext) -> list[dict]:
        model, images = self.load(ctx), [it.image for it in items]
        prepared = ctx.prepared(self.model_key, self.model, [it.probe_id for it in items])
        rows = []
        for it, det in zip(items, with_prepared(model.detect, images, prepared)):
            # keep every query, and the probabilities of the classes the rules ask about
            keep = [it.row.get(c) for c in ("target", "target_b") if isinstance(it.row.get(c), str) and it.row.get(c)]
            rows.append({"probe_id": it.probe_id, "detector": self.name, **det.restrict(keep).to_record()})
        return rows


def _default_detector(builtin: bool) -> str:
    return TINY_DETECTOR if builtin else DEFAULT_DETECTOR


REGISTRATIONS = Registrations(annotators=(AnnotatorKind(
    "detections", DetectionAnnotator, option="detector", default=_default_detector,
    help="object detector of the scene probes: a DETR Hub ID or folder (default facebook/detr-resnet-50; "
         "builtin:tiny-detr for builtin models; a folder from `t2ibench train-detector`), or none"),))
