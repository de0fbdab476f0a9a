"""Recompute the numbers the papers print from the inputs the papers print.

Each family module (``gep``, ``dalleval``, ``pst``, ``mcas``) exposes ``checks() ->
list[PaperCheck]``. The tests assert every check passes; ``t2ibench reproduce``
(and ``make demo``) prints them as a table. The transcribed paper tables live in
``data/`` as CSV files, each with a header comment naming its table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import import_module, resources
from pathlib import Path

FAMILIES = ("gep", "dalleval", "pst", "mcas")


@dataclass(frozen=True)
class PaperCheck:
    paper: str  # key in benchmark.papers.PAPERS
    source: str  # where the printed number is, e.g. "Table 3, SD neutral"
    quantity: str  # what is recomputed
    printed: float
    recomputed: float
    tolerance: float  # printed precision (half a unit of the last printed digit, or as stated)

    @property
    def passed(self) -> bool:
        return math.isfinite(self.recomputed) and abs(self.recomputed - self.printed) <= self.tolerance + 1e-12


def data_path(name: str) -> Path:
    return Path(str(resources.files("benchmark.paper_checks") / "data" / name))


def all_checks(families: tuple[str, ...] = FAMILIES) -> list[PaperCheck]:
    out: list[PaperCheck] = []
    for fam in families:
        out.extend(import_module(f"benchmark.paper_checks.{fam}").checks())
    return out
