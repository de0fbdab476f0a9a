"""Speed settings of a diffusers pipeline on a CUDA GPU: memory layout, fused QKV
projections, ``torch.compile`` of the modules that denoise (a UNet, a DiT, a prior: found from
the pipeline's components, :func:`denoisers`), CPU offload and the automatic batch size.

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
in docs/performance.md).

The compile mode is a setting (``load_text_to_image(compile=MODE)``, one of
:data:`COMPILE_MODES`; recorded as ``settings.compile`` and ``speed.compile``). The modes with
CUDA graphs (:data:`CUDAGRAPH_MODES`: ``reduce-overhead``, ``max-autotune``) replay every
denoiser call into the same output memory; a scheduler that keeps earlier outputs (PNDM, SD
1.5's default, keeps four) or a sliced VAE decode (one image per call, concatenated after)
would read overwritten values, so each call of a module compiled with CUDA graphs starts a
new graph step and its outputs are copied out (:func:`graph_safe`; recorded as
``speed.cudagraphs``). ``bench/generation.py``'s ``compile-modes`` rows measure each mode
on the runner's padded static batches and compare its images with mode ``default``'s; the
default stays ``default`` until a GPU run shows another faster with the same images.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import DeviceUnavailableError, MalformedSpecError

__all__ = [
    "AUTO_MAX_BATCH",
    "COMPILE_MODES",
    "CUDAGRAPH_MODES",
    "DEFAULT_COMPILE_MODE",
    "MEMORY_MARGIN",
    "OFFLOAD_MODES",
    "apply_offload",
    "check_offload",
    "choose_offload",
    "CONV_SHARE",
    "apply_cuda_layout",
    "compile_pipeline",
    "denoisers",
    "graph_safe",
    "uncompile_pipeline",
    "probe_batch_size",
    "resolve_compile_mode",
]

#: the compile mode the runner uses on CUDA by default (see the module docstring for why)
DEFAULT_COMPILE_MODE = "default"
COMPILE_MODES = ("default", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
#: the modes whose compiled modules replay CUDA graphs (outputs in memory the next replay reuses)
CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")
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


#: names a denoiser's ``forward`` gives the noise level (diffusers' UNets and transformers:
#: ``timestep``; Stable Cascade: ``timestep_ratio``; Würstchen: ``r``; Z-Image: ``t``)
_TIME_PARAMETERS = ("timestep", "timesteps", "timestep_ratio", "r", "t")
#: a module is convolutional (channels-last helps) when this share of its parameters is in 2-D
#: convolutions: UNets and VAEs are far above it, DiTs (one patch-embedding convolution) far below
CONV_SHARE = 0.1


def _is_diffusers_model(module) -> bool:
    return any(c.__module__.startswith("diffusers.") and c.__name__ == "ModelMixin" for c in type(module).__mro__)


def denoisers(pipe) -> dict[str, Any]:
    """The modules of ``pipe`` that denoise, by component name, found from the pipeline's
    components: every diffusers model whose ``forward`` takes the noise level (a UNet, a DiT, a
    prior, a super-resolution UNet; a combined pipeline's prior and decoder), not its VAE, text
    encoders or projections. A module registered under two names is listed once."""
    import inspect

    found: dict[str, Any] = {}
    for name, module in getattr(pipe, "components", {}).items():
        if module is None or not _is_diffusers_model(module) or any(module is m for m in found.values()):
            continue
        try:
            params = inspect.signature(module.forward).parameters
        except (TypeError, ValueError):
            continue
        if any(p in params for p in _TIME_PARAMETERS):
            found[name] = module
    return found


def _conv_share(module) -> float:
    import torch

    total = sum(p.numel() for p in module.parameters())
    conv = sum(p.numel() for m in module.modules() if isinstance(m, torch.nn.Conv2d) for p in m.parameters(recurse=False))
    return conv / total if total else 0.0


def apply_cuda_layout(pipe) -> dict[str, Any]:
    """Channels-last for the convolutional models (UNets, VAEs: :data:`CONV_SHARE`), fused QKV
    projections for every model that supports them; returns the settings to record: the
    component names each was applied to."""
    import torch

    models = {name: m for name, m in getattr(pipe, "components", {}).items()
              if m is not None and _is_diffusers_model(m)}
    channels_last, fused, refused = [], [], []
    for name, module in models.items():
        if _conv_share(module) >= CONV_SHARE:
            module.to(memory_format=torch.channels_last)
            channels_last.append(name)
        fuse = getattr(module, "fuse_qkv_projections", None)
        config = getattr(module, "config", {}) or {}
        if callable(fuse) and config.get("dual_attention_layers"):
            # SD 3.5's dual-attention blocks: diffusers' fused processor (FusedJointAttnProcessor2_0)
            # is set on their second, self-only attention too, which then fails at the first call
            refused.append(f"{name} (dual attention layers)")
        elif callable(fuse):
            try:
                fuse()
                fused.append(name)
            except (AttributeError, NotImplementedError, ValueError) as err:  # e.g. added-KV attention processors
                refused.append(f"{name} ({type(err).__name__})")
    done: dict[str, Any] = {"channels_last": channels_last, "fused_qkv": fused}
    if refused:
        done["fused_qkv_refused"] = refused
    return done


def _copied(out):
    """``out`` (a tensor, or tuples / lists / dicts / diffusers outputs of them) with every tensor cloned."""
    import torch

    if isinstance(out, torch.Tensor):
        return out.clone()
    if isinstance(out, dict):  # diffusers' BaseOutput is an OrderedDict
        return type(out)(**{k: _copied(v) for k, v in out.items()})
    if isinstance(out, (tuple, list)):
        return type(out)(_copied(v) for v in out)
    return out


def graph_safe(call: Callable) -> Callable:
    """``call`` (a compiled forward that replays CUDA graphs) made safe to keep its outputs: each
    call starts a new CUDA-graph step (``torch.compiler.cudagraph_mark_step_begin``) and returns
    copies of the outputs, which the next replay would otherwise overwrite in place (one latent
    batch per step: a copy costs microseconds beside the forward)."""
    import torch

    def safe_call(*args, **kwargs):
        torch.compiler.cudagraph_mark_step_begin()
        return _copied(call(*args, **kwargs))

    safe_call.graph_safe_of = call
    return safe_call


def _compile_module(module, options: dict) -> None:
    module.compile(**options)  # nn.Module.compile: the compiled callable in _compiled_call_impl
    if options["mode"] in CUDAGRAPH_MODES:
        module._compiled_call_impl = graph_safe(module._compiled_call_impl)


def compile_pipeline(pipe, mode: str, *, vae_decoder: bool = False) -> dict[str, Any]:
    """``torch.compile`` every denoiser (:func:`denoisers`) in place (``nn.Module.compile``: the
    pipeline, and a combined pipeline's sub-pipelines holding the same module, call the compiled
    forward) with static shapes, in ``mode`` (:data:`COMPILE_MODES`; CUDA-graph modes through
    :func:`graph_safe`); and the VAE decoder when asked. Returns the settings to record."""
    if mode not in COMPILE_MODES:
        raise ValueError(f"unknown torch.compile mode {mode!r}; use one of {', '.join(COMPILE_MODES)}")
    options = {"mode": mode, "fullgraph": True, "dynamic": False}
    compiled = []
    for name, module in denoisers(pipe).items():
        _compile_module(module, options)
        compiled.append(name)
    vae = getattr(pipe, "vae", None)
    if vae_decoder and vae is not None:
        _compile_module(vae.decoder, options)
        compiled.append("vae.decoder")
    if not compiled:
        raise ValueError(f"{type(pipe).__name__} has no module that denoises (no diffusers model whose forward "
                         "takes a timestep): nothing to compile")
    graphs = mode in CUDAGRAPH_MODES
    options_note = "fullgraph, static shapes" + (", outputs copied out of the CUDA graphs" if graphs else "")
    return {"compile": mode, "compiled": compiled, "cudagraphs": graphs, "compile_options": options_note}


def uncompile_pipeline(pipe, *, vae_decoder: bool = True) -> None:
    """Undo :func:`compile_pipeline` (after a compile failed at the first call): the modules run
    their eager forward again. ``nn.Module.compile`` keeps the compiled callable in
    ``_compiled_call_impl``; clearing it is the inverse torch itself uses when pickling."""
    for module in denoisers(pipe).values():
        module._compiled_call_impl = None
    vae = getattr(pipe, "vae", None)
    if vae_decoder and vae is not None and hasattr(vae, "decoder"):
        vae.decoder._compiled_call_impl = None


#: --offload: ``auto`` (default) keeps every model on the GPU when the weights fit and offloads
#: otherwise; ``none``, ``model`` and ``sequential`` are diffusers' three ways
OFFLOAD_MODES = ("auto", "none", "model", "sequential")
#: the weights "fit" when they take at most this share of the GPU's free memory: the rest is for
#: the activations of a batch (the automatic batch size then fills what is left)
OFFLOAD_FIT_SHARE = 0.7


def _weights_bytes(pipe) -> tuple[int, int]:
    """(bytes of every model's weights, bytes of the largest model) of ``pipe``."""
    import torch

    sizes = [sum(t.numel() * t.element_size() for t in list(m.parameters()) + list(m.buffers()))
             for m in getattr(pipe, "components", {}).values() if isinstance(m, torch.nn.Module)]
    return sum(sizes), max(sizes, default=0)


def check_offload(requested: str | None, device) -> str:
    """The offload mode asked for (None: ``auto``), or a one-line error for a mode that is not one
    of :data:`OFFLOAD_MODES` or one that needs a CUDA GPU on another device."""
    requested = requested or "auto"
    if requested not in OFFLOAD_MODES:
        raise MalformedSpecError(f"unknown offload mode {requested!r}; use one of {', '.join(OFFLOAD_MODES)}")
    if requested in ("model", "sequential") and device.type != "cuda":
        raise DeviceUnavailableError(f"--offload {requested} moves weights between the CPU and a CUDA GPU; "
                                     f"device {device} has nothing to offload to")
    return requested


def choose_offload(requested: str | None, pipe, device) -> tuple[str, dict | None]:
    """The offload mode to use: an explicit ``none`` / ``model`` / ``sequential`` (CUDA only), or
    for ``auto`` (and None) the first that fits :data:`OFFLOAD_FIT_SHARE` of the free memory:
    every model on the GPU, else one model at a time (``model``), else layer by layer
    (``sequential``). Returns the mode and, for ``auto`` on CUDA, how it was chosen."""
    requested = check_offload(requested, device)
    if device.type != "cuda":
        return "none", None
    if requested != "auto":
        return requested, None
    import torch

    total, largest = _weights_bytes(pipe)
    free, _ = torch.cuda.mem_get_info(device)
    budget = free * OFFLOAD_FIT_SHARE
    mode = "none" if total <= budget else "model" if largest <= budget else "sequential"
    gib = 2 ** 30
    return mode, {"rule": f"weights within {OFFLOAD_FIT_SHARE:.0%} of free GPU memory: none; the largest model "
                          "within it: model; else sequential",
                  "weights_gib": round(total / gib, 2), "largest_model_gib": round(largest / gib, 2),
                  "free_gib": round(free / gib, 2)}


def apply_offload(pipe, mode: str, device) -> None:
    """Move ``pipe`` to ``device`` (``none``) or let diffusers move each model there when it runs
    (``model``: ``enable_model_cpu_offload``) or each layer (``sequential``)."""
    if mode == "none":
        pipe.to(device)
    elif mode == "model":
        pipe.enable_model_cpu_offload(device=device)
    elif mode == "sequential":
        pipe.enable_sequential_cpu_offload(device=device)
    else:
        raise ValueError(f"unknown offload mode {mode!r}")


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


def probe_batch_size(run: Callable[[int], Any], device, *, max_batch: int | None = None,
                     margin: float = MEMORY_MARGIN) -> tuple[int, dict[str, Any]]:
    """The largest batch that fits ``margin`` of the free memory, at most ``max_batch`` (None:
    :data:`AUTO_MAX_BATCH` as it is at the call): the memory of one and two images (``run(batch)``
    generates a batch, e.g. with two denoising steps) gives the cost per image and the fixed cost;
    the candidate is then run once, halved on out-of-memory."""
    import torch

    max_batch = AUTO_MAX_BATCH if max_batch is None else int(max_batch)

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
