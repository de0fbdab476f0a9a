"""Audit requests for the tests: :func:`audit_request` builds the one object the runner takes
(benchmark.contract.audit_request) from the few values a test varies, and :func:`generate_into`
runs the generation stage of a model object over a probe table with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmark.contract.audit_request import AuditRequest, ModelChoice, ProbeChoice, Runtime
from benchmark.runner import generate

AUTO = "auto"


def audit_request(run_dir: str | Path, model: str, *, suites=None, limit: int | None = None,
                  batch_size: int | str = AUTO, settings: dict | None = None, revision: str | None = None,
                  progress: bool = False, **runtime: Any) -> AuditRequest:
    """A request of ``model`` into ``run_dir``; ``runtime``: device, dtype, compile, offload."""
    return AuditRequest(run_dir, ModelChoice(model, revision=revision, settings=settings or {}),
                        probes=ProbeChoice(suites=suites, limit_per_suite=limit),
                        runtime=Runtime(batch_size=batch_size, **runtime), progress=progress)


def generate_into(run_dir: str | Path, model: Any, probes, *, batch_size: int | str = AUTO,
                  limit: int | None = None, spec: str | None = None, **hooks: Any):
    """``generate`` of ``model`` (recorded as ``spec``, default its ``model_id``) over ``probes``;
    ``hooks``: ``state``, ``timer``, ``overlap_writes``."""
    request = audit_request(run_dir, spec or model.model_id, limit=limit, batch_size=batch_size)
    return generate(request, model, probes, **hooks)
