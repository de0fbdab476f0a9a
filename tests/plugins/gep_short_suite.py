"""A new suite of an existing task, as a user would add it: GEP's neutral setting over four
contexts and two images per prompt, registered in the ``gep`` family so the GEP task scores it.
No scorer and no runner edit: the rows carry the fields GEP reads (``gender``, ``setting``,
``annotated_attributes``)."""

from __future__ import annotations

import pandas as pd

from benchmark.tasks.gep import probes as gep
from benchmark.probes.registry import expand_samples
from benchmark.registries import register_suite


@register_suite("gep_neutral_short", family="gep", paper="gep",
                summary="GEP neutral setting on its first four contexts, two images per prompt.")
def build_short(config: dict) -> pd.DataFrame:
    short = {**config, "contexts": list(config["contexts"])[:4]}
    return expand_samples("gep_neutral_short", gep.neutral_prompts(short), 2, ["gender", "context"])
