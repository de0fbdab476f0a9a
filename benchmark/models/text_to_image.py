"""Text-to-image models behind one interface, chosen by a spec string.

Specs accepted by :func:`load_text_to_image`:

* ``builtin:tiny-sd``: the built-in tiny Stable Diffusion (random weights, built by
  :func:`benchmark.models.tiny_sd.build_tiny_sd`);
* a Hub model ID (``stable-diffusion-v1-5/stable-diffusion-v1-5``), with ``revision=``;
* a local diffusers folder (holding ``model_index.json``);
* ``python:module.path:function``: a plain callable
  ``(prompts: list[str], seeds: list[int]) -> list[PIL.Image]`` (API-only models);
  a callable object is also accepted directly.

Diffusers pipelines are loaded with ``AutoPipelineForText2Image.from_pretrained``.
Every image gets its own ``torch.Generator`` (on the CPU, so the initial noise is the
same on every device) seeded from its probe seed: an image does not depend on the
batch it was generated in, its size, or its position in it.

This module reads a spec and loads or checks its model; the models themselves live in
``text_to_image_base`` (the interface), ``diffusers_model`` (diffusers pipelines),
``callable_model`` (Python callables) and ``tiny_sd`` (the built-in model's builder).
"""

from __future__ import annotations

import inspect
import os
from functools import partial
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from benchmark.contract.model_specs import BASE_WITHOUT_SINGLE_FILE
from benchmark.extras import require

from .api_images import OpenAIImagesModel, check_api_model
from .cuda_speed import OFFLOAD_MODES, check_offload
from .builtin_cache import BUILDER_VERSION, build_builtin, check_builtin_name
from .base_model import CardIdentity, card_identity, check_declared_base
from .call_settings import PIPELINE_CALL_ARGUMENTS, SCHEDULER_SETTINGS, check_call_settings, named_parameters
from .component_weights import check_components, parse_component_spec
from .light_checks import check_without_weights
from .lora import check_loras, parse_lora_specs
from .weights_ref import check_local_weights
from .quantization import QuantizationChoice, check_quantization, gguf_record, parse_quantization
from .single_file import (CheckedSingleFile, DENOISERS, check_local_single_file, check_single_file, find_base,
                          parse_single_file)
from .lora_card import attach_cards, card_setting_sources, choose_trigger, with_trigger
from .model_cards import SOURCE_SET, card_sources, choose_call_settings, settings_warning
from .pipeline_classes import PipelineChoice, choose_pipeline_class
from .device import resolve_device, resolve_dtype
from .errors import DeviceUnavailableError, MalformedSpecError
from .generation_output import GenerationOutput  # noqa: F401 (re-exported: models return it)
from .hub_access import cached_commit, ensure_hub_model, is_local_folder, looks_like_path
from .callable_model import CallableTextToImage, import_callable
from .diffusers_model import DiffusersTextToImage, PipelineIdentity, SpeedChoice, load_diffusers
from .text_to_image_base import TextToImageModel
from .tiny_sd import TINY_SD_SETTINGS, build_tiny_sd

__all__ = [
    "GenerationOutput",
    "TextToImageModel",
    "DiffusersTextToImage",
    "CallableTextToImage",
    "OFFLOAD_MODES",
    "CheckedSpec",
    "SettingsPlan",
    "check_spec",
    "check_text_to_image",
    "config_reader",
    "load_text_to_image",
    "plan_settings",
    "parse_text_to_image_spec",
    "pipeline_choice",
    "planned_setting_sources",
    "TINY_SD_SETTINGS",
    "build_tiny_sd",
]


# ---------------------------------------------------------------------------- parsing


def parse_text_to_image_spec(spec: str) -> tuple[str, str]:
    """``(kind, value)`` with kind in builtin / python / local / hub; no loading, no network."""
    if not isinstance(spec, str) or not spec.strip():
        raise MalformedSpecError(f"malformed model spec {spec!r}: empty")
    spec = spec.strip()
    if spec.startswith("builtin:"):
        name = spec[len("builtin:") :]
        check_builtin_name(name, "text-to-image")
        return "builtin", name
    if spec.startswith("python:"):
        return "python", spec
    if spec.startswith("openai:"):  # an image-generation API (benchmark.models.api_images)
        return "openai", spec[len("openai:"):]
    if parse_single_file(spec) is not None:  # one .safetensors / .gguf file (single_file.py)
        return "single_file", spec
    if is_local_folder(spec):
        return "local", str(Path(os.path.expanduser(spec)).resolve())
    if looks_like_path(spec):
        raise MalformedSpecError(f"local model folder {spec!r} does not exist")
    scheme = spec.split(":", 1)[0] if ":" in spec else None
    if scheme is not None:
        raise MalformedSpecError(
            f"malformed model spec {spec!r}: unknown scheme {scheme + ':'!r} "
            "(use builtin:NAME, python:module:function, openai:MODEL, a Hub model ID or a local folder)"
        )
    return "hub", spec


def _pipeline_index(kind: str, value: str, revision: str | None, token) -> dict:
    """``model_index.json`` of a diffusers pipeline (built-in, local or Hub), without its weights."""
    import json

    if kind == "builtin":
        path = build_builtin(value, build_tiny_sd, kind="text-to-image") / "model_index.json"
    elif kind == "local":
        path = Path(value) / "model_index.json"
        if not path.is_file():
            raise MalformedSpecError(f"local folder {value} has no model_index.json: it is not a diffusers pipeline")
    else:
        from huggingface_hub import hf_hub_download

        where = ensure_hub_model(value, ["model_index.json"], revision=revision, token=token,
                                 what="text-to-image model")
        path = Path(hf_hub_download(value, "model_index.json", revision=revision, token=token,
                                    local_files_only=where == "cache"))
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise MalformedSpecError(f"{path} cannot be read as JSON ({type(err).__name__})") from None


@dataclass(frozen=True)
class CheckedSpec:
    """What checking a spec found, handed to loading so nothing is worked out twice: the class
    that runs it (``choice``; None for callables and image APIs, whose ``name`` is the kind), its
    model_index.json, its LoRAs and component checkpoints (found, hashed, checked), the card rows
    it inherits (base_model.py) and a reader of its components' configs."""

    name: str
    choice: PipelineChoice | None = None
    index: dict = field(default_factory=dict)
    adapters: tuple = ()
    components: tuple = ()
    identity: CardIdentity = field(default_factory=CardIdentity)
    read_config: Callable[[str], dict | None] = field(default=lambda component: None, repr=False)
    single_file: CheckedSingleFile | None = None  # --model FILE: the file, its base and layout
    quantization: QuantizationChoice | None = None  # --quantize, with the components it quantizes

    trigger: tuple[str, str] | None = None  # (text put before every prompt, its source): lora_card.py

    def model_records(self) -> dict:
        """The identity records of a single-file checkpoint (``checkpoint``) and of the weights'
        quantization (``quantization``: --quantize, or a GGUF file's own), those that apply."""
        out = {}
        single = self.single_file
        if single is not None:
            out["checkpoint"] = single.record()
        if self.quantization is not None:
            out["quantization"] = self.quantization.record()
        elif single is not None and single.header.format == "gguf":
            out["quantization"] = gguf_record({k: t for k, (t, _) in single.header.tensors.items()}, single.denoiser)
        return out

    def cards(self) -> list:
        """The card rows that apply (model_cards.card_sources): the adapters' rows, their own cards'
        examples, the model's own row, its base_model's."""
        return card_sources(own=self.identity.own, how=self.identity.how, bases=self.identity.bases,
                            adapters=[a.card_id for a in (*self.components, *self.adapters)],
                            adapter_cards=card_setting_sources(self.adapters))

    def lora_warnings(self) -> list[str]:
        """One line per LoRA whose card's base_model is not the model audited (lora_card.judge_base)."""
        return [a.card.warning for a in self.adapters if a.card is not None and a.card.warning]

    def records(self) -> list[dict]:
        """The identity records of the component checkpoints and LoRAs, in the order they apply."""
        return [a.record() for a in (*self.components, *self.adapters)]


def config_reader(kind: str, value: str, revision: str | None, token) -> Callable[[str], dict | None]:
    """``read(component)``: that component's config.json (a local or built-in folder's, or a Hub
    model's from the cache or the Hub), or None when it has none or it cannot be read."""
    import json

    def read(component: str) -> dict | None:
        if kind == "builtin":
            path = build_builtin(value, build_tiny_sd, kind="text-to-image") / component / "config.json"
        elif kind == "local":
            path = Path(value) / component / "config.json"
        else:
            from huggingface_hub import hf_hub_download

            try:
                path = Path(hf_hub_download(value, f"{component}/config.json", revision=revision, token=token))
            except Exception:  # noqa: BLE001 - offline and not cached, no such file: the loader reads it later
                return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    return read


def check_text_to_image(
    spec: str,
    *,
    revision: str | None = None,
    device=None,
    dtype=None,
    token: str | bool | None = None,
    overrides: dict | None = None,
    offload: str | None = None,
    loras: Sequence[str] = (),
    components: Mapping[str, str] | None = None,
    lora_trigger: bool | str | None = None,
    **weight_options,
) -> str:
    """Everything about a text-to-image spec that can fail, checked before any weights load;
    returns the pipeline's class name (or ``python-callable``, or the image API's model):
    :func:`check_spec` (``weight_options``: its ``base``, ``quantize``, ``lora_unet_only``)."""
    return check_spec(spec, revision=revision, device=device, dtype=dtype, token=token, overrides=overrides,
                      offload=offload, loras=loras, components=components, lora_trigger=lora_trigger,
                      **weight_options).name


def _check_scheduler_settings(choice: PipelineChoice, index: dict, overrides: dict) -> None:
    """``--set scheduler=`` names a diffusers scheduler, and each scheduler config setting
    (``timestep_spacing=trailing``) is one that scheduler takes."""
    import diffusers

    scheduler = overrides.get("scheduler")
    if scheduler is not None and not hasattr(getattr(diffusers, str(scheduler), None), "from_config"):
        raise MalformedSpecError(f"unknown diffusers scheduler {scheduler!r}")
    keys = [k for k in SCHEDULER_SETTINGS if k != "scheduler" and k in overrides]
    if not keys:
        return
    entry = index.get("scheduler")
    name = str(scheduler) if scheduler is not None else (entry[1] if isinstance(entry, (list, tuple)) else None)
    cls = getattr(diffusers, str(name), None)
    if cls is None:
        raise MalformedSpecError(f"{choice.name} has no single scheduler for --set {keys[0]}= to configure")
    takes = named_parameters(cls.__init__)
    for key in keys:
        if key not in takes:
            raise MalformedSpecError(f"scheduler setting {key!r} does not apply to {name} (it takes: "
                                     f"{', '.join(sorted(takes))})")


def _single_file_base(spec: str, base: str | None, token) -> tuple:
    """(parsed file, its base, the base's model_index.json, the class that runs it) of a single-file
    checkpoint: the base found and its configs read (single_file.py), no weights."""
    import json

    single = parse_single_file(spec)
    found = find_base(single, base, token=token)
    try:
        index = json.loads((found.folder / "model_index.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise MalformedSpecError(f"base {found.spec}: its model_index.json cannot be read ({type(err).__name__})") \
            from None
    return single, found, index, choose_pipeline_class(index, spec=found.spec, local_folder=found.folder)


def _single_file_source(spec: str, base: str | None, token) -> tuple:
    """(index, choice, read_config, card identity, checked file) of a single-file checkpoint: its
    base's pipeline read from the base's configs (single_file.py); its settings are the base's."""
    single, found, index, choice = _single_file_base(spec, base, token)
    read = config_reader("local", str(found.folder), None, token)
    checked = check_single_file(single, found, pipeline_cls=choice.cls, index=index, read_config=read, token=token)
    identity = CardIdentity()
    if not found.builtin:
        own = card_identity("local" if is_local_folder(found.spec) else "hub", found.load_from, token=token)
        identity = CardIdentity(bases=tuple(b for b in (own.own, *own.bases) if b))
    return index, choice, read, identity, checked


def _checked_quantization(choice: QuantizationChoice | None, device, index: Mapping,
                          single: CheckedSingleFile | None, loras: Sequence) -> QuantizationChoice | None:
    """``--quantize`` able to run here, aimed at the pipeline's denoiser (quantization.py); a LoRA is
    never fused into quantized weights (a GGUF file's or ``--quantize``'s): refused in one line."""
    if loras and single is not None and single.header.format == "gguf":
        raise MalformedSpecError("--lora with a GGUF file: a LoRA is fused into the denoiser's weights, which GGUF's "
                                 "quantized blocks do not take (diffusers fails on their shapes); audit the LoRA on "
                                 "an unquantized checkpoint (a .safetensors file, or the base)")
    if choice is None:
        return None
    check_quantization(choice, device)
    if single is not None and (single.layout == "pipeline" or single.header.format == "gguf"):
        why = "a GGUF file is quantized already" if single.header.format == "gguf" else \
            "a whole-pipeline single file is converted as it loads"
        raise MalformedSpecError(f"--quantize applies to a diffusers folder, a Hub model or a single file of the "
                                 f"denoiser alone: {why}")
    if loras:
        raise MalformedSpecError("--quantize with --lora: a LoRA is fused into the base weights, which quantized "
                                 "weights do not take; audit the LoRA unquantized, or quantize a merged checkpoint")
    denoiser = next((d for d in DENOISERS if isinstance(index.get(d), (list, tuple)) and index[d][0]), None)
    if denoiser is None:
        raise MalformedSpecError(f"--quantize {choice.text}: the pipeline has no unet or transformer to quantize")
    return replace(choice, components=(denoiser,))


def check_spec(spec: str, *, revision: str | None = None, device=None, dtype=None, token: str | bool | None = None,
               overrides: dict | None = None, offload: str | None = None, loras: Sequence[str] = (),
               components: Mapping[str, str] | None = None, base: str | None = None, quantize: str | None = None,
               lora_unet_only: bool = False, lora_trigger: bool | str | None = None) -> CheckedSpec:
    """Everything about a text-to-image spec that can fail, checked before any weights load,
    and what loading needs. One-line errors for: the spec's syntax, a missing local folder or Hub
    model (offline, gated, no such revision), ``revision`` with a built-in model or local folder
    (they have no revisions), float16 on a CPU, a device that is not there, a pipeline diffusers
    cannot run as text-to-image (the class that will run is the one checked: pipeline_classes.py),
    an offload mode that does not apply, each ``--set`` setting that class's call (or scheduler)
    does not take or whose value has the wrong type, a LoRA or component checkpoint that is missing,
    damaged or made for another base (weight_files.py, lora.py, component_weights.py; a LoRA card's
    base_model of another architecture: lora_card.py), a single-file checkpoint that is damaged,
    has no base or does not fit it (single_file.py), a quantization whose backend is missing or
    cannot run here (quantization.py), a model card that cannot be read, a loop in the model
    cards' base_model links or a class that contradicts them (base_model.py), ``lora_trigger``
    (True: the LoRA cards' trigger; a text: that text) without a trigger. What needs no weights and
    no heavy library is checked first, before torch loads (light_checks.py)."""
    overrides = dict(overrides or {})
    kind, value = parse_text_to_image_spec(spec)
    if revision and kind in ("builtin", "local", "python", "openai", "single_file"):
        what = {"builtin": "a built-in model", "local": "a local folder", "python": "a Python callable",
                "openai": "an image API", "single_file": "a single-file checkpoint (a Hub file's revision goes "
                "in its id: hf://ORG/NAME@REVISION/FILE)"}[kind]
        raise MalformedSpecError(f"--revision {revision} does not apply to {what} ({spec}); "
                                 "revisions are Hub commits, branches or tags")
    if base and kind != "single_file":
        raise MalformedSpecError(BASE_WITHOUT_SINGLE_FILE.format(spec=spec))
    lora_refs = parse_lora_specs(loras)
    component_refs = {name: parse_component_spec(f"{name}={ref}")[1] for name, ref in (components or {}).items()}
    quant = parse_quantization(quantize)
    if (lora_refs or component_refs or lora_trigger) and kind in ("python", "openai"):
        raise MalformedSpecError(f"LoRAs and component checkpoints apply to diffusers pipelines, not to {spec}")
    if quant and kind in ("python", "openai"):
        raise MalformedSpecError(f"--quantize applies to diffusers pipelines, not to {spec}")
    check_local_weights(lora_refs, "LoRA")  # damaged files refused before torch loads (weight_files.py)
    for name, ref in component_refs.items():
        check_local_weights([ref], f"{name} checkpoint")
    if kind == "single_file":
        check_local_single_file(parse_single_file(spec))
    if kind == "python":
        fn = import_callable(value)
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(fn).parameters.values()):
            check_call_settings(fn, overrides, what=value)
        return CheckedSpec("python-callable")
    if kind == "openai":
        return CheckedSpec(check_api_model(value, overrides))
    check_without_weights(spec, kind, value, revision=revision, token=token, loras=loras, lora_trigger=lora_trigger)
    require("torch", "diffusers", "transformers", "PIL", extra="audit", purpose="generate images")
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    if dev.type == "cpu" and str(dt) == "torch.float16":
        raise DeviceUnavailableError("--dtype float16 does not run on the CPU (diffusers' CPU kernels lack "
                                     "half precision and each image would take minutes): use float32 or bfloat16")
    single = None
    if kind == "single_file":
        index, choice, read, identity, single = _single_file_source(spec, base, token)
    else:
        index = _pipeline_index(kind, value, revision, token)
        choice = choose_pipeline_class(index, spec=spec, local_folder=Path(value) if kind == "local" else None)
        read = config_reader(kind, value, revision, token)
        identity = card_identity(kind, value, revision=revision, token=token) if kind != "builtin" else CardIdentity()
    quant = _checked_quantization(quant, dev, index, single, lora_refs)
    _check_scheduler_settings(choice, index, overrides)
    check_offload(offload, dev)
    check_call_settings(choice.cls.__call__, overrides, what=choice.name, reserved=PIPELINE_CALL_ARGUMENTS)
    check_declared_base(spec, choice.declared, identity)
    comps = check_components(component_refs, pipeline=choice.name, index=index, read_config=read, token=token)
    adapters = check_loras(lora_refs, pipeline_cls=choice.cls, index=index, read_config=read, token=token,
                           unet_only=lora_unet_only)
    audited = [a for a in (value if kind == "hub" else None, identity.own, *identity.bases) if a]
    adapters = attach_cards(adapters, pipeline_class=choice.name, audited=audited, model=spec, token=token)
    return CheckedSpec(choice.name, choice, index, tuple(adapters), tuple(comps), identity, read, single, quant,
                       trigger=choose_trigger(adapters, lora_trigger))


def pipeline_choice(spec: str, *, revision: str | None = None, token: str | bool | None = None,
                    base: str | None = None) -> PipelineChoice:
    """The diffusers class that will run ``spec`` (a built-in model, local folder or Hub ID) and
    its loader, from ``model_index.json`` alone (pipeline_classes.py). A single-file checkpoint
    (``FILE.safetensors``, ``FILE.gguf``, ``hf://ORG/NAME/FILE``) is run by its base's class: the
    base is ``base`` or the one :func:`benchmark.models.single_file.find_base` finds, its configs
    read offline first; the file itself is not read."""
    kind, value = parse_text_to_image_spec(spec)
    if base and kind != "single_file":
        raise MalformedSpecError(BASE_WITHOUT_SINGLE_FILE.format(spec=spec))
    if kind == "single_file":
        return _single_file_base(spec, base, token)[3]
    if kind not in ("builtin", "local", "hub"):
        raise MalformedSpecError(f"{spec} is not a diffusers pipeline")
    index = _pipeline_index(kind, value, revision, token)
    return choose_pipeline_class(index, spec=spec, local_folder=Path(value) if kind == "local" else None)


@dataclass(frozen=True)
class SettingsPlan:
    """Every generation setting of a run, worked out before any weights load, for the plan and
    the records: ``settings`` (values), ``sources`` (where each came from), ``warning`` (one line
    when the model runs at its pipeline's defaults, else None), ``adapters`` (the identity records
    of its LoRAs and component checkpoints), ``pipeline`` (the class that runs it),
    ``lora_warnings`` (a LoRA whose card names another base: lora_card.py)."""

    pipeline: str
    settings: dict
    sources: dict
    warning: str | None = None
    adapters: tuple = ()
    model_records: dict = field(default_factory=dict)  # a single file's and a quantization's identity records
    lora_warnings: tuple[str, ...] = ()

    def lines(self) -> list[str]:
        """One line per setting: ``key=value  (source)``, in the order they were chosen."""
        keys = list(dict.fromkeys([*self.sources, *self.settings]))
        return [f"{k}={self.settings.get(k, 'set by the pipeline')!r}  ({self.sources.get(k, '--set')})" for k in keys]

    def warnings(self) -> list[str]:
        """The lines a run prints whatever ``--quiet`` says: settings nobody chose, LoRAs on another base."""
        return [w for w in (self.warning, *self.lora_warnings) if w]


def _native_from_configs(read_config: Callable[[str], dict | None], params: dict) -> int | None:
    """The resolution a pipeline computes when none is asked, from its configs: the denoiser's
    ``sample_size`` times the VAE's scale factor (2 ** (blocks - 1)); None when they do not say."""
    vae = read_config("vae") or {}
    blocks = vae.get("block_out_channels")
    for name in ("unet", "transformer"):
        sample = (read_config(name) or {}).get("sample_size")
        if isinstance(sample, (list, tuple)) and sample:
            sample = sample[0]
        if isinstance(sample, int) and isinstance(blocks, (list, tuple)) and blocks:
            return sample * 2 ** (len(blocks) - 1)
    return None


def _tiny(kind: str, checked: CheckedSpec) -> bool:
    """A built-in tiny model, or a single file read with one's configs: the tiny settings apply."""
    return kind == "builtin" or (checked.single_file is not None and checked.single_file.base.builtin)


def plan_settings(spec: str, *, revision: str | None = None, device=None, dtype=None,
                  token: str | bool | None = None, overrides: dict | None = None, offload: str | None = None,
                  loras: Sequence[str] = (), components: Mapping[str, str] | None = None,
                  lora_trigger: bool | str | None = None, **weight_options) -> SettingsPlan:
    """:func:`check_spec` (``weight_options``: its ``base``, ``quantize``, ``lora_unet_only``),
    then every call setting the run will use with its value and source (model_cards.py; the LoRA
    trigger as ``lora_trigger``), the warnings for a model on its pipeline's defaults and a LoRA on
    another base, and the adapters', single file's and quantization's identity records: what the
    plan prints and run_config.json / results.json record."""
    checked = check_spec(spec, revision=revision, device=device, dtype=dtype, token=token, overrides=overrides,
                         offload=offload, loras=loras, components=components, lora_trigger=lora_trigger,
                         **weight_options)
    if checked.choice is None:  # a callable or an image API: its settings are what --set passes
        return SettingsPlan(checked.name, dict(overrides or {}), {k: SOURCE_SET for k in overrides or {}})
    kind, _ = parse_text_to_image_spec(spec)
    params = named_parameters(checked.choice.cls.__call__)
    settings, sources = choose_call_settings(
        params, pipeline_class=checked.name, read_config=checked.read_config, overrides=dict(overrides or {}),
        builtin=TINY_SD_SETTINGS if _tiny(kind, checked) else None, cards=checked.cards())
    native = _native_from_configs(checked.read_config, params)
    for key in ("height", "width"):
        if key in params and settings.get(key) is None and native:
            settings[key] = native
    if checked.trigger is not None:
        settings["lora_trigger"], sources["lora_trigger"] = checked.trigger
    warning = None if _tiny(kind, checked) else settings_warning(spec, sources, why=checked.identity.unfollowed)
    return SettingsPlan(checked.name, settings, sources, warning, tuple(checked.records()),
                        model_records=checked.model_records(), lora_warnings=tuple(checked.lora_warnings()))


def planned_setting_sources(spec: str, pipeline_class: str, overrides: dict | None = None, *,
                            revision: str | None = None, token: str | bool | None = None) -> dict[str, str]:
    """Where each call setting of ``spec`` will come from (:func:`plan_settings`' ``sources``);
    {} for callables and image APIs. Kept for callers that checked the spec already."""
    if parse_text_to_image_spec(spec)[0] not in ("builtin", "local", "hub"):
        return {}
    return plan_settings(spec, revision=revision, token=token, overrides=overrides, device="cpu").sources


def load_text_to_image(
    spec: str | Callable,
    *,
    revision: str | None = None,
    device=None,
    dtype=None,
    variant: str | None = None,
    token: str | bool | None = None,
    compile: bool | str | None = None,
    compile_vae: bool = False,
    offload: str | None = None,
    loras: Sequence[str] = (),
    components: Mapping[str, str] | None = None,
    base: str | None = None,
    quantize: str | None = None,
    lora_unet_only: bool = False,
    lora_trigger: bool | str | None = None,
    **overrides,
) -> TextToImageModel:
    """Load a text-to-image model from a spec (see module docstring).

    ``overrides``: generation settings (``num_inference_steps``, ``guidance_scale``,
    ``height``, ``width``, ``negative_prompt``, any other argument of the pipeline's
    call, or ``scheduler="DPMSolverMultistepScheduler"``); for callables, keyword
    arguments passed to it. Errors in the spec, a missing device, an uncached model
    without network or a gated model raise :class:`ModelSpecError` (one line) before
    any weights are loaded.

    ``compile``: ``torch.compile`` of the modules that denoise (``compile_vae``: and the VAE
    decoder); None (default) = on with mode ``default`` on CUDA, off elsewhere; False = off; or
    a mode name (see :mod:`benchmark.models.cuda_speed`, which also sets channels-last and fused
    QKV projections on CUDA). ``offload``: ``auto`` (None), ``none``, ``model`` or
    ``sequential`` (diffusers' CPU offload, CUDA only; auto offloads only what does not fit).

    ``spec`` may be a single-file checkpoint (single_file.py) read with the configs of ``base``;
    ``quantize``: ``BACKEND:SCHEME`` (quantization.py); ``lora_unet_only``: a LoRA's text-encoder
    layers skipped and recorded (lora.py).

    ``loras``: ``PATH_OR_HUB_ID[:SCALE]`` texts (lora.py), fused in this order; ``components``:
    ``{"unet": REF}`` (component_weights.py: SDXL-Lightning's UNets); ``model.adapters`` holds their
    identity records (Hub repo and file or path, revision, sha256, scale, and what each LoRA's card
    says: lora_card.py). ``lora_trigger``: True puts the LoRA cards' ``instance_prompt`` before
    every prompt, a text that text (``settings["lora_trigger"]``).

    Call settings not in ``overrides`` come from the card table (the adapters' rows, the model's
    own, its base_model's), the LoRAs' cards, a structural hint or the pipeline's defaults
    (model_cards.py); ``model.setting_sources`` says which.
    """
    if callable(spec) and not isinstance(spec, str):
        require("PIL", extra="audit", purpose="generate images")
        name = getattr(spec, "__qualname__", None) or type(spec).__qualname__
        module = getattr(spec, "__module__", None) or type(spec).__module__
        return CallableTextToImage(spec, model_id=f"python:{module}:{name}", revision=revision, overrides=overrides)
    kind, value = parse_text_to_image_spec(spec)
    checked = check_spec(spec, revision=revision, device=device, dtype=dtype, token=token, overrides=overrides,
                         offload=offload, loras=loras, components=components, base=base, quantize=quantize,
                         lora_unet_only=lora_unet_only, lora_trigger=lora_trigger)
    if kind == "python":
        require("PIL", extra="audit", purpose="generate images")
        return CallableTextToImage(import_callable(value), model_id=value, revision=revision, overrides=overrides)
    if kind == "openai":
        require("PIL", "httpx", "tenacity", extra="audit", purpose="call an image-generation API")
        return OpenAIImagesModel(value, **overrides)

    require("torch", "diffusers", "transformers", "PIL", extra="audit", purpose="generate images")
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    records = checked.model_records()
    identity = dict(adapters=tuple(checked.records()), cards=tuple(checked.cards()), card_match=checked.identity.how,
                    checkpoint=records.get("checkpoint"), quantization=records.get("quantization"))
    weights = dict(loader=checked.choice.loader, offload=offload, cls=checked.choice.cls, loras=checked.adapters,
                   components=checked.components, single_file=checked.single_file, quantization=checked.quantization)

    def model(pipe, mode: str, how: dict | None, **who) -> DiffusersTextToImage:
        speed = SpeedChoice(compile=compile, compile_vae=compile_vae, offload=mode, offload_auto=how)
        return with_trigger(DiffusersTextToImage(pipe, PipelineIdentity(**who, **identity), device=dev, dtype=dt,
                                                 overrides=overrides, speed=speed), checked.trigger)

    return _load_by_kind(kind, value, checked, partial(load_diffusers, **weights, device=dev, dtype=dt), model,
                         revision=revision, variant=variant, token=token)


def _load_by_kind(kind: str, value: str, checked: CheckedSpec, load: Callable, model: Callable, *,
                  revision: str | None, variant: str | None, token) -> DiffusersTextToImage:
    """The pipeline of a built-in model, a local folder, a single file (its base gives the configs
    and the other weights) or a Hub model, loaded by ``load`` and wrapped by ``model``."""
    if kind == "builtin":
        folder = build_builtin(value, build_tiny_sd, kind="text-to-image")
        pipe, mode, how = load(str(folder), revision=None)
        return model(pipe, mode, how, model_id=f"builtin:{value}", revision=f"builtin-v{BUILDER_VERSION}",
                     family="tiny", is_builtin=True)
    if kind == "local":
        pipe, mode, how = load(value, revision=None, variant=variant)
        return model(pipe, mode, how, model_id=value)
    if kind == "single_file":  # the model is the file
        single = checked.single_file
        pipe, mode, how = load(single.base.load_from, revision=None, token=token)
        return model(pipe, mode, how, model_id=single.model_id, revision=single.revision, commit=single.weights.commit,
                     family="tiny" if single.base.builtin else None)
    # hub (or its local cache)
    ensure_hub_model(value, ["model_index.json"], revision=revision, token=token, what="text-to-image model")
    pipe, mode, how = load(value, revision=revision, variant=variant, token=token)
    return model(pipe, mode, how, model_id=value, revision=revision,
                 commit=cached_commit(value, "model_index.json", revision))
