"""Whether classifier-free guidance is on, recorded from what the pipeline will do and checked
against what it did.

A guidance scale in the settings is not guidance in the images: diffusers turns classifier-free
guidance off by itself when ``true_cfg_scale`` comes without a ``negative_prompt`` (Qwen-Image,
FLUX), when a scale is at or below its pipeline's threshold (1 for most, 0 for Z-Image), or when
the denoiser embeds the scale instead (FLUX.1 [dev]'s and SANA-Sprint's ``guidance_embeds``, an LCM
UNet's ``time_cond_proj_dim``). :func:`guidance_record` says, before any image, which of these applies
(``settings["guidance"]``): it asks the pipeline class's own ``do_classifier_free_guidance``
property where it has one, and mirrors diffusers' ``true_cfg_scale > 1 and negative prompt given``
line where the pipeline decides in its call. :class:`GuidanceCheck` then counts the rows the
denoiser saw in the first call (two per image and step with guidance, one without) and stops the
run when they disagree with the record: a run recorded as guided that ran unguided cannot happen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ModelSpecError

__all__ = ["guidance_record", "GuidanceCheck", "GuidanceMismatchError"]


class GuidanceMismatchError(ModelSpecError):
    """The recorded guidance and the guidance the pipeline ran disagree: the run stops before any
    image is kept, with one line (a ValueError, as every refusal of a model)."""


class _Probe:
    """The pipeline as its ``do_classifier_free_guidance`` property sees it during a call: the
    scale the call would set (diffusers keeps it in ``_guidance_scale``), everything else the
    pipeline's own."""

    def __init__(self, pipe, scale):
        self._pipe = pipe
        self._guidance_scale = scale

    def __getattr__(self, name):
        return getattr(self._pipe, name)


def _denoiser(pipe):
    for name in ("transformer", "unet"):
        module = getattr(pipe, name, None)
        if module is not None and hasattr(module, "register_forward_pre_hook"):
            return module
    return None


def _default(params: Mapping, key: str) -> Any:
    parameter = params.get(key)
    return None if parameter is None or parameter.default is parameter.empty else parameter.default


def guidance_record(pipe, call: Mapping[str, Any], params: Mapping) -> dict:
    """``{"classifier_free": bool, "rule": str, ...}`` for ``pipe`` called with ``call``
    (``params``: its call's named parameters); {} for a pipeline of several denoisers (a prior and
    a decoder), whose guidance the settings give per stage."""
    config = getattr(_denoiser(pipe), "config", None)
    if config is None:
        return {}
    out: dict[str, Any] = {}
    scale = call.get("guidance_scale", _default(params, "guidance_scale"))
    if "true_cfg_scale" in params:
        true_scale = call.get("true_cfg_scale", _default(params, "true_cfg_scale")) or 0
        negative = call.get("negative_prompt") is not None
        out["classifier_free"] = bool(true_scale > 1 and negative)
        out["rule"] = "true_cfg_scale > 1 and a negative_prompt (diffusers' own condition)"
        if true_scale > 1 and not negative:
            out["off_because"] = f"true_cfg_scale={true_scale} without a negative_prompt: diffusers runs unguided"
    elif scale is not None:
        prop = getattr(type(pipe), "do_classifier_free_guidance", None)
        try:
            on = bool(prop.fget(_Probe(pipe, scale))) if isinstance(prop, property) else None
            out["rule"] = f"{type(pipe).__name__}.do_classifier_free_guidance"
        except (AttributeError, TypeError):  # the property reads state only a call sets
            on = None
        if on is None and config.get("time_cond_proj_dim") is not None:
            on, out["rule"] = False, "the denoiser embeds the scale (time_cond_proj_dim): no CFG"
        elif on is None and config.get("guidance_embeds"):  # SANA-Sprint: no property, no CFG in its call
            on, out["rule"] = False, "the denoiser embeds the scale (guidance_embeds): no CFG"
        elif on is None:
            on, out["rule"] = scale > 1, "guidance_scale > 1"
        out["classifier_free"] = on
        _truncation(out, call, params)
    else:
        return {}
    if config.get("guidance_embeds") or config.get("time_cond_proj_dim") is not None:
        out["embedded_guidance"] = scale  # the denoiser takes the scale as an input, distilled
    elif "guidance_embeds" in config and "true_cfg_scale" in params and scale:
        out["guidance_scale_ignored"] = True  # no embedding and not CFG: diffusers drops it
    return out


def _truncation(out: dict, call: Mapping[str, Any], params: Mapping) -> None:
    """Lumina-Image 2.0 guides only the steps ``i`` with ``(i + 1) / steps <= cfg_trunc_ratio``
    (pipeline_lumina2.py): at few steps that can be none, and then guidance is off."""
    ratio = call.get("cfg_trunc_ratio", _default(params, "cfg_trunc_ratio"))
    steps = call.get("num_inference_steps", _default(params, "num_inference_steps"))
    if not out.get("classifier_free") or ratio is None or not isinstance(steps, int) or steps <= 0:
        return
    out["guided_steps"] = sum(1 for i in range(steps) if (i + 1) / steps <= ratio)
    if out["guided_steps"] == 0:
        out["classifier_free"] = False
        out["off_because"] = (f"cfg_trunc_ratio={ratio} of {steps} steps leaves no guided step "
                              f"(guidance runs while (step + 1) / steps <= {ratio})")


class GuidanceCheck:
    """Counts the rows the denoiser sees during one call and compares them with the record
    (module docstring); ``done`` once a call was checked."""

    def __init__(self, pipe, record: Mapping):
        self.pipe, self.record = pipe, dict(record)
        self.rows = 0
        self.done = not record or _denoiser(pipe) is None

    def _count(self, module, args, kwargs):
        first = next((a for a in args if hasattr(a, "shape")), None)
        if first is None:
            first = next((kwargs[k] for k in ("hidden_states", "sample", "x") if hasattr(kwargs.get(k), "shape")), None)
        if first is not None and len(first.shape):
            self.rows += int(first.shape[0])

    def run(self, call, n_images: int):
        """``call()`` (the pipeline call of ``n_images`` images) with the rows counted, then
        checked; raises :class:`GuidanceMismatchError` (one line) when they disagree."""
        if self.done:
            return call()
        handle = _denoiser(self.pipe).register_forward_pre_hook(self._count, with_kwargs=True)
        try:
            out = call()
        finally:
            handle.remove()
        steps = getattr(self.pipe, "num_timesteps", None)
        if isinstance(steps, int) and steps > 0 and n_images > 0:
            per_step = self.rows / (n_images * steps)
            ran = per_step > 1.0
            self.record_ran = {"rows_per_image_and_step": round(per_step, 3), "classifier_free": ran}
            if ran != self.record["classifier_free"]:
                said = "on" if self.record["classifier_free"] else "off"
                raise GuidanceMismatchError(
                    f"the settings record classifier-free guidance {said} ({self.record.get('rule')}), but "
                    f"{type(self.pipe).__name__} ran it {'on' if ran else 'off'} ({per_step:.2f} denoiser rows per "
                    "image and step): no image is kept from a run whose record is wrong")
        self.done = True
        return out
