"""What the timing scripts generate, read from the registries: a script of bench/ names no paper,
suite or score (a project rule, checked by tests/test_layers.py), so the suites it times are
picked by a rule here, and each script prints the suites the rule picked.

The generation timings (``generation.py``, ``runner_overhead.py``, ``gpu_families.py``) use the
prompts of the first suites of the first registered task (the task folders in folder order):
short prompts of one person, the kind of prompt most suites have.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchmark.contract.audit_request import AuditRequest, ProbeChoice, Runtime
from benchmark.probes import get_suite, list_suites
from benchmark.tasks import list_tasks

__all__ = ["suites_of_task", "prompt_suites", "add_suites_option", "generation_request"]


def suites_of_task(task) -> list[str]:
    """The suites ``task`` scores (those of its probe family), in registration order."""
    return [s for s in list_suites() if get_suite(s).family == task.family]


def prompt_suites(n: int) -> list[str]:
    """The first ``n`` suites of the first registered task."""
    return suites_of_task(list_tasks()[0])[:n]


def add_suites_option(ap: argparse.ArgumentParser, n: int, what: str) -> None:
    """``--suites`` (any registered suites), by default :func:`prompt_suites` of ``n``."""
    default = prompt_suites(n)
    ap.add_argument("--suites", nargs="+", default=default, choices=list_suites(), metavar="SUITE",
                    help=f"{what} (default: the first {n} suite{'s' if n > 1 else ''} of the first registered "
                         f"task, {' '.join(default)})")


def generation_request(run_dir: str | Path, model: Any, *, batch_size: int | str, limit: int | None = None,
                       spec: str | None = None) -> AuditRequest:
    """The audit request the timing scripts hand ``generate`` with a loaded ``model`` (recorded as
    ``spec``, default its ``model_id``), no progress bars."""
    return AuditRequest(run_dir, spec or model.model_id, probes=ProbeChoice(limit_per_suite=limit),
                        runtime=Runtime(batch_size=batch_size), progress=False)
