"""The annotator this paper needs: each image's mean lightness (0-255) from its pixels."""

from __future__ import annotations

import numpy as np

from benchmark.annotate.label_files import LabelFile
from benchmark.annotate.registry import Annotator, AnnotatorKind

LABEL_FILE = LabelFile("lightness", {"probe_id": "string", "lightness": "float64", "annotator": "string"},
                       ("probe_id", "annotator"), "mean pixel value of each image (lightness task)")


class LightnessAnnotator(Annotator):
    kind = "lightness"
    label_file = "lightness"
    inputs = "pixels"

    def keys(self, row, ctx):
        return [(str(row["probe_id"]), self.name)]

    def annotate(self, items, ctx):
        return [{"probe_id": it.probe_id, "lightness": float(np.asarray(it.image.convert("L"), dtype=np.float64).mean()),
                 "annotator": self.name} for it in items]


KIND = AnnotatorKind("lightness", LightnessAnnotator, option="lightness", default=lambda builtin: "mean-luma",
                     help="lightness annotator (toy paper)")
