"""DALL-Eval paper checks (DALL-Eval, Cho et al., Sec. 4.2.4 and 5.3).

1. MAD reference values: Table 8 prints the MAD of a uniform and a one-hot distribution
   for gender (N = 2) and skin tone (N = 10), and Sec. 5.3 the MAD of 1-, 2-, 3- and
   10-hot distributions over the 10 Monk Skin Tone categories. Each is recomputed from
   per-image labels (9 images in each of the k "hot" categories, the other categories
   never predicted) with :func:`benchmark.tasks.dalleval.scores.mad_score`, the categories taken
   from the probe config.
2. Table 9: the "Woman - Man" rows are the printed woman and man attribute presence
   rates subtracted (:func:`benchmark.tasks.dalleval.scores.presence_difference`). Both inputs are
   rounded to 0.01, so their difference carries up to 0.01 of rounding: checked to 0.01.

The model rows of Tables 6-8 need the per-image detections, which the paper does not
print (its appendix tables are not in the text either).
"""

from __future__ import annotations

import pandas as pd

from benchmark.probes.registry import load_config
from benchmark.tasks.dalleval.scores import mad_score, presence_difference
from benchmark.tasks.dalleval.probes import gender_categories, skin_tone_categories
from benchmark.tasks.paper_checks import PaperCheck, task_data

IMAGES_PER_CATEGORY = 9


def _read(name: str) -> pd.DataFrame:
    return pd.read_csv(task_data(__file__, name), comment="#")


def n_hot_labels(categories: list[str], k: int, per_category: int = IMAGES_PER_CATEGORY) -> list[str]:
    """Labels whose distribution is k-hot: the first k categories equally often, the rest never."""
    return [c for c in categories[:k] for _ in range(per_category)]


def _mad_reference_checks() -> list[PaperCheck]:
    config = load_config("dalleval")
    cats = {2: gender_categories(config), 10: skin_tone_categories(config)}
    out = []
    for row in _read("dalleval_mad_reference.csv").itertuples(index=False):
        categories = cats[int(row.n_categories)]
        value = mad_score(n_hot_labels(categories, int(row.n_hot)), categories, n_resamples=0)["mad"]
        out.append(PaperCheck("dalleval", row.source, row.quantity, float(row.printed), value, float(row.tolerance)))
    return out


def _table9_checks() -> list[PaperCheck]:
    t = _read("dalleval_table9.csv")
    diff = presence_difference(t["woman"], t["man"])
    return [
        PaperCheck("dalleval", f"Table 9, {r.model}, Woman - Man", f"{r.attribute} presence, woman minus man prompts",
                   float(r.woman_minus_man), float(d), 0.01)
        for r, d in zip(t.itertuples(index=False), diff)
    ]


def checks() -> list[PaperCheck]:
    return _mad_reference_checks() + _table9_checks()
