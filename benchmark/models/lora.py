"""LoRA adapters on a diffusers pipeline: checked against the base before any weights load,
loaded with diffusers' ``load_lora_weights`` (peft), fused, and recorded as part of the model.

* :func:`parse_lora_specs`: ``--lora PATH_OR_HUB_ID[:SCALE]`` texts (weights_ref.py's syntax);
* :func:`check_loras`: each file found and hashed, and its layers matched against the base
  pipeline's components built on PyTorch's meta device from their configs (no weights): a LoRA
  made for another base model (SD 1.5's on SDXL, a FLUX LoRA on SD 3, a text-encoder LoRA on a
  pipeline without that encoder) is refused in one line, where diffusers would fail after
  loading the base, or warn and go on without the layers it could not place;
* :func:`load_loras`: ``load_lora_weights`` of each, ``set_adapters`` with their scales, then
  ``fuse_lora`` and ``unload_lora_weights``: the LoRA is merged into the base weights, so each
  step costs what the base's does (unfused, every adapted layer runs two more matmuls). The
  fused images equal the unfused ones up to float rounding (tests/test_lora.py measures both);
  scale 0 gives the base's images exactly.

The identity record of each (:meth:`LoraAdapter.record`): Hub repo and file or local path,
revision (the Hub commit), sha256 of the weights file and scale; a model with a LoRA is
another model than its base (``DiffusersTextToImage.adapters``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from benchmark.cli_types import MAX_LORAS, lora_reference

from .errors import MalformedSpecError
from .lora_unet_only import load_denoiser_layers, skipped_layers
from .weights_ref import ResolvedWeights, parse_weights_ref, resolve_weights

__all__ = ["LoraAdapter", "parse_lora_specs", "check_loras", "load_loras", "meta_component", "adapter_names"]

#: the down / up projections of a LoRA layer in the key formats diffusers converts to
_LAYER = re.compile(r"^(?P<module>.+?)\.(?P<part>lora_A|lora_B|lora\.down|lora\.up|lora_down|lora_up|"
                    r"lora_linear_layer\.down|lora_linear_layer\.up)(?:\.[^.]+)?\.weight$")


@dataclass(frozen=True)
class LoraAdapter:
    """A LoRA found and checked: its weights file and the scale it is applied at; ``card``: what its
    own README says (lora_card.py: name, base_model, trigger, recommended scale), once read."""

    weights: ResolvedWeights
    scale: float
    #: ``--lora-unet-only``: (component, LoRA layers) of each text encoder whose layers are not applied
    skipped: tuple = ()
    card: Any = None

    @property
    def card_id(self) -> str:
        return self.weights.card_id

    def record(self) -> dict:
        """The identity record (JSON-ready): kind, id, repo / file or path, revision, sha256, scale,
        what its card says (lora_card.LoraCardUse.record) and, when its text-encoder layers were
        skipped, how many of each (``skipped``)."""
        out = {"kind": "lora", **self.weights.record(), "scale": self.scale, "fused": True}
        if self.card is not None:
            out.update(self.card.record())
        if self.skipped:
            out["skipped"] = {component: n for component, n in self.skipped}
        return out


def parse_lora_specs(specs: Sequence[str] | str | None) -> list:
    """The parsed ``--lora`` texts (:class:`benchmark.models.weights_ref.WeightsRef`), checking only
    their syntax and which reading of a path exists."""
    if specs is None:
        return []
    if isinstance(specs, str):
        specs = [specs]
    if len(specs) > MAX_LORAS:
        raise MalformedSpecError(f"at most {MAX_LORAS} LoRAs per audit (as queue requests), got {len(specs)}")
    for text in specs:  # a scale written and not a finite number in range: refused naming it
        try:
            lora_reference(text)
        except ValueError as err:
            raise MalformedSpecError(str(err)) from None
    return [parse_weights_ref(s, what="LoRA") for s in specs]


def adapter_names(adapters: Sequence[LoraAdapter]) -> list[str]:
    """The adapter names the loader gives them (``lora0``, ``lora1``, ...)."""
    return [f"lora{i}" for i in range(len(adapters))]


def meta_component(entry: Sequence[str], config: Mapping):
    """The model of a ``model_index.json`` entry (``[library, class]``) built from its config on
    PyTorch's meta device: its modules and shapes, no memory, no weights."""
    import importlib

    import torch

    library, name = entry[0], entry[1]
    module = importlib.import_module("transformers" if library == "transformers" else "diffusers")
    cls = getattr(module, name, None)
    if cls is None:
        return None
    with torch.device("meta"):
        if library == "transformers":
            config = {k: v for k, v in config.items() if not k.startswith("_")}
            return cls(cls.config_class(**config))
        return cls.from_config(dict(config))


def _lora_state(pipeline_cls: type, adapter: LoraAdapter, unet_config) -> dict:
    """The LoRA's state dict as diffusers reads it (non-diffusers formats converted)."""
    from safetensors.torch import load_file

    state = load_file(str(adapter.weights.file))
    try:
        out = pipeline_cls.lora_state_dict(state, unet_config=unet_config) if unet_config is not None \
            else pipeline_cls.lora_state_dict(state)
    except Exception as err:  # noqa: BLE001 - diffusers' converters raise many kinds on a foreign layout
        raise MalformedSpecError(f"LoRA {adapter.card_id} is not a LoRA {pipeline_cls.__name__} reads "
                                 f"({type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''})") from None
    return dict(out[0] if isinstance(out, tuple) else out)


def _fits(module, part: str, shape: tuple) -> str | None:
    """Why a LoRA layer of ``shape`` does not fit ``module`` (a Linear or a Conv), or None."""
    down = part in ("lora_A", "lora.down", "lora_down", "lora_linear_layer.down")
    size_in = getattr(module, "in_features", getattr(module, "in_channels", None))
    size_out = getattr(module, "out_features", getattr(module, "out_channels", None))
    if size_in is None:
        return f"is a {type(module).__name__}, not a layer a LoRA adapts"
    if down and len(shape) > 1 and shape[1] != size_in:
        return f"takes {size_in} inputs, the LoRA's layer {shape[1]}"
    if not down and shape[0] != size_out:
        return f"gives {size_out} outputs, the LoRA's layer {shape[0]}"
    return None


def _check_peft_for_transformers(adapter: LoraAdapter, component: str) -> None:
    """diffusers loads a text encoder's LoRA layers through transformers' PEFT integration, which
    asks for a newer peft than diffusers does: one line before loading, not a traceback after."""
    import importlib.metadata

    from packaging.version import Version

    try:
        from transformers.integrations.peft import MIN_PEFT_VERSION
    except ImportError:  # a transformers without the constant: it checks when loading
        return
    installed = importlib.metadata.version("peft")
    if Version(installed) < Version(MIN_PEFT_VERSION):
        raise MalformedSpecError(f"LoRA {adapter.card_id} adapts {component}, a transformers model, and transformers "
                                 f"loads such layers only with peft >= {MIN_PEFT_VERSION} (installed: {installed}): "
                                 "pip install -U peft, or pass --lora-unet-only to apply its UNet / transformer "
                                 "layers alone (the skipped layers are recorded)")


def _check_fit(adapter: LoraAdapter, state: dict, pipeline: str, components: Mapping,
               build: Callable[[str], object], unet_only: bool = False) -> tuple:
    """One line for the first LoRA layer the base has no place for (``components``: the
    pipeline's components; ``build(name)``: one on the meta device, or None): a component it does
    not have, then a module or a shape; and the peft a text encoder's layers need. With
    ``unet_only`` the text encoders' layers are not checked but counted: returns (component,
    layers) of each skipped."""
    layers = [(m["module"].partition("."), m["part"], tuple(t.shape))
              for m, t in ((_LAYER.match(k), t) for k, t in state.items()) if m]
    if not layers:
        raise MalformedSpecError(f"LoRA {adapter.card_id} has no LoRA layer {pipeline} reads: it is not a LoRA "
                                 "for this pipeline")
    targets = list(dict.fromkeys(component for (component, _, _), _, _ in layers))
    for component in targets:
        if component not in components:
            raise MalformedSpecError(f"LoRA {adapter.card_id} adapts a {component!r}, which {pipeline} does not have: "
                                     "it was made for another base model")
    skipped = skipped_layers(adapter.card_id, layers, components, unet_only)
    for (component, _, path), part, shape in layers:
        if any(component == c for c, _ in skipped):
            continue
        model = build(component)
        if model is None:  # a component this check cannot build: diffusers checks it when loading
            continue
        try:
            module = model.get_submodule(path)
        except AttributeError:
            raise MalformedSpecError(f"LoRA {adapter.card_id} adapts {component}.{path}, which {pipeline}'s "
                                     f"{component} does not have: it was made for another base model") from None
        why = _fits(module, part, shape)
        if why:
            raise MalformedSpecError(f"LoRA {adapter.card_id} does not fit {pipeline}: its {component}.{path} {why} "
                                     "(a LoRA made for another base model)")
    for component in targets:
        if components[component][0] == "transformers" and not skipped:
            _check_peft_for_transformers(adapter, component)
    return skipped


def check_loras(specs: Sequence, *, pipeline_cls: type, index: Mapping,
                read_config: Callable[[str], Mapping | None], token: str | bool | None = None,
                unet_only: bool = False) -> list[LoraAdapter]:
    """Each parsed ``--lora`` found, hashed and checked against the base pipeline (``pipeline_cls``,
    its ``model_index.json`` ``index`` and ``read_config(component)``), before the base's weights
    load; returns the adapters to hand to :func:`load_loras`. ``unet_only`` (``--lora-unet-only``):
    their text-encoder layers are skipped, and each adapter says how many (never a silent partial
    load: without the flag such a LoRA loads whole or is refused)."""
    if not specs:
        return []
    name = pipeline_cls.__name__
    if not hasattr(pipeline_cls, "load_lora_weights"):
        raise MalformedSpecError(f"{name} does not load LoRAs (diffusers has no LoRA loader for it)")
    from benchmark.extras import require

    require("peft", extra="audit", purpose="load LoRA adapters")
    adapters = [LoraAdapter(resolve_weights(s, what="LoRA", token=token), s.scale) for s in specs]
    components = {k: v for k, v in index.items()
                  if not k.startswith("_") and isinstance(v, (list, tuple)) and v[0] is not None}
    built: dict = {}

    def build(component: str):
        if component not in built:
            config = read_config(component)
            built[component] = meta_component(components[component], config) if config is not None else None
        return built[component]

    unet = build("unet") if "unet" in components else None
    out = []
    for adapter in adapters:
        state = _lora_state(pipeline_cls, adapter, getattr(unet, "config", None))
        out.append(replace(adapter, skipped=_check_fit(adapter, state, name, components, build, unet_only)))
    return out


def load_loras(pipe, adapters: Sequence[LoraAdapter]) -> None:
    """Load each adapter into ``pipe`` at its scale and fuse them into the base weights
    (module docstring)."""
    if not adapters:
        return
    names = adapter_names(adapters)
    for adapter, name in zip(adapters, names):
        if adapter.skipped:
            load_denoiser_layers(pipe, adapter.weights.file, name)
        else:
            pipe.load_lora_weights(str(adapter.weights.file), adapter_name=name)
    pipe.set_adapters(names, adapter_weights=[a.scale for a in adapters])
    pipe.fuse_lora(adapter_names=names, lora_scale=1.0)
    pipe.unload_lora_weights()

