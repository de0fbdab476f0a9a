"""The skin-tone annotator of the annotate stage: ITA and Monk Skin Tone of the largest face
(``labels/skin_tone.parquet``), with :class:`benchmark.annotate.skin_tone.SkinToneAnnotator`.

The option names the face detector: ``haar`` (OpenCV's bundled Haar cascade, the default),
``whole-image`` (the whole image is the face: for close-up portraits and tests), a
``FaceDetector`` or a ready ``SkinToneAnnotator`` (e.g. one with a reference dataset's swatches);
``NAME:VARIANT`` computes ITA another way than the paper's CIELAB formula, by a variant a
task folder registers (``ita_variants`` of its ``REGISTRATIONS``):
``haar:dalleval-release`` uses the released DALL-Eval code's ITA arithmetic (see docs/dalleval.md).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from benchmark.annotate.registry import AnnotateContext, Annotator, AnnotatorKind, WorkItem
from benchmark.annotate.skin_tone import (
    DEFAULT_ITA_VARIANT,
    ITA_VARIANTS,
    FaceDetector,
    HaarFaceDetector,
    SkinToneAnnotator,
    WholeImageFaceDetector,
    ita_variants,
)
from benchmark.registries import Registrations

__all__ = ["SkinToneLabelAnnotator", "skin_tone_annotator", "DEFAULT_SKIN_TONE"]

DEFAULT_SKIN_TONE = "haar"


def skin_tone_annotator(skin_tone: Any):
    """A ``SkinToneAnnotator`` for an option value (see the module docstring)."""
    if isinstance(skin_tone, SkinToneAnnotator):
        return skin_tone
    if isinstance(skin_tone, FaceDetector):
        return SkinToneAnnotator(skin_tone)
    name, _, variant = str(skin_tone).strip().lower().partition(":")
    if variant and variant not in ITA_VARIANTS and variant not in ita_variants():
        raise ValueError(f"unknown ITA variant {variant!r} in skin-tone annotator {skin_tone!r}: use one of "
                         f"{', '.join(ITA_VARIANTS)}")
    if name in ("haar", "opencv-haar"):
        return SkinToneAnnotator(HaarFaceDetector(), ita_variant=variant or DEFAULT_ITA_VARIANT)
    if name in ("whole-image", "whole_image"):
        return SkinToneAnnotator(WholeImageFaceDetector(), ita_variant=variant or DEFAULT_ITA_VARIANT)
    others = [f"':{v.name}' for {v.help}" for v in ita_variants().values() if v.name != DEFAULT_ITA_VARIANT]
    raise ValueError(f"unknown skin-tone annotator {skin_tone!r}: use haar, whole-image"
                     + (f" (optionally {', '.join(others)})" if others else "") + " or none")


class SkinToneLabelAnnotator(Annotator):
    """One row per image: whether a face was found, its ITA and MST, the number of faces.

    Its model is the :class:`~benchmark.annotate.skin_tone.SkinToneAnnotator` built from the
    option; the stage runs that model's ``prepare_images`` (the whole measurement) on its decode
    threads, so the rows of a batch are ready when it reaches :meth:`annotate`."""

    kind = "skin_tone"
    label_file = "skin_tone"
    inputs = "pixels"
    model_key = "skin_tone"

    def __init__(self, model: Any, params: Mapping[str, Any]):
        annotator = skin_tone_annotator(model)
        super().__init__(annotator, params)
        self.annotator = annotator

    def keys(self, row: Mapping[str, Any], ctx: AnnotateContext) -> list[tuple]:
        return [(str(row["probe_id"]), self.name)]

    def annotate(self, items: Sequence[WorkItem], ctx: AnnotateContext) -> list[dict]:
        measured = ctx.prepared(self.model_key, self.model, [it.probe_id for it in items])
        if measured is None:  # not measured ahead on a decode thread: measure here
            measured = self.annotator.prepare_images([it.image for it in items])
        rows = []
        for it, (res, n_faces) in zip(items, measured):
            rows.append({"probe_id": it.probe_id, "face_found": n_faces > 0,
                         "ita": None if res is None else float(res.ita), "mst": None if res is None else int(res.mst),
                         "n_faces": int(n_faces), "annotator": self.name})
        return rows


#: a built-in run's random images hold no face for Haar to find: its skin-tone pipeline reads the
#: whole image instead, so every stage runs (the tones are as meaningless as the images)
BUILTIN_SKIN_TONE = "whole-image"

REGISTRATIONS = Registrations(annotators=(AnnotatorKind(
    "skin_tone", SkinToneLabelAnnotator, option="skin_tone",
    default=lambda builtin: BUILTIN_SKIN_TONE if builtin else DEFAULT_SKIN_TONE,
    help="face detector for skin tone: haar (default; whole-image for builtin models), whole-image or none"),))
