"""Check generation settings (``--set KEY=VALUE``) against a pipeline's call signature before
any weights are loaded: the name must be a named parameter of the call, and the value (as
YAML parsed it) must fit the parameter's annotation.

Only the shapes a command line can express are judged (numbers, text, booleans, lists, None);
a parameter annotated with anything else (tensors, generators, callbacks) cannot be set
from the command line, and says so.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from .errors import MalformedSpecError

#: settings that rebuild the pipeline's scheduler instead of going to the call: its class and the
#: config values few-step models are distilled for (``Scheduler.from_config(config, **these)``, as
#: the SDXL-Lightning, Hyper-SD, LCM-LoRA and TCD cards do); the model card table may set them
SCHEDULER_SETTINGS = ("scheduler", "timestep_spacing", "prediction_type", "use_karras_sigmas",
                      "rescale_betas_zero_snr")
#: settings the loader consumes itself instead of passing them to the call
LOADER_SETTINGS = SCHEDULER_SETTINGS + ("batch_invariant",)
#: arguments the runner passes to a diffusers pipeline's call itself (one seeded generator
#: per image, PIL output): a setting may not replace them
PIPELINE_CALL_ARGUMENTS = ("prompt", "generator", "num_images_per_prompt", "output_type")

_SCALARS = (bool, int, float, str, type(None))


def named_parameters(fn: Callable) -> dict[str, inspect.Parameter]:
    """The named parameters of ``fn`` (``**kwargs`` would swallow typos silently, so it is left out)."""
    try:  # annotations written as strings (``from __future__ import annotations``) become types
        signature = inspect.signature(fn, eval_str=True)
    except Exception:  # noqa: BLE001 - a name the module only imports for type checkers
        signature = inspect.signature(fn)
    return {k: p for k, p in signature.parameters.items()
            if k != "self" and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)}


def _fits(value: Any, annotation: Any) -> bool | None:
    """True / False when ``value`` does / does not fit ``annotation``; None when the annotation
    is not something a command-line value can be."""
    if annotation in (inspect.Parameter.empty, Any, object) or isinstance(annotation, str):
        return True  # unannotated, or an annotation that could not be evaluated: not judged
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        verdicts = [_fits(value, arm) for arm in typing.get_args(annotation)]
        if any(v is True for v in verdicts):
            return True
        return False if any(v is False for v in verdicts) else None
    if origin is typing.Literal:
        return value in typing.get_args(annotation)
    if origin in (list, tuple, typing.List, typing.Tuple) or annotation in (list, tuple):
        if not isinstance(value, (list, tuple)):
            return False
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return all(_fits(v, args[0]) is not False for v in value) if args else True
    if origin in (dict, Mapping) or annotation is dict:
        return isinstance(value, dict)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation in _SCALARS:
        return isinstance(value, annotation)
    return None


def _type_text(annotation: Any) -> str:
    text = inspect.formatannotation(annotation)
    return text.replace("typing.", "")


def check_call_settings(fn: Callable, settings: Mapping[str, Any], *, what: str,
                        reserved: tuple[str, ...] = ()) -> None:
    """One line for the first setting ``fn`` cannot take: one the caller sets itself
    (``reserved``), an unknown name (with the names it takes), a value of the wrong type, or a
    parameter the command line cannot set."""
    params = named_parameters(fn)
    for key, value in settings.items():
        if key in LOADER_SETTINGS:
            continue
        if key in reserved:
            raise MalformedSpecError(f"setting {key!r} of {what} is set by the benchmark for every image "
                                     f"(it sets {', '.join(reserved)})")
        if key not in params:
            raise MalformedSpecError(
                f"unknown setting {key!r} for {what}; it takes: {', '.join(sorted(params))}"
            )
        annotation = params[key].annotation
        if annotation is inspect.Parameter.empty and params[key].default not in (inspect.Parameter.empty, None):
            annotation = type(params[key].default)
        verdict = _fits(value, annotation)
        if verdict is None:
            raise MalformedSpecError(f"setting {key!r} of {what} takes {_type_text(annotation)}, "
                                     "which cannot be given on the command line")
        if not verdict:
            raise MalformedSpecError(f"setting {key}={value!r} for {what}: expected {_type_text(annotation)}, "
                                     f"got {type(value).__name__}")
