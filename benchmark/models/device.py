"""Device and dtype choice: CUDA when present (bf16, else fp16), else MPS, else CPU fp32."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchmark.extras import require

from .errors import DeviceUnavailableError, MalformedSpecError

if TYPE_CHECKING:
    import torch

__all__ = ["resolve_device", "default_dtype", "resolve_dtype"]


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """The device to run on; ``None`` picks the best present one.

    Raises :class:`DeviceUnavailableError` (one line) when a CUDA/MPS device is asked
    for but absent, before anything is loaded.
    """
    require("torch", extra="audit", purpose="run models")
    import torch

    if device is None:
        if torch.cuda.is_available():
            return torch.device("cuda")
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise MalformedSpecError(f"unknown device {device!r}: use cpu, cuda, cuda:N or mps") from err
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceUnavailableError(
                f"device {str(device)!r} was asked for but no CUDA GPU is available "
                f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'none'}); "
                "use --device cpu or run on a machine with a GPU"
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise DeviceUnavailableError(
                f"device {str(device)!r} was asked for but only {torch.cuda.device_count()} CUDA GPU(s) are present"
            )
    elif dev.type == "mps":
        if getattr(torch.backends, "mps", None) is None or not torch.backends.mps.is_available():
            raise DeviceUnavailableError(f"device {str(device)!r} was asked for but Apple MPS is not available")
    return dev


def default_dtype(device: torch.device) -> torch.dtype:
    """bf16 on CUDA GPUs that support it, fp16 on older GPUs and MPS, fp32 on CPU."""
    import torch

    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32


_DTYPE_NAMES = {
    "float32": "float32", "fp32": "float32", "float": "float32",
    "float16": "float16", "fp16": "float16", "half": "float16",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
}


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """``None`` -> :func:`default_dtype`; strings such as ``"bf16"`` are accepted."""
    require("torch", extra="audit", purpose="run models")
    import torch

    if dtype is None:
        return default_dtype(device)
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return getattr(torch, _DTYPE_NAMES[str(dtype).lower().removeprefix("torch.")])
    except KeyError:
        raise MalformedSpecError(f"unknown dtype {dtype!r}: use one of float32, float16, bfloat16") from None
