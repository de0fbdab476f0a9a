"""A component of a pipeline replaced by a checkpoint of its own: SDXL-Lightning publishes its
distilled UNets as ``sdxl_lightning_4step_unet.safetensors`` (no ``model_index.json``: a UNet for
SDXL base 1.0's pipeline), and its card loads them as
``UNet2DConditionModel.from_config(base, subfolder="unet")`` + ``load_state_dict(load_file(...))``
+ ``StableDiffusionXLPipeline.from_pretrained(base, unet=unet)``
(https://huggingface.co/ByteDance/SDXL-Lightning). This module does the same, checked first:

* :func:`parse_component_spec`: ``unet=ORG/NAME/FILE`` or ``unet=PATH`` (weights_ref.py's syntax);
* :func:`check_components`: the file found, checked (weight_files.py: a regular file, a header
  within limits, finite tensors) and hashed, and its tensors' names and shapes (read from the
  safetensors header, no weights) equal to those of the base's component built from its config
  on the meta device: a UNet of another architecture is refused in one line;
* :func:`load_components`: each component built from the base's config, its weights loaded
  strictly, handed to ``from_pretrained`` in place of the base's.

The checkpoint is part of the model's identity (:meth:`ComponentWeights.record`), and its card
table row (keyed ``ORG/NAME/FILE``) gives its steps, guidance and scheduler.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .errors import MalformedSpecError
from .lora import meta_component
from .weight_files import read_header
from .weights_ref import ResolvedWeights, parse_weights_ref, resolve_weights

__all__ = ["ComponentWeights", "parse_component_spec", "check_components", "load_components", "shape_problem"]


@dataclass(frozen=True)
class ComponentWeights:
    """A checkpoint for the pipeline component ``name``, found and checked; ``entry``: the
    component's ``[library, class]`` in the base's model_index.json; ``config``: its config."""

    name: str
    weights: ResolvedWeights
    entry: tuple
    config: Mapping

    @property
    def card_id(self) -> str:
        return self.weights.card_id

    def record(self) -> dict:
        """The identity record (JSON-ready): kind, component, id, repo / file or path, revision, sha256."""
        return {"kind": "component", "component": self.name, **self.weights.record()}


def parse_component_spec(text: str) -> tuple[str, object]:
    """``(component, WeightsRef)`` from ``NAME=REF`` (``unet=ByteDance/SDXL-Lightning/FILE``)."""
    name, sep, ref = str(text).partition("=")
    if not sep or not name.strip().isidentifier():
        raise MalformedSpecError(f"component checkpoint {text!r} is not NAME=FILE_OR_HUB_REF (e.g. unet=ORG/NAME/FILE)")
    return name.strip(), parse_weights_ref(ref, what=f"{name.strip()} checkpoint", takes_scale=False)


def shape_problem(expected: Mapping[str, tuple], found: Mapping[str, tuple], *, pipeline: str, name: str) -> str | None:
    """How the tensors ``found`` (name -> shape) differ from those a component ``expected``, in a
    few words (counts and the first difference), or None when they match."""
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    wrong = sorted(k for k in set(expected) & set(found) if tuple(expected[k]) != tuple(found[k]))
    if not (missing or extra or wrong):
        return None
    first = (f"it lacks {missing[0]}" if missing else f"it has {extra[0]}, which {pipeline}'s {name} does not"
             if extra else f"its {wrong[0]} is {found[wrong[0]]}, {pipeline}'s is {expected[wrong[0]]}")
    return f"{len(missing)} tensors missing, {len(extra)} unknown, {len(wrong)} of another shape: {first}"


def _check_one(name: str, weights: ResolvedWeights, model, pipeline: str) -> None:
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    found = read_header(weights.file, what=f"{name} checkpoint").shapes()  # checked by resolve_weights
    why = shape_problem(expected, found, pipeline=pipeline, name=name)
    if why:
        raise MalformedSpecError(f"{name} checkpoint {weights.card_id} does not fit {pipeline}'s {name} "
                                 f"({why}): it is not a {name} of this base model in diffusers' layout")


def check_components(specs: Mapping[str, object], *, pipeline: str, index: Mapping,
                     read_config: Callable[[str], Mapping | None],
                     token: str | bool | None = None) -> list[ComponentWeights]:
    """Each ``{component: WeightsRef}`` found, hashed and checked against the base's component
    (module docstring), before any weights load."""
    checked = []
    for name, ref in (specs or {}).items():
        entry = index.get(name)
        if not isinstance(entry, (list, tuple)) or entry[0] is None:
            raise MalformedSpecError(f"{pipeline} has no component {name!r} to replace (it has: "
                                     + ", ".join(k for k, v in index.items() if isinstance(v, (list, tuple))) + ")")
        if entry[0] == "transformers":
            raise MalformedSpecError(f"{name} is a transformers model; only diffusers components (a unet, a "
                                     "transformer, a vae) can be replaced by a checkpoint")
        config = read_config(name)
        model = meta_component(entry, config) if config is not None else None
        if model is None:
            raise MalformedSpecError(f"{pipeline}'s {name} ({entry[1]}) cannot be rebuilt from its config here")
        weights = resolve_weights(ref, what=f"{name} checkpoint", token=token)
        _check_one(name, weights, model, pipeline)
        checked.append(ComponentWeights(name, weights, tuple(entry), dict(config)))
    return checked


def load_components(components: list[ComponentWeights], dtype) -> dict:
    """``{name: model}``: each component built from its config and its checkpoint, in ``dtype``,
    for ``from_pretrained(..., **these)``."""
    import importlib

    from safetensors.torch import load_file

    out = {}
    for component in components:
        library = "transformers" if component.entry[0] == "transformers" else "diffusers"
        cls = getattr(importlib.import_module(library), component.entry[1])
        model = cls.from_config(dict(component.config))
        model.load_state_dict(load_file(str(component.weights.file)), strict=True)
        out[component.name] = model.to(dtype).eval()
    return out
