"""Text-to-image models behind one interface, chosen by a spec string.

Specs accepted by :func:`load_text_to_image`:

* ``builtin:tiny-sd``: the built-in tiny Stable Diffusion (random weights, built by
  :func:`build_tiny_sd` at the end of this module);
* a Hub model ID (``stable-diffusion-v1-5/stable-diffusion-v1-5``), with ``revision=``;
* a local diffusers folder (holding ``model_index.json``);
* ``python:module.path:function``: a plain callable
  ``(prompts: list[str], seeds: list[int]) -> list[PIL.Image]`` (API-only models);
  a callable object is also accepted directly.

Diffusers pipelines are loaded with ``AutoPipelineForText2Image.from_pretrained``.
Every image gets its own ``torch.Generator`` (on the CPU, so the initial noise is the
same on every device) seeded from its probe seed: an image does not depend on the
batch it was generated in, its size, or its position in it.
"""

from __future__ import annotations

import importlib
import inspect
import os
import shutil
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmark.extras import require

from .api_images import OpenAIImagesModel, check_api_model
from .cuda_speed import (
    OFFLOAD_MODES, apply_cuda_layout, apply_offload, check_offload, choose_offload, compile_pipeline,
    probe_batch_size, resolve_compile_mode, uncompile_pipeline,
)
from .builtin_cache import BUILDER_VERSION, BUILTIN_SEED, build_builtin, check_builtin_name
from .call_settings import PIPELINE_CALL_ARGUMENTS, check_call_settings, named_parameters
from .model_cards import choose_call_settings
from .pipeline_classes import AUTO_LOADER, PipelineChoice, choose_pipeline_class
from .clip_tokenizer import CLIP_MAX_LENGTH, CLIP_VOCAB_SIZE, build_clip_tokenizer
from .device import resolve_device, resolve_dtype
from .errors import DeviceUnavailableError, MalformedSpecError
from .generation_output import GenerationOutput  # noqa: F401 (re-exported: models return it)
from .hub_access import cached_commit, ensure_hub_model, is_local_folder, looks_like_path

__all__ = [
    "GenerationOutput",
    "TextToImageModel",
    "DiffusersTextToImage",
    "CallableTextToImage",
    "OFFLOAD_MODES",
    "check_text_to_image",
    "load_text_to_image",
    "parse_text_to_image_spec",
    "pipeline_choice",
    "planned_setting_sources",
    "TINY_SD_SETTINGS",
    "build_tiny_sd",
]


class TextToImageModel(ABC):
    """One interface for every text-to-image model.

    Attributes for the run manifest: ``model_id``, ``revision`` (None = the default
    branch; ``settings["commit"]`` holds the resolved commit when known), ``settings``
    (a JSON-serialisable dict of everything that determines the images) and
    ``is_builtin`` (True for random-weight built-in models: their outputs are meaningless).
    """

    model_id: str
    revision: str | None = None
    settings: dict[str, Any]
    is_builtin: bool = False

    @abstractmethod
    def _generate(self, prompts: list[str], seeds: list[int]) -> GenerationOutput: ...

    def generate(self, prompts: Sequence[str], seeds: Sequence[int]) -> GenerationOutput:
        """One image per (prompt, seed) pair, in order."""
        prompts, seeds = [str(p) for p in prompts], [int(s) for s in seeds]
        if len(prompts) != len(seeds):
            raise ValueError(f"{len(prompts)} prompts but {len(seeds)} seeds")
        if not prompts:
            return GenerationOutput(images=[], nsfw=[])
        out = self._generate(prompts, seeds)
        if len(out.images) != len(prompts):
            raise RuntimeError(f"model {self.model_id} returned {len(out.images)} images for {len(prompts)} prompts")
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_id!r}, revision={self.revision!r})"


# ------------------------------------------------------------------------- diffusers


def _family(pipe) -> str:
    name = type(pipe).__name__
    if "StableDiffusion3" in name:
        return "sd3"
    if "StableDiffusionXL" in name:
        return "sdxl"
    if name.startswith("StableDiffusion"):
        encoder = getattr(pipe, "text_encoder", None)
        hidden = getattr(getattr(encoder, "config", None), "hidden_size", None)
        return "sd2" if hidden == 1024 else "sd1"
    return "other"


def _native_resolution(pipe) -> int | None:
    """The resolution the pipeline makes when none is asked: its denoiser's sample size (a UNet's
    ``sample_size``, a DiT pipeline's ``default_sample_size``) times the VAE's scale factor, as
    the pipelines compute it themselves."""
    factor = getattr(pipe, "vae_scale_factor", None)
    sample = getattr(pipe, "default_sample_size", None)
    if not isinstance(sample, int):
        unet = getattr(pipe, "unet", None)
        sample = getattr(getattr(unet, "config", None), "sample_size", None)
    if isinstance(sample, (list, tuple)) and sample:
        sample = sample[0]
    if isinstance(sample, int) and isinstance(factor, int):
        return sample * factor
    return None


def _component_config(pipe) -> Callable[[str], dict | None]:
    def read(component: str) -> dict | None:
        config = getattr(getattr(pipe, component, None), "config", None)
        return dict(config) if config is not None else None

    return read


def _replace_scheduler(pipe, scheduler: str | None) -> None:
    """``--set scheduler=NAME``: the pipeline's scheduler rebuilt as that diffusers class."""
    import diffusers

    if scheduler is None:
        return
    cls = getattr(diffusers, str(scheduler), None)
    if cls is None or not hasattr(cls, "from_config"):
        raise MalformedSpecError(f"unknown diffusers scheduler {scheduler!r}")
    if getattr(pipe, "scheduler", None) is None:
        raise MalformedSpecError(f"{type(pipe).__name__} has several schedulers and none called scheduler: "
                                 "--set scheduler= cannot say which to replace")
    pipe.scheduler = cls.from_config(pipe.scheduler.config)


def _scheduler_names(pipe) -> str | dict[str, str]:
    """The scheduler's class; a pipeline with several (unCLIP: prior, decoder, super-resolution)
    gives each by component name."""
    from diffusers import SchedulerMixin

    found = {name: type(c).__name__ for name, c in pipe.components.items() if isinstance(c, SchedulerMixin)}
    if "scheduler" in found:
        return found["scheduler"]
    return found if len(found) != 1 else next(iter(found.values()))


def _attention_name() -> str:
    import torch.nn.functional as F

    return "sdpa" if hasattr(F, "scaled_dot_product_attention") else "eager"


class DiffusersTextToImage(TextToImageModel):
    """A diffusers pipeline; ``settings`` are the call arguments plus provenance."""

    def __init__(
        self,
        pipe,
        *,
        model_id: str,
        revision: str | None,
        device,
        dtype,
        family: str | None = None,
        overrides: dict[str, Any] | None = None,
        is_builtin: bool = False,
        commit: str | None = None,
        compile: bool | str | None = None,
        compile_vae: bool = False,
        card_id: str | None = None,
        offload: str = "none",
        offload_auto: dict | None = None,
    ):
        import diffusers
        import torch

        self.pipe = pipe
        self.model_id = model_id
        self.revision = revision
        self.is_builtin = is_builtin
        self.device = device
        self.dtype = dtype
        family = family or _family(pipe)
        overrides = dict(overrides or {})
        # Batched kernels round differently for different batch sizes (by one grey
        # level here and there). On the CPU, where batching buys little, images are
        # generated one call each so that pixels never depend on the batch.
        self.batch_invariant = bool(overrides.pop("batch_invariant", device.type == "cpu"))

        _replace_scheduler(pipe, overrides.pop("scheduler", None))
        call = self._choose_call(overrides, card_id=None if is_builtin else card_id, builtin=family == "tiny")

        checker = getattr(pipe, "safety_checker", None)
        self.settings = {
            **call,
            "family": family,
            "pipeline": type(pipe).__name__,
            "scheduler": _scheduler_names(pipe),
            "dtype": str(dtype).removeprefix("torch."),
            "device": str(device),
            "attention": _attention_name(),
            "safety_checker": checker is not None,
            "generator": "torch.Generator(cpu).manual_seed(seed), one per image",
            "batch_invariant": self.batch_invariant,
            "diffusers_version": diffusers.__version__,
            "torch_version": torch.__version__,
        }
        if commit:
            self.settings["commit"] = commit
        if is_builtin:
            self.settings["builtin"] = "random weights: outputs are meaningless"
        pipe.set_progress_bar_config(disable=True)
        if "height" not in self.call_parameters:
            # the call sets no resolution (unCLIP: its super-resolution UNet decides): record the
            # size of the images it makes, from one short call
            self.settings["image_size"] = list(self._call(["a photo"], [0], **self._short_call()).images[0].size)
        self._set_up_speed(compile, compile_vae, offload, offload_auto)

    def _choose_call(self, overrides: dict, *, card_id: str | None, builtin: bool) -> dict:
        """The call arguments (model_cards.py: --set, the model card table, a structural hint, the
        pipeline's defaults), with the resolution always explicit; ``setting_sources`` says where
        each came from (recorded in run_config.json, printed in the plan)."""
        pipe = self.pipe
        # only named parameters of the pipeline's call (its **kwargs only takes
        # deprecated callback arguments, and would swallow typos silently)
        params = self.call_parameters = named_parameters(pipe.__call__)
        check_call_settings(pipe.__call__, overrides, what=type(pipe).__name__, reserved=PIPELINE_CALL_ARGUMENTS)
        call, self.setting_sources = choose_call_settings(
            params, pipeline_class=type(pipe).__name__, model_id=card_id, read_config=_component_config(pipe),
            overrides=overrides, builtin=TINY_SD_SETTINGS if builtin else None)
        native = _native_resolution(pipe)
        for key in ("height", "width"):  # always recorded: the size of the images made
            if key in params and call.get(key) is None and native:
                call[key] = native
        self.call_kwargs = call
        return call

    def _set_up_speed(self, compile: bool | str | None, compile_vae: bool, offload: str,
                      offload_auto: dict | None) -> None:
        """CUDA speed settings (cuda_speed.py): layout now, compile once the batch is known;
        on other devices nothing changes and nothing is recorded. ``speed`` is what happened
        (written to run_config.json by the runner), ``settings`` what was asked."""
        self.compile_explicit = compile is not None and compile is not False
        if offload == "sequential" and compile is None:
            compile = False  # sequential offload moves weights inside each forward: nothing to compile
        elif offload == "sequential" and self.compile_explicit:
            raise MalformedSpecError("--offload sequential cannot be compiled (weights move inside each forward): "
                                     "use --offload model, or --no-compile")
        self.compile_mode = resolve_compile_mode(compile, self.device)
        self.compile_vae = bool(compile_vae)
        self.static_batch: int | None = None
        self.compiled = False
        self.speed: dict[str, Any] = {}
        if self.device.type == "cuda":
            layout = apply_cuda_layout(self.pipe)
            self.settings.update(layout)
            self.settings["compile"] = self.compile_mode or False
            self.settings["offload"] = offload
            self.speed.update({**layout, "compile": self.compile_mode or False, "offload": offload})
            if offload_auto:
                self.speed["offload_auto"] = offload_auto

    def _short_call(self) -> dict[str, int]:
        """Two denoising steps for every stage of the pipeline (a combined pipeline's prior and
        decoder too): the batch-size probe and the compile warm-up need shapes, not images."""
        return {k: 2 for k in self.call_parameters if k.endswith("num_inference_steps")}

    def auto_batch_size(self) -> tuple[int, dict] | None:
        """The largest batch that fits the GPU at this model's resolution (probed with two
        denoising steps, uncompiled), or None off CUDA or when images are made one at a time."""
        if self.device.type != "cuda" or self.batch_invariant or self.compiled:
            return None

        def run(batch: int) -> None:
            self._call(["a photo of a person"] * batch, list(range(batch)), **self._short_call())

        return probe_batch_size(run, self.device)

    def prepare_batches(self, batch_size: int) -> None:
        """The batch size is known: pad every call to it (static shapes: one compiled graph,
        pixels independent of where a batch starts) and compile when asked. Off CUDA images
        are made one per call (``batch_invariant``) and nothing changes."""
        if not self.batch_invariant:
            self.static_batch = int(batch_size)
            self.settings["static_batch"] = self.static_batch
        if self.compile_mode and not self.compiled:
            self.speed.update(compile_pipeline(self.pipe, self.compile_mode, vae_decoder=self.compile_vae))
            self.compiled = True

    def warm_up(self) -> bool:
        """Compile now (one call at the static batch, two steps), so the compile time is
        reported apart from the time per image; False when nothing is compiled. A compile that
        fails is undone and the run goes on uncompiled, said in one line and recorded in
        ``speed`` (unless compile was asked for explicitly: then the run stops with that line)."""
        if not self.compiled:
            return False
        n = self.static_batch or 1
        try:
            self._call(["a photo of a person"] * n, list(range(n)), **self._short_call())
        except Exception as err:  # noqa: BLE001 - dynamo / inductor raise many kinds
            import torch

            if isinstance(err, torch.cuda.OutOfMemoryError):
                raise
            first = (str(err).strip().splitlines() or [""])[0][:200]
            why = f"{type(err).__name__}: {first}" if first else type(err).__name__
            modules = ", ".join(self.speed.get("compiled", []))
            if self.compile_explicit:
                raise RuntimeError(f"torch.compile of {modules} failed ({why}); run with --no-compile") from err
            uncompile_pipeline(self.pipe)
            self.compiled = False
            self.speed.update({"compile": False, "compiled": [], "compile_error": why})
            print(f"t2ibench: torch.compile of {modules} failed ({why}); generating uncompiled", file=sys.stderr)
        return True

    def _generate(self, prompts: list[str], seeds: list[int]) -> GenerationOutput:
        if self.batch_invariant and len(prompts) > 1:
            parts = [self._call([p], [s]) for p, s in zip(prompts, seeds)]
            return GenerationOutput(
                images=[im for part in parts for im in part.images],
                nsfw=[flag for part in parts for flag in part.nsfw],
            )
        n = len(prompts)
        if self.static_batch and n < self.static_batch:
            # a partial (last) batch is padded with copies of its last image, dropped after
            pad = self.static_batch - n
            out = self._call(prompts + prompts[-1:] * pad, seeds + seeds[-1:] * pad)
            return GenerationOutput(images=out.images[:n], nsfw=out.nsfw[:n])
        return self._call(prompts, seeds)

    def _call(self, prompts: list[str], seeds: list[int], **call_overrides) -> GenerationOutput:
        import torch

        # One generator per image, on the CPU: the pipeline draws each image's
        # initial latents (and any per-step noise) from that image's own generator.
        generators = [torch.Generator("cpu").manual_seed(s) for s in seeds]
        with torch.inference_mode():
            out = self.pipe(
                prompt=prompts,
                generator=generators,
                num_images_per_prompt=1,
                output_type="pil",
                **{**self.call_kwargs, **call_overrides},
            )
        flags = getattr(out, "nsfw_content_detected", None)
        nsfw = [None] * len(prompts) if flags is None else [bool(f) for f in flags]
        return GenerationOutput(images=list(out.images), nsfw=nsfw)


def _load_diffusers(path_or_id: str, *, revision, device, dtype, variant=None, token=None, loader=AUTO_LOADER,
                    offload: str | None = None):
    """The pipeline (through ``loader``: pipeline_classes.py), on ``device`` or offloaded to it
    (cuda_speed.choose_offload); returns ``(pipe, offload mode, how auto chose it)``."""
    from diffusers import AutoPipelineForText2Image, DiffusionPipeline

    kwargs: dict[str, Any] = {"dtype": dtype}
    if revision:
        kwargs["revision"] = revision
    if variant:
        kwargs["variant"] = variant
    if token is not None:
        kwargs["token"] = token
    load = AutoPipelineForText2Image if loader == AUTO_LOADER else DiffusionPipeline
    pipe = load.from_pretrained(path_or_id, **kwargs)
    mode, how = choose_offload(offload, pipe, device)
    apply_offload(pipe, mode, device)
    vae = getattr(pipe, "vae", None)
    if device.type == "cuda" and hasattr(vae, "enable_slicing"):
        # SDPA (flash / memory-efficient kernels) is diffusers' default attention on
        # torch >= 2; the VAE decodes one image at a time to bound memory at large batches.
        vae.enable_slicing()
    return pipe, mode, how


# -------------------------------------------------------------------------- callable


class CallableTextToImage(TextToImageModel):
    """A plain callable ``(prompts, seeds) -> list[PIL.Image]`` (e.g. an API client).

    It may also return a :class:`GenerationOutput` (to report safety flags). Keyword
    ``overrides`` are passed to it on every call and recorded in ``settings``.
    """

    def __init__(self, fn: Callable, *, model_id: str, revision: str | None = None, overrides=None):
        self.fn = fn
        self.model_id = model_id
        self.revision = revision
        self.overrides = dict(overrides or {})
        extra = getattr(fn, "t2ibench_settings", None)
        self.settings = {"kind": "python-callable", "callable": model_id, **(extra or {}), **self.overrides}

    def _generate(self, prompts: list[str], seeds: list[int]) -> GenerationOutput:
        from PIL import Image

        out = self.fn(prompts, seeds, **self.overrides)
        if isinstance(out, GenerationOutput):
            return out
        images = list(out)
        bad = [type(im).__name__ for im in images if not isinstance(im, Image.Image)]
        if bad:
            raise TypeError(f"callable {self.model_id} must return PIL images, got {bad[0]}")
        return GenerationOutput(images=images)


def _import_callable(spec: str) -> Callable:
    target = spec[len("python:") :]
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise MalformedSpecError(f"malformed spec {spec!r}: use python:module.path:function")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise MalformedSpecError(f"spec {spec!r}: cannot import module {module_name!r} ({err})") from None
    fn = module
    for part in attr.split("."):
        if not hasattr(fn, part):
            raise MalformedSpecError(f"spec {spec!r}: module {module_name!r} has no attribute {attr!r}")
        fn = getattr(fn, part)
    if not callable(fn):
        raise MalformedSpecError(f"spec {spec!r}: {attr!r} is not callable")
    return fn


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


def check_text_to_image(
    spec: str,
    *,
    revision: str | None = None,
    device=None,
    dtype=None,
    token: str | bool | None = None,
    overrides: dict | None = None,
    offload: str | None = None,
) -> str:
    """Everything about a text-to-image spec that can fail, checked before any weights load;
    returns the pipeline's class name (or ``python-callable``, or the image API's model):
    :func:`_check_spec`."""
    checked = _check_spec(spec, revision=revision, device=device, dtype=dtype, token=token, overrides=overrides,
                          offload=offload)
    return checked.name if isinstance(checked, PipelineChoice) else checked


def _check_spec(spec: str, *, revision: str | None, device, dtype, token: str | bool | None, overrides: dict | None,
                offload: str | None) -> PipelineChoice | str:
    """Everything about a text-to-image spec that can fail, checked before any weights load;
    returns the class that will run a diffusers pipeline (or ``python-callable``, or the image
    API's model), so that loading does not work it out again. One-line errors for: the spec's
    syntax, a missing local folder or Hub model (offline, gated, no such revision),
    ``revision`` with a built-in model or local folder (they have no revisions), float16 on a
    CPU, a device that is not there, a pipeline diffusers cannot run as text-to-image (the class
    that will run is the one checked: pipeline_classes.py), an offload mode that does not apply,
    and each ``--set`` setting that class's call does not take or whose value has the wrong type."""
    overrides = dict(overrides or {})
    kind, value = parse_text_to_image_spec(spec)
    if revision and kind in ("builtin", "local", "python", "openai"):
        what = {"builtin": "a built-in model", "local": "a local folder", "python": "a Python callable",
                "openai": "an image API"}[kind]
        raise MalformedSpecError(f"--revision {revision} does not apply to {what} ({spec}); "
                                 "revisions are Hub commits, branches or tags")
    if kind == "python":
        fn = _import_callable(value)
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(fn).parameters.values()):
            check_call_settings(fn, overrides, what=value)
        return "python-callable"
    if kind == "openai":
        return check_api_model(value, overrides)
    require("torch", "diffusers", "transformers", "PIL", extra="audit", purpose="generate images")
    import diffusers

    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    if dev.type == "cpu" and str(dt) == "torch.float16":
        raise DeviceUnavailableError("--dtype float16 does not run on the CPU (diffusers' CPU kernels lack "
                                     "half precision and each image would take minutes): use float32 or bfloat16")
    choice = pipeline_choice(spec, revision=revision, token=token)
    scheduler = overrides.get("scheduler")
    if scheduler is not None and not hasattr(getattr(diffusers, str(scheduler), None), "from_config"):
        raise MalformedSpecError(f"unknown diffusers scheduler {scheduler!r}")
    check_offload(offload, dev)
    check_call_settings(choice.cls.__call__, overrides, what=choice.name, reserved=PIPELINE_CALL_ARGUMENTS)
    return choice


def pipeline_choice(spec: str, *, revision: str | None = None, token: str | bool | None = None) -> PipelineChoice:
    """The diffusers class that will run ``spec`` (a built-in model, local folder or Hub ID) and
    its loader, from ``model_index.json`` alone (pipeline_classes.py)."""
    kind, value = parse_text_to_image_spec(spec)
    if kind not in ("builtin", "local", "hub"):
        raise MalformedSpecError(f"{spec} is not a diffusers pipeline")
    index = _pipeline_index(kind, value, revision, token)
    return choose_pipeline_class(index, spec=spec, local_folder=Path(value) if kind == "local" else None)


def planned_setting_sources(spec: str, pipeline_class: str, overrides: dict | None = None, *,
                            revision: str | None = None, token: str | bool | None = None) -> dict[str, str]:
    """Where each call setting of a diffusers ``spec`` will come from (model_cards.py), worked out
    before any weights load, for the plan; {} for callables and image APIs."""
    kind, value = parse_text_to_image_spec(spec)
    if kind not in ("builtin", "local", "hub"):
        return {}
    import diffusers

    cls = getattr(diffusers, pipeline_class, None)
    if cls is None:
        return {}

    def read_config(component: str) -> dict | None:
        import json

        if kind == "local":
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

    _, sources = choose_call_settings(
        named_parameters(cls.__call__), pipeline_class=pipeline_class,
        model_id=value if kind == "hub" else None, read_config=read_config, overrides=dict(overrides or {}),
        builtin=TINY_SD_SETTINGS if kind == "builtin" else None)
    return sources


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

    Call settings not given in ``overrides`` come from the model card table, a structural hint
    or the pipeline's defaults (:mod:`benchmark.models.model_cards`); ``model.setting_sources``
    says which.
    """
    speed = {"compile": compile, "compile_vae": compile_vae}
    if callable(spec) and not isinstance(spec, str):
        require("PIL", extra="audit", purpose="generate images")
        name = getattr(spec, "__qualname__", None) or type(spec).__qualname__
        module = getattr(spec, "__module__", None) or type(spec).__module__
        return CallableTextToImage(spec, model_id=f"python:{module}:{name}", revision=revision, overrides=overrides)
    kind, value = parse_text_to_image_spec(spec)
    choice = _check_spec(spec, revision=revision, device=device, dtype=dtype, token=token, overrides=overrides,
                         offload=offload)
    if kind == "python":
        require("PIL", extra="audit", purpose="generate images")
        return CallableTextToImage(_import_callable(value), model_id=value, revision=revision, overrides=overrides)
    if kind == "openai":
        require("PIL", "httpx", "tenacity", extra="audit", purpose="call an image-generation API")
        return OpenAIImagesModel(value, **overrides)

    require("torch", "diffusers", "transformers", "PIL", extra="audit", purpose="generate images")
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    if kind == "builtin":
        folder = build_builtin(value, build_tiny_sd, kind="text-to-image")
        pipe, mode, how = _load_diffusers(str(folder), revision=None, device=dev, dtype=dt, offload=offload)
        return DiffusersTextToImage(pipe, model_id=f"builtin:{value}", revision=f"builtin-v{BUILDER_VERSION}",
                                    device=dev, dtype=dt, family="tiny", overrides=overrides, is_builtin=True,
                                    offload=mode, offload_auto=how, **speed)
    if kind == "local":
        pipe, mode, how = _load_diffusers(value, revision=None, device=dev, dtype=dt, variant=variant,
                                          loader=choice.loader, offload=offload)
        return DiffusersTextToImage(pipe, model_id=value, revision=None, device=dev, dtype=dt, overrides=overrides,
                                    offload=mode, offload_auto=how, **speed)
    # hub (or its local cache): the model card table is keyed by this ID
    ensure_hub_model(value, ["model_index.json"], revision=revision, token=token, what="text-to-image model")
    pipe, mode, how = _load_diffusers(value, revision=revision, device=dev, dtype=dt, variant=variant, token=token,
                                      loader=choice.loader, offload=offload)
    commit = cached_commit(value, "model_index.json", revision)
    return DiffusersTextToImage(pipe, model_id=value, revision=revision, device=dev, dtype=dt, overrides=overrides,
                                commit=commit, card_id=value, offload=mode, offload_auto=how, **speed)


# ---------------------------------------------------------------------------- builtin:tiny-sd

#: generation defaults for builtin:tiny-sd (64 px, 3 steps: ~0.1 s per image on CPU)
TINY_SD_SETTINGS = {"height": 64, "width": 64, "num_inference_steps": 3, "guidance_scale": 7.5}


def build_tiny_sd(folder: Path) -> None:
    """Write ``builtin:tiny-sd`` to ``folder``: a Stable Diffusion pipeline of 64 px with random
    weights (seed ``BUILTIN_SEED``) and a real CLIP BPE tokenizer built offline."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(BUILTIN_SEED)
    unet = UNet2DConditionModel(
        sample_size=32,  # latent size; x vae_scale_factor 2 = 64 px
        in_channels=4,
        out_channels=4,
        block_out_channels=(16, 32),
        layers_per_block=1,
        norm_num_groups=8,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32,
        attention_head_dim=8,
    )
    torch.manual_seed(BUILTIN_SEED)
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"),
        block_out_channels=(16, 32),
        layers_per_block=1,
        norm_num_groups=8,
        latent_channels=4,
        sample_size=64,
    )
    torch.manual_seed(BUILTIN_SEED)
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=CLIP_VOCAB_SIZE,
            hidden_size=32,
            intermediate_size=64,
            num_attention_heads=4,
            num_hidden_layers=2,
            max_position_embeddings=CLIP_MAX_LENGTH,
            projection_dim=32,
            bos_token_id=49406,
            eos_token_id=49407,
            pad_token_id=49407,
        )
    )
    scheduler = DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )
    tokenizer = build_clip_tokenizer(folder / "_tokenizer_files")
    shutil.rmtree(folder / "_tokenizer_files")
    pipe = StableDiffusionPipeline(
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        unet=unet,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.save_pretrained(folder, safe_serialization=True)
