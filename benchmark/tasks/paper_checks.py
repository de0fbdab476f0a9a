"""Recompute the numbers the papers print from the inputs the papers print.

A task declares its checks (``Task.paper_checks() -> list[PaperCheck]``, in its folder's
``paper_checks.py``). The tests assert every check passes; ``t2ibench reproduce`` (and
``make demo``) prints them as a table. The transcribed paper tables live in the task
folder's ``data/`` as CSV files, each with a header comment naming its table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from benchmark.tasks.registry import list_tasks


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


def task_data(module_file: str, name: str) -> Path:
    """``name`` in the ``data/`` folder beside ``module_file`` (a task folder's transcribed tables)."""
    return Path(module_file).with_name("data") / name


def checked_families() -> tuple[str, ...]:
    """The probe families whose task declares paper checks, in task order."""
    return tuple(t.family for t in list_tasks() if t.paper_checks is not None)


def all_checks(families: Sequence[str] | None = None) -> list[PaperCheck]:
    """The checks of every task (or of the tasks of ``families``), in task order."""
    chosen = checked_families() if families is None else tuple(families)
    out: list[PaperCheck] = []
    for task in list_tasks():
        if task.paper_checks is not None and task.family in chosen:
            out.extend(task.paper_checks())
    return out


def is_headline(check: PaperCheck) -> bool:
    """A check some task names among its paper's headline numbers (``Task.headline_checks``)."""
    return any(check.paper == paper and check.source.startswith(where) and check.quantity.startswith(quantity)
               for task in list_tasks() for paper, where, quantity in task.headline_checks)
