"""A toy task registered from outside the package, as a user's plugin would be: its own
suite, label file, annotator, score and task. ``t2ibench --plugin toy_task run ...`` audits it
with no edit to the runner.

The annotator measures each image's mean brightness (0-255) from its pixels; the scorer
reports the mean over images, with a bootstrap interval, as ``toy_brightness``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmark.annotate.label_files import LabelFile
from benchmark.annotate.registry import Annotator, AnnotatorKind
from benchmark.probes.registry import expand_samples
from benchmark.registries import register_annotator, register_label_file, register_score, register_suite, register_task
from benchmark.scores.bootstrap import bootstrap_ci
from benchmark.scores.metadata import ScoreMetadata
from benchmark.tasks import Task

PROMPTS = ["a red square", "a blue circle", "a green field", "a night sky"]

register_label_file(LabelFile("brightness", {"probe_id": "string", "brightness": "float64", "annotator": "string"},
                              ("probe_id", "annotator"), "mean pixel value of each image (toy task)"))


@register_suite("toy_brightness", family="toy", paper="gep", summary="Toy suite: four prompts, two images each.")
def build_toy(config: dict) -> pd.DataFrame:
    return expand_samples("toy_brightness", [{"prompt": p, "shape": p.split()[-1]} for p in PROMPTS], 2, ["shape"])


class BrightnessAnnotator(Annotator):
    kind = "brightness"
    label_file = "brightness"
    inputs = "pixels"

    def keys(self, row, ctx):
        return [(str(row["probe_id"]), self.name)]

    def annotate(self, items, ctx):
        return [{"probe_id": it.probe_id, "brightness": float(np.asarray(it.image, dtype=np.float64).mean()),
                 "annotator": self.name} for it in items]


register_annotator(AnnotatorKind("brightness", BrightnessAnnotator, option="brightness",
                                 default=lambda builtin: "mean-pixel", help="toy brightness annotator"))
register_score(ScoreMetadata(
    name="toy_brightness", display_name="Toy brightness",
    description="Mean pixel value of the images (a toy score).", paper="gep", min_value=0.0, max_value=255.0,
    lower_is_better=None, ideal=None))


def score_toy(ctx, suites):
    for suite in suites:
        frame, why = ctx.labels_for("brightness", suite)
        if frame is None:
            ctx.not_scored(suite, why)
            continue
        values = frame["brightness"].to_numpy(dtype=float)
        ci = bootstrap_ci(lambda idx: float(values[idx].mean()), len(values), **ctx.options.ci_kwargs()).to_dict() \
            if ctx.options.n_resamples else None
        ctx.add("toy_brightness", suite, float(values.mean()), ci=ci, n=len(values), annotator=frame["annotator"].iloc[0])
        ctx.scored(suite, len(values))


register_task(Task(name="toy", family="toy", papers=("gep",), annotators={"brightness": None}, score=score_toy,
                   description="toy: mean brightness"))
