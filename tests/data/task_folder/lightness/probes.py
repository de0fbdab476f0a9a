"""The lightness suite: each prompt of probes.yaml, ``n_samples`` images each."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmark.papers import Paper
from benchmark.probes.registry import SuiteSpec, expand_samples, load_config

FAMILY = "lightness"
PAPER = Paper(key="lightness", title="A Toy Paper on Image Lightness", authors="Ada Example", venue="Test Fixtures 2026",
              url="https://example.org/lightness",
              bibtex="@misc{example2026lightness, title={A Toy Paper on Image Lightness}}")
PROBE_CONFIG = Path(__file__).with_name("probes.yaml")


def build_shapes(config: dict | None = None) -> pd.DataFrame:
    config = config or load_config(FAMILY)
    return expand_samples("lightness_shapes", [dict(p) for p in config["prompts"]], int(config["n_samples"]), ["shape"])


SUITES = (SuiteSpec("lightness_shapes", family=FAMILY, paper="lightness", summary="Shapes by day and night.",
                    build=build_shapes),)
