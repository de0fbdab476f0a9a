"""The runner: joins probes, models, annotators and scores into one audit of a model.

One :class:`AuditRequest` (``benchmark.contract.audit_request``) says what to audit;
``run_audit(request)`` runs every stage, ``run_generation(request)`` only the first.
Generation (``benchmark.runner.generate``) writes the images of a run folder; see
``docs/runner.md`` for the request, the folder layout, atomic batches, resume and sharding.
"""

from benchmark.contract.audit_request import AuditRequest, ModelChoice, ProbeChoice, Runtime, SuppliedImages
from benchmark.runner.batch_size import DEFAULT_BATCH_SIZE
from benchmark.runner.generate import GenerationSummary, generate, run_generation
from benchmark.runner.pipeline import AuditOutcome, run_audit
from benchmark.runner.probe_choice import build_probes, choose_probes, limit_probes
from benchmark.contract.run_folder import VOLATILE_COLUMNS, RunFolderError, read_manifest, scan_batches

__all__ = [
    "AuditOutcome", "AuditRequest", "DEFAULT_BATCH_SIZE", "GenerationSummary", "ModelChoice", "ProbeChoice",
    "RunFolderError", "Runtime", "SuppliedImages", "VOLATILE_COLUMNS", "build_probes", "choose_probes", "generate",
    "limit_probes", "read_manifest", "run_audit", "run_generation", "scan_batches",
]
