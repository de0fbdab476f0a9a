"""The runner: joins probes, models, annotators and scores into one audit of a model.

Generation (``benchmark.runner.generate``) writes the images of a run folder; see
``docs/runner.md`` for the folder layout, atomic batches, resume and sharding.
"""

from benchmark.runner.batch_size import DEFAULT_BATCH_SIZE
from benchmark.runner.generate import GenerationSummary, generate, run_generation
from benchmark.runner.probe_choice import build_probes, limit_probes
from benchmark.contract.run_folder import VOLATILE_COLUMNS, RunFolderError, read_manifest, scan_batches

__all__ = [
    "DEFAULT_BATCH_SIZE", "GenerationSummary", "RunFolderError", "VOLATILE_COLUMNS", "build_probes", "generate",
    "limit_probes", "read_manifest", "run_generation", "scan_batches",
]
