"""One audit request: what to audit and how to run it, as one frozen, typed object.

An :class:`AuditRequest` is built once at each edge (the command line's ``run`` / ``generate`` /
``demo``, the queue worker, a Python caller) and validated once, when it is made: every value
that can be checked without the model or the machine (types, ranges, names) is checked here,
with a one-line ``ValueError`` naming the option. Preflight, generation, run_config.json and
results.json then take it (or the part they need) instead of parameter lists, in the way of
HELM's RunSpec and lm-evaluation-harness's TaskConfig. What needs the model or the machine
(does the Hub model exist, is the GPU there, does the pipeline take ``--set num_inference_steps``)
stays with the preflight.

The parts, each frozen:

* :class:`ModelChoice`: the model spec, its revision, the pipeline call settings (``--set``),
  an image API's connection options (``--api-*``; the key is never part of it) and LoRA
  adapters (``--lora``);
* :class:`ProbeChoice`: the probe set and its revision, the suites, ``--limit`` and the task
  inputs by name (e.g. a reference dataset a task scores against);
* :class:`Runtime`: where and how fast the model runs (device, dtype, batch size, compile,
  offload): what a resumed run may change;
* :class:`SuppliedImages`: a folder of images made elsewhere, instead of a model;
* the annotators (option -> model) and the bootstrap resamples.

:meth:`AuditRequest.record` is what run_config.json keeps under ``request`` (no local paths
other than those the user gave, no progress flag); :meth:`AuditRequest.from_record` reads it
back, so a rerun can be compared with the request that started its folder
(:func:`request_differences`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from benchmark import cli_types
from benchmark.contract.model_specs import (API_PREFIX, BASE_WITHOUT_SINGLE_FILE, check_model_name, check_model_spec,
                                            names_single_file)

__all__ = ["AuditRequest", "ModelChoice", "ProbeChoice", "Runtime", "SuppliedImages", "OFFLOAD_MODES",
           "REQUEST_FORMAT", "request_differences"]

#: the ``format`` of :meth:`AuditRequest.record` (run_config.json ``request``)
REQUEST_FORMAT = 1
#: ``--offload``: diffusers' CPU offload modes (benchmark.models.cuda_speed applies them)
OFFLOAD_MODES = ("auto", "none", "model", "sequential")


def _frozen(value: Mapping | None, what: str) -> Mapping[str, Any]:
    """A read-only copy of ``value`` whose keys are non-empty strings."""
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise ValueError(f"{what}: expected a mapping of names to values, got {type(value).__name__}")
    bad = [k for k in value if not isinstance(k, str) or not k.strip()]
    if bad:
        raise ValueError(f"{what}: every name must be a non-empty string, got {bad[0]!r}")
    return MappingProxyType(dict(value))


def _optional_text(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what}: expected a non-empty string, got {value!r}")
    return value.strip()


def _checked(check, value: Any, what: str) -> Any:
    """A command-line value type (:mod:`benchmark.cli_types`) applied to a library value: the same
    rule whichever edge built the request, its message prefixed by the option."""
    if value is None:
        return None
    try:
        return check(value if isinstance(value, str) else str(value))
    except (argparse.ArgumentTypeError, ValueError) as exc:
        raise ValueError(f"{what}: {exc}") from None


def _plain(value: Any) -> Any:
    """JSON's view of a value (tuples as lists, read-only mappings as dicts)."""
    return json.loads(json.dumps(value, default=lambda v: dict(v) if isinstance(v, Mapping) else str(v)))


@dataclass(frozen=True)
class ModelChoice:
    """The model to audit: ``spec`` (builtin:tiny-sd, a Hub model ID, a local diffusers folder,
    python:module:function, openai:MODEL), its ``revision``, the pipeline call ``settings``
    (``--set``), an image API's connection options (``api``: api_base, api_key_env, concurrency,
    rpm), LoRA ``adapters`` (``PATH_OR_HUB_ID[:SCALE]`` each, at most ``MAX_LORAS``, loaded in
    order onto the pipeline and fused: ``--lora``), ``components`` replaced by a checkpoint of
    their own (``{"unet": REF}``: ``--unet``, e.g. SDXL-Lightning's UNet files) and
    ``lora_trigger``: put before every prompt, True for the LoRA cards' trigger (``instance_prompt``),
    or a text (``--lora-trigger [TEXT]``); for a single-file checkpoint (``--model
    FILE.safetensors``) the ``base`` whose configs read it (``--base``); the denoiser's
    ``quantization`` (``--quantize BACKEND:SCHEME``); ``lora_unet_only``: LoRAs' text-encoder
    layers skipped and recorded (``--lora-unet-only``)."""

    spec: str
    revision: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    api: Mapping[str, Any] = field(default_factory=dict)
    adapters: tuple[str, ...] = ()
    components: Mapping[str, str] = field(default_factory=dict)
    base: str | None = None
    quantization: str | None = None
    lora_unet_only: bool = False
    lora_trigger: bool | str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.spec, str):
            raise ValueError(f"--model: expected a model spec string, got {type(self.spec).__name__}")
        object.__setattr__(self, "spec", check_model_spec(self.spec))
        object.__setattr__(self, "revision", _optional_text(self.revision, "--revision"))
        object.__setattr__(self, "settings", _frozen(self.settings, "--set"))
        object.__setattr__(self, "api", _frozen(self.api, "--api-* options"))
        if self.api and not self.spec.startswith(API_PREFIX):
            raise ValueError(f"--api-* options apply to an image API (--model openai:MODEL), not to {self.spec}")
        adapters = (self.adapters,) if isinstance(self.adapters, str) else tuple(self.adapters or ())
        object.__setattr__(self, "adapters", tuple(_optional_text(a, "--lora") for a in adapters))
        if len(self.adapters) > cli_types.MAX_LORAS:
            raise ValueError(f"--lora: at most {cli_types.MAX_LORAS} LoRAs per audit (as queue requests), got "
                             f"{len(self.adapters)}")
        for adapter in self.adapters:
            _checked(cli_types.lora_reference, adapter, "--lora")
        for component in self.components.values() if isinstance(self.components, Mapping) else ():
            _checked(cli_types.unet_reference, component, "--unet")
        if self.lora_trigger is False:
            object.__setattr__(self, "lora_trigger", None)
        if self.lora_trigger is not None and not isinstance(self.lora_trigger, bool):
            object.__setattr__(self, "lora_trigger", _optional_text(self.lora_trigger, "--lora-trigger"))
        if self.lora_trigger is not None and not self.adapters:
            raise ValueError("--lora-trigger goes with --lora (a trigger word activates a LoRA)")
        components = _frozen(self.components, "component checkpoints")
        object.__setattr__(self, "components", MappingProxyType(
            {k: _optional_text(v, f"--{k}") for k, v in components.items()}))
        if (self.adapters or self.components) and self.spec.startswith(("python:", API_PREFIX)):
            raise ValueError(f"--lora and --unet apply to diffusers pipelines, not to {self.spec}")
        object.__setattr__(self, "base", _optional_text(self.base, "--base"))
        if self.base and not names_single_file(self.spec):
            raise ValueError(BASE_WITHOUT_SINGLE_FILE.format(spec=self.spec))
        object.__setattr__(self, "quantization", _optional_text(self.quantization, "--quantize"))
        if self.quantization and self.spec.startswith(("python:", API_PREFIX)):
            raise ValueError(f"--quantize applies to diffusers pipelines, not to {self.spec}")
        if not isinstance(self.lora_unet_only, bool):
            raise ValueError(f"--lora-unet-only: expected True or False, got {self.lora_unet_only!r}")
        if self.lora_unet_only and not self.adapters:
            raise ValueError("--lora-unet-only goes with --lora (it says which of a LoRA's layers apply)")

    @property
    def weights(self) -> dict[str, Any]:
        """The loader's keyword arguments for the adapters and component checkpoints (none given: {})."""
        out: dict[str, Any] = {}
        if self.adapters:
            out["loras"] = list(self.adapters)
        if self.components:
            out["components"] = dict(self.components)
        if self.base:
            out["base"] = self.base
        if self.quantization:
            out["quantize"] = self.quantization
        if self.lora_unet_only:
            out["lora_unet_only"] = True
        if self.lora_trigger is not None:
            out["lora_trigger"] = self.lora_trigger
        return out

    def load_options(self) -> dict[str, Any]:
        """The keyword arguments the model's loader takes besides the spec: the call settings and
        the API options (:func:`benchmark.models.load_text_to_image`)."""
        return {**self.settings, **self.api}


@dataclass(frozen=True)
class ProbeChoice:
    """Which probes: the probe set (``source``: None for the built-in probes, a folder from
    ``t2ibench probes build`` or a Hub dataset ID, at ``revision``), the ``suites`` (None: every
    suite of the set), at most ``limit_per_suite`` probes of each, and the task ``inputs`` by
    name (:mod:`benchmark.tasks.inputs`; e.g. ``{"mcas_reference": "refs/ref"}``)."""

    source: str | None = None
    revision: str | None = None
    suites: tuple[str, ...] | None = None
    limit_per_suite: int | None = None
    inputs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", _optional_text(self.source, "--probes"))
        object.__setattr__(self, "revision", _optional_text(self.revision, "--probes-revision"))
        if self.revision is not None and self.source is None:
            raise ValueError("--probes-revision goes with --probes (a Hub dataset ID)")
        if self.suites is not None:
            suites = (self.suites,) if isinstance(self.suites, str) else tuple(self.suites)
            object.__setattr__(self, "suites", tuple(_optional_text(s, "--suites") for s in suites) or None)
        if self.limit_per_suite is not None:
            object.__setattr__(self, "limit_per_suite", _checked(cli_types.positive_int, self.limit_per_suite,
                                                                 "--limit"))
        inputs = {k: v for k, v in _frozen(self.inputs, "task inputs").items() if v is not None}
        object.__setattr__(self, "inputs", MappingProxyType(inputs))


@dataclass(frozen=True)
class Runtime:
    """Where and how fast the model runs: ``device`` (cpu, cuda, cuda:N, mps; None: the best
    available), ``dtype`` (None: per device), ``batch_size`` (a number or ``auto``), ``compile``
    (None: on for CUDA only; False: ``--no-compile``) and ``offload`` (None: auto). A resumed run
    may change them; images do not depend on them (but for the static batch size on CUDA, which
    the model records among its settings)."""

    device: str | None = None
    dtype: str | None = None
    batch_size: int | str = cli_types.AUTO
    compile: bool | None = None
    offload: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "device", _checked(cli_types.device, self.device, "--device"))
        object.__setattr__(self, "dtype", _checked(cli_types.dtype, self.dtype, "--dtype"))
        object.__setattr__(self, "batch_size", cli_types.batch_size(self.batch_size))
        if self.compile is not None and not isinstance(self.compile, bool):
            raise ValueError(f"compile: expected True, False or None, got {self.compile!r}")
        if self.offload is not None and self.offload not in OFFLOAD_MODES:
            raise ValueError(f"--offload: unknown mode {self.offload!r}; use one of {', '.join(OFFLOAD_MODES)}")

    def load_options(self) -> dict[str, Any]:
        """The loader's speed options that were asked for (None: the model's default)."""
        out: dict[str, Any] = {}
        if self.compile is not None:
            out["compile"] = self.compile
        if self.offload is not None:
            out["offload"] = self.offload
        return out


@dataclass(frozen=True)
class SuppliedImages:
    """A folder of images made elsewhere (``t2ibench run --images DIR --model-name NAME``):
    matched to the probes by the sheet's file names or a ``mapping`` CSV; ``allow_missing``
    audits with some probes missing (counted); ``supplied_by`` names who made them."""

    folder: str
    model_name: str
    mapping: str | None = None
    allow_missing: bool = False
    supplied_by: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "folder", str(self.folder))
        if not isinstance(self.model_name, str) or not self.model_name.strip():
            raise ValueError("--images needs --model-name NAME: the name the results and the leaderboard show")
        object.__setattr__(self, "model_name", check_model_name(self.model_name).strip())
        object.__setattr__(self, "mapping", None if self.mapping is None else str(self.mapping))
        object.__setattr__(self, "allow_missing", bool(self.allow_missing))

    @property
    def spec(self) -> str:
        """The spec the run records for these images: ``images:NAME``."""
        return f"images:{self.model_name}"


@dataclass(frozen=True)
class AuditRequest:
    """One audit: into ``run_dir``, of ``model`` (or of the ``images`` supplied), on ``probes``,
    run as ``runtime`` says, labelled by ``annotators`` (option -> model; None values are the
    defaults), scored with ``n_resamples`` bootstrap resamples; ``progress``: bars and the plan
    on stderr; ``pilot``: a results.json whose intervals the plan scales to tell the smallest
    change this audit can detect (the plan only: not recorded); ``allow_degenerate``: score an
    audit whose images are degenerate past the share that stops it (``--allow-degenerate``,
    :mod:`benchmark.contract.image_checks`; the results say so, run_config.json does not keep
    it: each stage is asked). A model may be given as its spec string."""

    run_dir: Path
    model: ModelChoice | None = None
    probes: ProbeChoice = field(default_factory=ProbeChoice)
    runtime: Runtime = field(default_factory=Runtime)
    annotators: Mapping[str, Any] = field(default_factory=dict)
    n_resamples: int = 1000
    images: SuppliedImages | None = None
    progress: bool = True
    pilot: Path | None = None
    allow_degenerate: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.run_dir, (str, Path)) or not str(self.run_dir).strip():
            raise ValueError(f"--out: expected a folder, got {self.run_dir!r}")
        object.__setattr__(self, "run_dir", Path(self.run_dir))
        if self.pilot is not None:
            object.__setattr__(self, "pilot", Path(self.pilot))
        if isinstance(self.model, str):
            object.__setattr__(self, "model", ModelChoice(self.model))
        if (self.model is None) == (self.images is None):
            raise ValueError("give --model SPEC (a pipeline or an image API) or --images DIR --model-name NAME "
                             "(images made elsewhere), not both or neither")
        if self.images is not None and self.runtime.dtype is not None:
            raise ValueError("--dtype sets up a generator: --images audits images already made")
        object.__setattr__(self, "annotators", _frozen(self.annotators, "annotators"))
        object.__setattr__(self, "n_resamples", _checked(cli_types.n_resamples, self.n_resamples, "--n-resamples"))
        object.__setattr__(self, "progress", bool(self.progress))
        object.__setattr__(self, "allow_degenerate", bool(self.allow_degenerate))

    # ------------------------------------------------------------------ what the stages read

    @property
    def model_spec(self) -> str:
        """The spec the run folder records: the model's, or ``images:NAME`` for supplied images."""
        return self.model.spec if self.model is not None else self.images.spec

    @property
    def revision(self) -> str | None:
        """The model revision asked for (None: the default branch, or no revisions at all)."""
        return self.model.revision if self.model is not None else None

    @property
    def is_api(self) -> bool:
        return self.model is not None and self.model.spec.startswith(API_PREFIX)

    def with_changes(self, **changes: Any) -> "AuditRequest":
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)

    # ------------------------------------------------------------------ run_config.json

    def record(self) -> dict:
        """run_config.json ``request``: every field but the run folder, the progress flag, the
        pilot (what the plan prints, not what is audited) and ``allow_degenerate`` (asked of each
        stage)."""
        out: dict[str, Any] = {"format": REQUEST_FORMAT}
        for f in fields(self):
            if f.name in ("run_dir", "progress", "pilot", "allow_degenerate"):
                continue
            value = getattr(self, f.name)
            out[f.name] = None if value is None else _plain(
                {g.name: getattr(value, g.name) for g in fields(value)} if hasattr(value, "__dataclass_fields__")
                else value)
        return out

    @classmethod
    def from_record(cls, record: Mapping, run_dir: str | Path, *, progress: bool = True) -> "AuditRequest":
        """The request :meth:`record` wrote (a one-line ValueError for one this version cannot read)."""
        if not isinstance(record, Mapping) or record.get("format") != REQUEST_FORMAT:
            found = record.get("format") if isinstance(record, Mapping) else type(record).__name__
            raise ValueError(f"run_config.json request: format {found!r} is not supported (this t2ibench reads "
                             f"format {REQUEST_FORMAT})")
        parts = {"model": ModelChoice, "probes": ProbeChoice, "runtime": Runtime, "images": SuppliedImages}
        kwargs: dict[str, Any] = {"run_dir": run_dir, "progress": progress}
        for name, value in record.items():
            if name == "format":
                continue
            if name in parts and isinstance(value, Mapping):
                value = dict(value)
                for key in ("suites", "adapters"):
                    if isinstance(value.get(key), list):
                        value[key] = tuple(value[key])
                value = parts[name](**value)
            kwargs[name] = value
        return cls(**kwargs)


# --------------------------------------------------------------------------- a rerun's comparison

#: the request fields a resumed run must repeat as they were asked, with the option that sets
#: each; what the probes resolve to (suites, --limit, the probe set, task inputs) is compared
#: on the resolved values instead (run_config.json's own keys), so that `--suites a b` and
#: `--tasks a,b`, or every suite named and none, resume the same folder
IDENTITY_FIELDS = {
    ("model", "spec"): "--model", ("model", "revision"): "--revision", ("model", "settings"): "--set",
    ("model", "adapters"): "--lora", ("model", "components"): "--unet", ("model", "lora_trigger"): "--lora-trigger",
    ("images", "model_name"): "--model-name",
    ("images", "supplied_by"): "--supplied-by", ("model", "base"): "--base", ("model", "quantization"): "--quantize",
    ("model", "lora_unet_only"): "--lora-unet-only",
}


def request_differences(recorded: Mapping, asked: "AuditRequest") -> list[str]:
    """What ``asked`` changes of the request a run folder recorded (run_config.json ``request``),
    among the fields that decide its images: one readable phrase each, naming the option
    (``--limit 4 (this folder) vs 8``); [] when it repeats them."""
    now = asked.record()
    out = []
    for (part, key), option in IDENTITY_FIELDS.items():
        before = (recorded.get(part) or {}).get(key) if isinstance(recorded.get(part) or {}, Mapping) else None
        after = (now.get(part) or {}).get(key)
        if (_plain(before) or None) != (_plain(after) or None):  # a field added since: absent = empty
            out.append(f"{option} {_shown(before)} (this folder) vs {_shown(after)}")
    return out


def _shown(value: Any) -> str:
    if value in (None, {}, [], ()):
        return "(none)"
    if isinstance(value, (list, tuple)):
        return " ".join(map(str, value))
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items()))
    return str(value)
