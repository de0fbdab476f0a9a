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
from collections.abc import Callable
from pathlib import Path

from benchmark.extras import require

from .api_images import OpenAIImagesModel, check_api_model
from .cuda_speed import OFFLOAD_MODES, check_offload
from .builtin_cache import BUILDER_VERSION, build_builtin, check_builtin_name
from .call_settings import PIPELINE_CALL_ARGUMENTS, check_call_settings, named_parameters
from .model_cards import choose_call_settings
from .pipeline_classes import PipelineChoice, choose_pipeline_class
from .device import resolve_device, resolve_dtype
from .errors import DeviceUnavailableError, MalformedSpecError
from .generation_output import GenerationOutput  # noqa: F401 (re-exported: models return it)
from .hub_access import cached_commit, ensure_hub_model, is_local_folder, looks_like_path
from .callable_model import CallableTextToImage, import_callable
from .diffusers_model import DiffusersTextToImage, load_diffusers
from .text_to_image_base import TextToImageModel
from .tiny_sd import TINY_SD_SETTINGS, build_tiny_sd

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
        fn = import_callable(value)
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
        return CallableTextToImage(import_callable(value), model_id=value, revision=revision, overrides=overrides)
    if kind == "openai":
        require("PIL", "httpx", "tenacity", extra="audit", purpose="call an image-generation API")
        return OpenAIImagesModel(value, **overrides)

    require("torch", "diffusers", "transformers", "PIL", extra="audit", purpose="generate images")
    dev = resolve_device(device)
    dt = resolve_dtype(dtype, dev)
    if kind == "builtin":
        folder = build_builtin(value, build_tiny_sd, kind="text-to-image")
        pipe, mode, how = load_diffusers(str(folder), revision=None, device=dev, dtype=dt, offload=offload)
        return DiffusersTextToImage(pipe, model_id=f"builtin:{value}", revision=f"builtin-v{BUILDER_VERSION}",
                                    device=dev, dtype=dt, family="tiny", overrides=overrides, is_builtin=True,
                                    offload=mode, offload_auto=how, **speed)
    if kind == "local":
        pipe, mode, how = load_diffusers(value, revision=None, device=dev, dtype=dt, variant=variant,
                                          loader=choice.loader, offload=offload)
        return DiffusersTextToImage(pipe, model_id=value, revision=None, device=dev, dtype=dt, overrides=overrides,
                                    offload=mode, offload_auto=how, **speed)
    # hub (or its local cache): the model card table is keyed by this ID
    ensure_hub_model(value, ["model_index.json"], revision=revision, token=token, what="text-to-image model")
    pipe, mode, how = load_diffusers(value, revision=revision, device=dev, dtype=dt, variant=variant, token=token,
                                      loader=choice.loader, offload=offload)
    commit = cached_commit(value, "model_index.json", revision)
    return DiffusersTextToImage(pipe, model_id=value, revision=revision, device=dev, dtype=dt, overrides=overrides,
                                commit=commit, card_id=value, offload=mode, offload_auto=how, **speed)
