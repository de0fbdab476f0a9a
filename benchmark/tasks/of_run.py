"""The tasks of a run: which task scores which of a run's suites, read from the run folder.

One answer for every stage that asks (annotate, score, report) and for the leaderboard, so
none of them derives it again from ``run_config.json``. A suite's probe family is the one its
probes record names (``run_config.json`` ``probes.suites``), else the one it is registered
with; the task of a family scores it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from benchmark.probes.source import suite_families
from benchmark.contract.run_folder import CONFIG_FILE
from benchmark.tasks.context import ScoringContext, ScoringOptions
from benchmark.tasks.registry import Task, tasks_for_suites

__all__ = ["ReportSection", "score_tables", "tasks_of_run", "report_sections", "section_of"]


@dataclass(frozen=True)
class ReportSection:
    """One section of the report (and of a model's plots on the leaderboard): a task and its
    suites in one run; ``key == "other"`` and no task for suites no task scores."""

    key: str
    title: str
    paper: str  # benchmark.papers key
    suites: tuple[str, ...]
    task: Task | None = None


def _run_config(run_dir: str | Path) -> dict:
    # Lenient: a report or a leaderboard page of a run whose config is missing or unreadable
    # still lists its suites (those without a recorded family go by their registration).
    path = Path(run_dir) / CONFIG_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except ValueError:
        return {}


def tasks_of_run(run_dir: str | Path, suites: Sequence[str] | None = None,
                 run_config: Mapping[str, Any] | None = None) -> list[tuple[Task, list[str]]]:
    """(task, its suites) for ``suites`` of the run (default: the suites of its config), in task
    order; ``run_config`` when the caller has already read it."""
    config = dict(run_config) if run_config is not None else _run_config(run_dir)
    chosen = list(suites) if suites is not None else [str(s) for s in config.get("suites") or []]
    return tasks_for_suites(suite_families(config.get("probes"), chosen))


def score_tables(config: Mapping[str, Any], manifest: pd.DataFrame, labels: Callable[[str], pd.DataFrame | None],
                 options: ScoringOptions, probes: set | None = None) -> ScoringContext:
    """Score a run held in memory (a results file rebuilt, a simulated audit) by its tasks: its
    run config, manifest (``probes``: only those probe ids) and ``labels(kind)``, the rows of a
    label file (None: the run has none). Nothing is read from or written to disk."""
    ctx = ScoringContext(Path(), options, probes, config=dict(config), manifest=manifest, label_source=labels)
    for task, suites in tasks_of_run(Path(), list(ctx.status), ctx.config):
        ctx.read = []
        task.score(ctx, suites)
    return ctx


def report_sections(run_dir: str | Path, results: Mapping) -> list[ReportSection]:
    """The report's sections for a run and its results: one per task in task order, each with
    its suites; the suites no task scores last, as ``"other"``."""
    suites = list(dict.fromkeys([str(st.get("name")) for st in results.get("suites") or []]
                                + [str(e.get("suite")) for e in results.get("scores") or []]))
    out = [ReportSection(task.name, task.report.title if task.report else task.name, task.papers[0], tuple(its), task)
           for task, its in tasks_of_run(run_dir, suites)]
    covered = {s for section in out for s in section.suites}
    rest = tuple(s for s in suites if s not in covered)
    if rest:
        out.append(ReportSection("other", "Other suites", "", rest))
    return out


def section_of(suite: Any, sections: Sequence[ReportSection]) -> ReportSection | None:
    return next((s for s in sections if str(suite) in s.suites), None)
