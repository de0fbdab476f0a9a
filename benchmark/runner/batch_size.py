"""The generation batch size: a number, or ``auto`` (the default), resolved once per run.

``auto`` asks the model for the largest batch that fits its device
(:meth:`DiffusersTextToImage.auto_batch_size`, a memory probe on CUDA); a model without a
probe (CPU, MPS, Python callables) gets :data:`DEFAULT_BATCH_SIZE`, today's default, so on a
CPU nothing changes. The size is chosen once per run folder: a resumed ``auto`` run reuses
the size recorded in run_config.json, because on a GPU pixels depend on the batch size
(every batch is padded to it) and a resume must write the same bytes.

:func:`resolve_batch_size` turns what was asked (parsed by :func:`benchmark.cli_types.batch_size`)
into one :class:`BatchSize`, which generation uses and records (:meth:`BatchSize.record`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmark.contract import run_folder as rf
from benchmark.cli_types import AUTO  # the one spelling of "auto", the command line's
from benchmark.cli_types import batch_size as parse_batch_size  # the one reading of a batch size

__all__ = ["AUTO", "DEFAULT_BATCH_SIZE", "BatchSize", "parse_batch_size", "resolve_batch_size"]

DEFAULT_BATCH_SIZE = 4


@dataclass(frozen=True)
class BatchSize:
    """The batch size a run generates with: ``size``, and ``auto``: how ``--batch-size auto``
    chose it (None when a number was asked for)."""

    size: int
    auto: dict | None = None

    @property
    def probed(self) -> bool:
        """Whether a memory probe chose the size (it is then timed as its own stage)."""
        return bool(self.auto) and "free_gib" in self.auto

    def record(self) -> dict:
        """run_config.json's fields: ``batch_size`` (recorded, not checked: CPU images do not
        depend on it; on a GPU an ``auto`` resume reuses it), and for ``auto``
        ``batch_size_requested`` and ``batch_size_auto``."""
        fields: dict = {"batch_size": int(self.size)}
        if self.auto is not None:
            fields["batch_size_requested"] = AUTO
            fields["batch_size_auto"] = json.loads(json.dumps(self.auto, default=str))
        return fields


def resolve_batch_size(requested: Any, model: Any, run_dir: str | Path | None = None) -> BatchSize:
    """The :class:`BatchSize` for ``requested`` (a number or ``auto``) with ``model`` in ``run_dir``."""
    requested = parse_batch_size(requested)
    if requested != AUTO:
        return BatchSize(int(requested))
    recorded = rf.read_run_config(Path(run_dir)) if run_dir is not None else None
    if recorded and recorded.get("batch_size_requested") == AUTO and recorded.get("batch_size"):
        return BatchSize(int(recorded["batch_size"]), {**(recorded.get("batch_size_auto") or {}),
                                                       "rule": "auto: the size this run folder was started with"})
    probe = getattr(model, "auto_batch_size", None)
    found = probe() if callable(probe) else None
    if found is None:
        return BatchSize(DEFAULT_BATCH_SIZE, {"rule": f"auto: {DEFAULT_BATCH_SIZE} (no memory probe on this device "
                                                      f"or model; images are batch-invariant there)"})
    batch, info = found
    return BatchSize(int(batch), info if info else None)
