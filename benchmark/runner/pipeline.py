"""The whole audit: generate -> annotate -> score -> report, each stage from the files
of the stage before in RUN_DIR (so ``t2ibench annotate`` / ``score`` / ``report`` can
re-run one stage alone).

Under ``accelerate launch`` every process runs generation on its shard; the later
stages run on the main process only, once every shard is written.
"""

from __future__ import annotations

import sys

from benchmark.contract.audit_request import AuditRequest
from benchmark.contract.model_specs import is_builtin
from benchmark.contract.results import BUILTIN_WARNING
from benchmark.runner.finish import AuditOutcome, finish_audit
from benchmark.runner.generate import run_generation
from benchmark.runner.processes import process_state
from benchmark.runner.preflight import preflight
from benchmark.runner.supplied_images import run_supplied_audit
from benchmark.tasks.registry import load_plugins

__all__ = ["AuditOutcome", "finish_audit", "run_audit"]


def run_audit(request: AuditRequest) -> AuditOutcome:
    """Audit ``request.model`` on ``request.probes`` into ``request.run_dir`` (images made
    elsewhere, ``request.images``: :func:`benchmark.runner.supplied_images.run_supplied_audit`).
    Every input is checked first (:func:`benchmark.runner.preflight.preflight`: nothing is written
    if one is wrong); returns where results and report are."""
    load_plugins()  # the task folders fill the registries before any is read
    if request.images is not None:
        return run_supplied_audit(request)
    plan = preflight(request)
    if is_builtin(request.model_spec):
        print(f"WARNING: {request.model_spec}: {BUILTIN_WARNING}", file=sys.stderr)
    if request.progress and process_state().is_main_process:
        print(plan.format(), file=sys.stderr)
    elif process_state().is_main_process:  # --quiet: no plan, but what nobody chose is still said
        for line in plan.warnings():
            print(f"WARNING: {line}", file=sys.stderr)
    gen = run_generation(request, chosen=plan.chosen)
    outcome = AuditOutcome(run_dir=request.run_dir, stage_seconds={"generate": sum(gen.timings.values())})
    if not process_state().is_main_process:
        outcome.main_process = False
        return outcome
    return finish_audit(request, outcome)
