"""Speed settings of a diffusers pipeline on a CUDA GPU: memory layout, fused QKV
projections, ``torch.compile`` and the automatic batch size.

None of this runs on a CPU (or MPS): there the runner generates one image per call
(``batch_invariant``), uncompiled, exactly as before these settings existed.

What each setting does to pixels, relative to the plain pipeline on the same GPU (the
images stay deterministic; they are not bit-equal to an uncompiled fp32 loop):

* channels-last and fused QKV projections pick other cuDNN / cuBLAS kernels, whose
  rounding differs in the last bits;
* ``torch.compile`` fuses element-wise and normalisation kernels (Triton), which round
  differently from the eager kernels;
* the batch size: batched GEMMs and convolutions round differently for different batch
  sizes, so every batch is padded to one static size (``static_batch``) and the padded
  images are dropped: an image depends on that size, never on its neighbours or on where
  a resumed run restarts.

Resume promise (same settings, same machine, same bytes): the compile mode is
``default``: no timing-based GEMM autotuning (``max-autotune`` benchmarks candidate
kernels per process and may pick another one after a restart); the few Triton
configurations inductor still chooses at run time are cached on disk by inductor
(``TORCHINDUCTOR_CACHE_DIR``, by default under the system temp folder), so a resumed
process on the same machine reuses them: the design; not yet shown on a GPU (the command is
in docs/performance.md). CUDA graphs (mode ``reduce-overhead``) are an
option, measured in ``bench/generation.py``, not the default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "AUTO_MAX_BATCH",
    "COMPILE_MODES",
    "DEFAULT_COMPILE_MODE",
    "MEMORY_MARGIN",
    "apply_cuda_layout",
    "compile_pipeline",
    "probe_batch_size",
    "resolve_compile_mode",
]

#: the compile mode the runner uses on CUDA by default (see the module docstring for why)
DEFAULT_COMPILE_MODE = "default"
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
#: the automatic batch size never goes past this: the H200 sweep of 2026-11-26 gained 4%
#: from 16 to 32 images per batch, and larger batches only delay the first written batch.
AUTO_MAX_BATCH = 32
#: the share of the free GPU memory (after loading) the automatic batch may fill; the rest
#: is left for compiled kernels' workspaces and allocator fragmentation.
MEMORY_MARGIN = 0.8


def resolve_compile_mode(compile: bool | str | None, device) -> str | None:
    """The torch.compile mode to use, or None: ``None`` means on with
    :data:`DEFAULT_COMPILE_MODE` on CUDA and off elsewhere; False is off; a mode name is on."""
    if compile is None:
        return DEFAULT_COMPILE_MODE if device.type == "cuda" else None
    if compile is False:
        return None
    mode = DEFAULT_COMPILE_MODE if compile is True else str(compile)
    if mode not in COMPILE_MODES:
        raise ValueError(f"unknown torch.compile mode {mode!r}; use one of {', '.join(COMPILE_MODES)}")
    if device.type != "cuda":
        raise ValueError(f"torch.compile is only used on CUDA GPUs (device {device}); leave it off on this device")
    return mode


def apply_cuda_layout(pipe) -> dict[str, Any]:
    """Channels-last UNet and VAE, fused QKV projections; returns the settings to record."""
    import torch

    done: dict[str, Any] = {}
    for name in ("unet", "vae"):
        module = getattr(pipe, name, None)
        if module is not None:
            module.to(memory_format=torch.channels_last)
    done["channels_last"] = True
    fuse = getattr(pipe, "fuse_qkv_projections", None)
    if callable(fuse):
        try:
            fuse()
            done["fused_qkv"] = True
        except (AttributeError, NotImplementedError, ValueError) as err:  # e.g. added-KV attention processors
            done["fused_qkv"] = f"not fused ({type(err).__name__})"
    return done


def compile_pipeline(pipe, mode: str, *, vae_decoder: bool = False) -> dict[str, Any]:
    """``torch.compile`` the UNet (and the VAE decoder when asked) with static shapes."""
    import torch

    pipe.unet = torch.compile(pipe.unet, mode=mode, fullgraph=True, dynamic=False)
    done: dict[str, Any] = {"compile": mode, "compiled": ["unet"]}
    vae = getattr(pipe, "vae", None)
    if vae_decoder and vae is not None:
        vae.decoder = torch.compile(vae.decoder, mode=mode, fullgraph=True, dynamic=False)
        done["compiled"].append("vae.decoder")
    return done


def _peak_bytes(run: Callable[[int], Any], batch: int, device) -> int:
    import torch

    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    run(batch)
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) - base


def _round_batch(n: int) -> int:
    """Down to a multiple of 4 from 8 up (tensor-core friendly shapes), at least 1."""
    return n - n % 4 if n >= 8 else max(1, n)


def probe_batch_size(run: Callable[[int], Any], device, *, max_batch: int = AUTO_MAX_BATCH,
                     margin: float = MEMORY_MARGIN) -> tuple[int, dict[str, Any]]:
    """The largest batch that fits ``margin`` of the free memory: the memory of one and two
    images (``run(batch)`` generates a batch, e.g. with two denoising steps) gives the cost
    per image and the fixed cost; the candidate is then run once, halved on out-of-memory."""
    import torch

    one = _peak_bytes(run, 1, device)
    two = _peak_bytes(run, 2, device)
    per_image = max(two - one, 1)
    fixed = max(one - per_image, 0)
    free, total = torch.cuda.mem_get_info(device)
    fits = int((free * margin - fixed) // per_image)
    batch = _round_batch(min(max(fits, 1), max_batch))
    tried = []
    while True:
        tried.append(batch)
        try:
            _peak_bytes(run, batch, device)
            break
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            if batch == 1:
                raise
            batch = max(1, batch // 2)
    info = {"rule": f"largest batch in {margin:.0%} of free GPU memory, at most {max_batch}",
            "free_gib": round(free / 2 ** 30, 2), "total_gib": round(total / 2 ** 30, 2),
            "gib_per_image": round(per_image / 2 ** 30, 3), "fixed_gib": round(fixed / 2 ** 30, 3),
            "tried": tried}
    return batch, info
