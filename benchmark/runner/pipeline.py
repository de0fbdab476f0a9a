"""The whole audit: generate -> annotate -> score -> report, each stage from the files
of the stage before in RUN_DIR (so ``t2ibench annotate`` / ``score`` / ``report`` can
re-run one stage alone).

Under ``accelerate launch`` every process runs generation on its shard; the later
stages run on the main process only, once every shard is written.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from benchmark.contract.model_specs import is_builtin
from benchmark.contract.results import BUILTIN_WARNING, RESULTS_FILE
from benchmark.runner.batch_size import AUTO
from benchmark.runner.annotate import annotate_run
from benchmark.runner.generate import run_generation
from benchmark.runner.processes import process_state
from benchmark.runner.preflight import preflight
from benchmark.runner.report import write_report
from benchmark.runner.score import score_run
from benchmark.tasks.registry import load_plugins


@dataclass
class AuditOutcome:
    run_dir: Path
    results_path: Path | None = None
    report_path: Path | None = None
    main_process: bool = True
    stage_seconds: dict = field(default_factory=dict)


def run_audit(run_dir: str | Path, model_spec: str, suites: Sequence[str], *, limit_per_suite: int | None = None,
              batch_size: int | str = AUTO, revision: str | None = None, device: str | None = None,
              dtype: str | None = None, overrides: dict | None = None, annotators: dict | None = None,
              n_resamples: int = 1000, progress: bool = True, probes: str | None = None,
              probes_revision: str | None = None, compile: bool | None = None, offload: str | None = None,
              **inputs) -> AuditOutcome:
    """Audit ``model_spec`` on ``suites`` of the probe set ``probes`` (None: the built-in probes;
    a probe dataset folder or a Hub dataset ID at ``probes_revision``) into ``run_dir``;
    ``inputs``: the task inputs by name (:mod:`benchmark.tasks.inputs`), e.g. a reference dataset
    a task scores against (see :func:`benchmark.runner.generate.run_generation`). Returns where
    results and report are."""
    load_plugins()  # the task folders fill the registries before any is read
    run_dir = Path(run_dir)
    # every input checked before the first image; nothing written if one is wrong
    plan = preflight(run_dir, model_spec, suites, limit_per_suite=limit_per_suite, revision=revision,
                     device=device, dtype=dtype, overrides=overrides, annotators=annotators,
                     probes=probes, probes_revision=probes_revision, offload=offload, **inputs)
    if is_builtin(model_spec):
        print(f"WARNING: {model_spec}: {BUILTIN_WARNING}", file=sys.stderr)
    if progress and process_state().is_main_process:
        print(plan.format(), file=sys.stderr)
    gen = run_generation(run_dir, model_spec, suites, limit_per_suite, batch_size, revision=revision, device=device,
                         dtype=dtype, overrides=overrides, progress=progress, probes=probes,
                         probes_revision=probes_revision, chosen=plan.chosen, compile=compile, offload=offload,
                         **inputs)
    outcome = AuditOutcome(run_dir=run_dir, stage_seconds={"generate": sum(gen.timings.values())})
    if not process_state().is_main_process:
        outcome.main_process = False
        return outcome
    return finish_audit(run_dir, annotators=annotators, device=device, n_resamples=n_resamples, progress=progress,
                        outcome=outcome)


def finish_audit(run_dir: str | Path, *, annotators: dict | None = None, device: str | None = None,
                 n_resamples: int = 1000, progress: bool = True, outcome: AuditOutcome | None = None) -> AuditOutcome:
    """The stages after generation: annotate, score, report."""
    import time

    run_dir = Path(run_dir)
    outcome = outcome or AuditOutcome(run_dir=run_dir)
    t0 = time.perf_counter()
    annotate_run(run_dir, device=device, progress=progress, annotators=annotators)
    outcome.stage_seconds["annotate"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    score_run(run_dir, n_resamples=n_resamples)
    outcome.stage_seconds["score"] = time.perf_counter() - t0
    outcome.results_path = run_dir / RESULTS_FILE
    t0 = time.perf_counter()
    outcome.report_path = Path(write_report(run_dir))
    outcome.stage_seconds["report"] = time.perf_counter() - t0
    return outcome
