"""The processes a generation runs in: accelerate's ``PartialState`` under ``accelerate launch``
(several processes share the probes), a single-process stand-in otherwise (:func:`process_state`)."""

from __future__ import annotations

import os


class _SingleProcess:
    """Stand-in for accelerate's PartialState when there is one process."""

    num_processes = 1
    process_index = 0
    is_main_process = True
    is_local_main_process = True
    device = None

    def wait_for_everyone(self) -> None:
        pass

    def split_between_processes(self, inputs):  # pragma: no cover - trivial
        from contextlib import nullcontext

        return nullcontext(inputs)


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def process_state():
    """accelerate's ``PartialState`` when launched with several processes, else a single-process stand-in.

    Several processes on CPU (torch.distributed with gloo) need ``PartialState(cpu=True)``:
    it is asked for when ``ACCELERATE_USE_CPU`` is set or no CUDA device is visible.
    """
    world = max(int(os.environ.get(k, "1") or 1) for k in ("WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE"))
    if world <= 1:
        # One process (plain python, or `accelerate launch` of a single process): no distributed state.
        return _SingleProcess()
    try:
        from accelerate import PartialState
    except ImportError:
        raise RuntimeError(f"{world} processes were launched but accelerate is not installed: "
                           f"pip install accelerate") from None
    import torch

    cpu = _env_flag("ACCELERATE_USE_CPU") or not torch.cuda.is_available()
    state = PartialState(cpu=cpu)
    if state.num_processes != world:
        raise RuntimeError(f"{world} processes were launched but accelerate sees {state.num_processes}; "
                           f"launch with `accelerate launch --multi_gpu --num_processes N` or torchrun")
    return state
