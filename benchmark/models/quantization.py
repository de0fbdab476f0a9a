"""Quantized weights through diffusers' own quantization configs: ``--quantize BACKEND:SCHEME``
quantizes the pipeline's denoiser (its UNet or transformer, where nearly all of its weights are)
while it loads, and GGUF files (quantized already) load as single-file denoisers
(single_file.py). "Does quantization change the biases?" is then a paired comparison of two
audits, quantized and not, of the same model, probes and seeds (``t2ibench compare``; docs/models.md).

Schemes (:data:`SCHEMES`), checked on this stack (diffusers 0.42.1, torch 2.14 on a CPU):

* ``torchao:int8wo`` / ``int8dq`` / ``float8wo`` / ``int4wo``: torchao's ``Int8WeightOnlyConfig``,
  ``Int8DynamicActivationInt8WeightConfig``, ``Float8WeightOnlyConfig`` and ``Int4WeightOnlyConfig``
  through ``TorchAoConfig``; the first three run on a CPU (torchao 0.18), int4 needs its ``mslk``
  kernels;
* ``bnb:4bit`` (NF4, computing in the run's dtype) and ``bnb:8bit`` (LLM.int8): bitsandbytes through
  ``BitsAndBytesConfig``; diffusers' bitsandbytes quantizer runs on CUDA, XPU (and MPS for 4 bit)
  only, so on a CPU they are refused in one line.

A backend that is not installed, or a device it cannot run on, is refused before anything loads.
The choice is part of the model's identity (:meth:`QuantizationChoice.record`): recorded in the
settings, run_config.json, results.json and the report, and a row of its own on the leaderboard.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass

from .errors import DeviceUnavailableError, MalformedSpecError

__all__ = ["QuantizationChoice", "SCHEMES", "parse_quantization", "check_quantization", "gguf_record"]

#: backend -> scheme -> (config class, what it is)
SCHEMES = {
    "torchao": {"int8wo": ("Int8WeightOnlyConfig", "int8 weights, activations in the run's dtype"),
                "int8dq": ("Int8DynamicActivationInt8WeightConfig", "int8 weights and dynamically quantized "
                           "int8 activations"),
                "float8wo": ("Float8WeightOnlyConfig", "float8 (e4m3) weights"),
                "int4wo": ("Int4WeightOnlyConfig", "int4 weights (needs torchao's mslk kernels)")},
    "bnb": {"4bit": ("BitsAndBytesConfig", "NF4 4-bit weights (bitsandbytes)"),
            "8bit": ("BitsAndBytesConfig", "LLM.int8 8-bit weights (bitsandbytes)")},
}
#: the import and distribution name of each backend
BACKEND_PACKAGES = {"torchao": "torchao", "bnb": "bitsandbytes"}
#: devices diffusers' bitsandbytes quantizer runs on (its validate_environment), per scheme
BNB_DEVICES = {"4bit": ("cuda", "xpu", "mps"), "8bit": ("cuda", "xpu")}
#: extra kernels a scheme needs beyond its backend
SCHEME_NEEDS = {("torchao", "int4wo"): "mslk"}


def _listing() -> str:
    return ", ".join(f"{b}:{s}" for b, schemes in SCHEMES.items() for s in schemes)


@dataclass(frozen=True)
class QuantizationChoice:
    """A parsed ``--quantize``: ``backend`` (torchao, bnb) and ``scheme`` (int8wo, 4bit...)."""

    backend: str
    scheme: str
    components: tuple[str, ...] = ()  # what it quantizes: the pipeline's denoiser (set by the check)

    @property
    def text(self) -> str:
        return f"{self.backend}:{self.scheme}"

    @property
    def config_name(self) -> str:
        return SCHEMES[self.backend][self.scheme][0]

    def model_config(self, dtype):
        """diffusers' quantization config of one model (TorchAoConfig / BitsAndBytesConfig)."""
        import diffusers

        if self.backend == "torchao":
            import torchao.quantization as ao

            return diffusers.TorchAoConfig(getattr(ao, self.config_name)())
        if self.scheme == "4bit":
            return diffusers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                bnb_4bit_compute_dtype=dtype)
        return diffusers.BitsAndBytesConfig(load_in_8bit=True)

    def pipeline_config(self, dtype):
        """``PipelineQuantizationConfig`` quantizing ``components`` (the denoiser) while the
        pipeline loads (a ``quant_mapping``: the backends' diffusers and transformers configs differ)."""
        import diffusers

        return diffusers.PipelineQuantizationConfig(
            quant_mapping={c: self.model_config(dtype) for c in self.components})

    def record(self) -> dict:
        """The identity record (JSON-ready): backend, scheme, config class, components, version."""
        package = BACKEND_PACKAGES[self.backend]
        return {"backend": self.backend, "scheme": self.scheme, "spec": self.text, "config": self.config_name,
                "what": SCHEMES[self.backend][self.scheme][1], "components": list(self.components),
                "library": package, "library_version": _version(package)}


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def parse_quantization(text: str | None) -> QuantizationChoice | None:
    """``--quantize BACKEND:SCHEME`` parsed (no import); one line naming the accepted ones."""
    if text is None:
        return None
    raw = str(text).strip()
    backend, _, scheme = raw.lower().partition(":")
    backend = {"bitsandbytes": "bnb"}.get(backend, backend)
    if backend == "gguf":
        raise MalformedSpecError("--quantize gguf: GGUF weights are quantized files; audit one as --model FILE.gguf "
                                 "--base BASE (or hf://ORG/NAME/FILE.gguf), its quantization read from the file")
    if backend not in SCHEMES or scheme not in SCHEMES[backend]:
        raise MalformedSpecError(f"--quantize {raw!r} is not a quantization this loader applies: use one of "
                                 f"{_listing()}")
    return QuantizationChoice(backend, scheme)


def check_quantization(choice: QuantizationChoice | None, device) -> None:
    """The backend installed and able to run on ``device`` (a torch.device), before any weights
    load; one line otherwise."""
    if choice is None:
        return
    if choice.backend == "bnb" and device.type not in BNB_DEVICES[choice.scheme]:
        raise DeviceUnavailableError(f"--quantize {choice.text}: diffusers' bitsandbytes quantizer runs on "
                                     f"{', '.join(BNB_DEVICES[choice.scheme])} only, not on {device.type}: use "
                                     "--quantize torchao:int8wo on a CPU")
    package = BACKEND_PACKAGES[choice.backend]
    if importlib.util.find_spec(package) is None:
        raise MalformedSpecError(f"--quantize {choice.text} needs the {package} package, which is not installed: "
                                 f"pip install {package}")
    needs = SCHEME_NEEDS.get((choice.backend, choice.scheme))
    if needs and importlib.util.find_spec(needs) is None:
        raise MalformedSpecError(f"--quantize {choice.text} needs {needs} (torchao's int4 kernels), which is not "
                                 f"installed: use --quantize torchao:int8wo, or pip install {needs}")


def gguf_record(tensor_types: dict[str, str], component: str) -> dict:
    """The identity record of a GGUF file's quantization: its tensors' GGML types, most common first."""
    counts: dict[str, int] = {}
    for kind in tensor_types.values():
        counts[kind] = counts.get(kind, 0) + 1
    ranked = sorted(counts, key=lambda k: (-counts[k], k))
    quantized = [k for k in ranked if k not in ("F32", "F16", "BF16")]
    return {"backend": "gguf", "scheme": quantized[0] if quantized else ranked[0] if ranked else "none",
            "spec": "gguf", "config": "GGUFQuantizationConfig", "what": "weights quantized in the GGUF file "
            f"({', '.join(f'{k} x{counts[k]}' for k in ranked)})", "components": [component], "library": "gguf",
            "library_version": _version("gguf"), "from_file": True}
