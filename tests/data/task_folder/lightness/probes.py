"""The lightness suite: each prompt of probes.yaml, ``n_samples`` images each."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmark.papers import Paper, register_paper
from benchmark.probes.registry import expand_samples, load_config, register_probe_config, register_suite

FAMILY = "lightness"
PAPER = register_paper(Paper(key="lightness", title="A Toy Paper on Image Lightness", authors="Ada Example",
                             venue="Test Fixtures 2026", url="https://example.org/lightness",
                             bibtex="@misc{example2026lightness, title={A Toy Paper on Image Lightness}}"))
PROBE_CONFIG = register_probe_config(FAMILY, Path(__file__).with_name("probes.yaml"))


@register_suite("lightness_shapes", family=FAMILY, paper="lightness", summary="Shapes by day and night.")
def build_shapes(config: dict | None = None) -> pd.DataFrame:
    config = config or load_config(FAMILY)
    return expand_samples("lightness_shapes", [dict(p) for p in config["prompts"]], int(config["n_samples"]), ["shape"])
