"""The stages after generation, run on the main process once every image is written:
annotate, score, report (:func:`finish_audit`), and what an audit returns (:class:`AuditOutcome`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmark.contract.audit_request import AuditRequest
from benchmark.contract.results import RESULTS_FILE
from benchmark.runner.annotate import annotate_run
from benchmark.runner.report import write_report
from benchmark.runner.score import score_run


@dataclass
class AuditOutcome:
    run_dir: Path
    results_path: Path | None = None
    report_path: Path | None = None
    main_process: bool = True
    stage_seconds: dict = field(default_factory=dict)


def finish_audit(request: AuditRequest, outcome: AuditOutcome | None = None) -> AuditOutcome:
    """The stages after generation: annotate, score, report (with the request's annotators,
    device and resamples)."""
    run_dir = request.run_dir
    outcome = outcome or AuditOutcome(run_dir=run_dir)
    t0 = time.perf_counter()
    annotate_run(run_dir, device=request.runtime.device, progress=request.progress,
                 annotators=dict(request.annotators))
    outcome.stage_seconds["annotate"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    score_run(run_dir, n_resamples=request.n_resamples, allow_degenerate=request.allow_degenerate)
    outcome.stage_seconds["score"] = time.perf_counter() - t0
    outcome.results_path = run_dir / RESULTS_FILE
    t0 = time.perf_counter()
    outcome.report_path = Path(write_report(run_dir))
    outcome.stage_seconds["report"] = time.perf_counter() - t0
    return outcome
