"""``--pilot``: the smallest change a comparison of two audits of the planned size detects, from a
pilot audit's own labels (``t2ibench run / generate --pilot RESULTS_JSON``, docs/compare.md).

A pilot's results.json carries the label rows its scores read (its ``pairing`` section). The
plan fits a model of those labels (:class:`benchmark.runner.simulate.Fit`: per slot and prompt,
with prompts the pilot saw once borrowing from the others), draws pairs of audits of one model at
the planned design (the planned probes, the real ``--limit`` rule, every prompt's own number of
images: a prompt of one image included), scores them with the tasks' own code and takes the
spread of each score's tested quantity (B's badness minus A's): the MDD is 2.80 x that spread
(power 0.8 at alpha 0.05, one test). Images of a pair are drawn independently, as two audits with
uncontrolled seeds: the paired comparison of the same probes and seeds can only detect less, so
the plan never promises more than the comparison gives. Suites whose labels the model does not
draw (CLIP embeddings, detector queries: scores that are means over many images) are planned
from the pilot's interval as before (:func:`benchmark.scores.design.planned_mdd`).
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np
import pandas as pd

from benchmark.runner.simulate import Fit, Layout, draw_labels, image_effects, layout, score_copies
from benchmark.scores.design import mdd_factor
from benchmark.scores.metadata import get_metadata

__all__ = ["PAIRS", "planned_mdd_from_labels"]

#: pairs of audits the plan draws (the MDD's spread to about 10%)
PAIRS = 50


def planned_mdd_from_labels(pilot_probes: pd.DataFrame, pilot_labels: Mapping[str, pd.DataFrame | None],
                            planned_probes: pd.DataFrame, *, pairs: int = PAIRS, seed: int = 0,
                            config: Mapping | None = None,
                            layout_of: Callable[[pd.DataFrame], Layout] = layout) -> list[dict]:
    """Per score entry of the planned audit: ``{"name", "suite", "subset", "estimator", "annotator",
    "mdd" or "reason", "pilot_images", "planned_images"}`` (see the module doc); ``config``: the
    planned run's config (its probe set's record), ``layout_of``: how the planned labels are laid
    out (default :func:`benchmark.runner.simulate.layout`)."""
    fit = Fit.of(pilot_probes, pilot_labels)
    lay = layout_of(planned_probes)
    rng = np.random.default_rng(seed)
    sets = []
    for _ in range(pairs):
        values = fit.cells(lay, rng)
        effects = image_effects(lay, values, rng)
        sets += [draw_labels(lay, values, effects, rng), draw_labels(lay, values, effects, rng)]
    read_by: dict = {}
    scored = score_copies(lay, sets, config, read_by=read_by)
    pilot_n = pilot_probes["suite"].value_counts()
    planned_n = planned_probes["suite"].value_counts()
    factor = mdd_factor()
    out = []
    for key, v in scored.items():
        name, suite = key[0], key[1]
        meta = get_metadata(name)
        q = meta.badness(v[1::2]) - meta.badness(v[0::2])
        row = {"name": name, "suite": suite, "subset": key[2], "estimator": key[3], "annotator": key[4],
               "pilot_images": int(pilot_n.get(suite, 0)), "planned_images": int(planned_n.get(suite, 0))}
        q = q[np.isfinite(q)]
        files = read_by.get(key) or ("",)
        if (files[-1], suite) in fit.problems:  # the label file it reads (the last read before it)
            row["reason"] = fit.problems[(files[-1], suite)]
        elif len(q) < max(3, pairs // 2):
            row["reason"] = "undefined on most simulated audits of the planned size"
        else:
            row["mdd"] = factor * float(np.std(q, ddof=1))
        out.append(row)
    return out
