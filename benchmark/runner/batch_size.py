"""The generation batch size: a number, or ``auto`` (the default).

``auto`` asks the model for the largest batch that fits its device
(:meth:`DiffusersTextToImage.auto_batch_size`, a memory probe on CUDA); a model without a
probe (CPU, MPS, Python callables) gets :data:`DEFAULT_BATCH_SIZE`, today's default, so on a
CPU nothing changes. The size is chosen once per run folder: a resumed ``auto`` run reuses
the size recorded in run_config.json, because on a GPU pixels depend on the batch size
(every batch is padded to it) and a resume must write the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmark.contract import run_folder as rf
from benchmark.cli_types import AUTO  # the one spelling of "auto", the command line's
from benchmark.cli_types import batch_size as parse_batch_size  # the one reading of a batch size

__all__ = ["AUTO", "DEFAULT_BATCH_SIZE", "parse_batch_size", "resolve_batch_size"]

DEFAULT_BATCH_SIZE = 4


def resolve_batch_size(requested: Any, model: Any, run_dir: str | Path | None = None) -> tuple[int, dict]:
    """``(batch size, how it was chosen)``; the dict is empty for an explicit number."""
    requested = parse_batch_size(requested)
    if requested != AUTO:
        return int(requested), {}
    recorded = rf.read_run_config(Path(run_dir)) if run_dir is not None else None
    if recorded and recorded.get("batch_size_requested") == AUTO and recorded.get("batch_size"):
        return int(recorded["batch_size"]), {**(recorded.get("batch_size_auto") or {}),
                                             "rule": "auto: the size this run folder was started with"}
    probe = getattr(model, "auto_batch_size", None)
    found = probe() if callable(probe) else None
    if found is None:
        return DEFAULT_BATCH_SIZE, {"rule": f"auto: {DEFAULT_BATCH_SIZE} (no memory probe on this device or "
                                            f"model; images are batch-invariant there)"}
    batch, info = found
    return int(batch), info
