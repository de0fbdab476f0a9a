"""What a LoRA's own model card says, and what an audit makes of it: the README.md beside the
weights file (a local file or folder) or in its Hub repo (the cache, or the Hub unless offline),
its front matter read safely (card_front_matter.py).

* **name**: the Hub repo (``ORG/NAME``, with ``/FILE`` when the file is not diffusers' default
  name), else the card's title, else the folder's name: never ``pytorch_lora_weights.safetensors``,
  the name every diffusers LoRA file has;
* **trigger**: ``instance_prompt`` (what diffusers' DreamBooth LoRA scripts and the Hub's LoRA
  upload form write: "You should use `TOK` to trigger the image generation") and the widget
  prompts, offered in the plan; ``--lora-trigger`` prepends it to every probe (``TRIGGER, PROMPT``),
  ``--lora-trigger TEXT`` prepends the text given, recorded with its source;
* **recommended scale and settings**: from the card's example code (fenced Python blocks, read
  with :mod:`ast`, never run): the scale of ``fuse_lora(lora_scale=X)``, ``set_adapters(...,
  adapter_weights=X)`` or ``cross_attention_kwargs={"scale": X}``, used when ``--lora`` gives
  none; the call settings of the example's pipeline call (steps, guidance, size, negative prompt),
  used after the card table's rows, each with its source;
* **base_model**: compared with the model audited. Another architecture (a FLUX LoRA's card on
  SDXL) is refused in one line; another model of the same architecture (an SDXL-base LoRA on an
  SDXL fine-tune: how LoRAs are used) or a base the table does not know is audited as asked, with
  one warning line and the verdict recorded in the adapter's record (``base_model_match``).

The adapter's identity record (lora.py ``LoraAdapter.record``) gets ``name``, ``scale_source``,
``card``, ``base_model``, ``base_model_match``, ``trigger_offered`` and, for a DoRA (whose fused
weights depend on the order adapters are fused in), ``dora: true``.
"""

from __future__ import annotations

import ast
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchmark.cli_types import LORA_SCALE_RANGE

from .base_model import base_model_of, hub_readme
from .card_front_matter import card_body, read_front_matter
from .errors import MalformedSpecError
from .model_cards import CardSource, card_row, current_hub_id, pipeline_family
from .weights_ref import DIFFUSERS_LORA_FILE

__all__ = ["LoraCard", "LoraCardUse", "TRIGGER_SEPARATOR", "MAX_TRIGGER_CHARS", "EXAMPLE_SETTINGS", "read_lora_card",
           "card_of_example", "judge_base", "attach_cards", "choose_trigger", "card_setting_sources", "lora_label",
           "with_trigger"]

#: how a trigger joins the probe's prompt: ``TRIGGER, PROMPT`` (trigger words lead, comma-separated,
#: in the widget prompts of the Hub's LoRA cards)
TRIGGER_SEPARATOR = ", "
MAX_TRIGGER_CHARS = 200
#: the call settings an example's pipeline call may give (the rest of a call is the card's business)
EXAMPLE_SETTINGS = ("num_inference_steps", "guidance_scale", "true_cfg_scale", "height", "width", "negative_prompt",
                    "max_sequence_length", "guidance_rescale", "eta")
_README_SCAN_BYTES = 1024 * 1024
_MAX_BLOCK_CHARS = 64 * 1024
_CODE = re.compile(r"```[ \t]*(?:py|python|python3)?[ \t]*\r?\n(.*?)```", re.S)
_HEADING = re.compile(r"^#{1,3}[ \t]+(.+?)[ \t#]*$", re.M)
_NOT_PIPELINE_CALLS = ("from_pretrained", "load_lora_weights", "fuse_lora", "set_adapters", "to", "save", "manual_seed",
                       "enable_model_cpu_offload", "Generator")


@dataclass(frozen=True)
class LoraCard:
    """A LoRA's card as read: ``readme`` (where), ``title``, ``base_model`` (or why its value is not
    followed, ``base_why``), ``trigger`` (``instance_prompt``), ``widget_prompts``, the scale its
    example applies (``scale``, in the call ``scale_where``) and its example's call ``settings``."""

    readme: str
    title: str | None = None
    base_model: str | None = None
    base_why: str | None = None
    trigger: str | None = None
    widget_prompts: tuple[str, ...] = ()
    scale: float | None = None
    scale_where: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> str:
        return f"LoRA card example ({self.readme})"


@dataclass(frozen=True)
class LoraCardUse:
    """What one audit made of a LoRA's card (None when it has none): its ``name``, where its scale
    came from, the verdict on its ``base_model`` and the warning line that goes with it, and
    whether it is a DoRA."""

    card: LoraCard | None
    name: str
    scale_source: str
    base_match: str | None = None
    warning: str | None = None
    dora: bool = False

    def record(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "scale_source": self.scale_source}
        if self.card is not None:
            out.update(card=self.card.readme, base_model=self.card.base_model, base_model_match=self.base_match,
                       trigger_offered=self.card.trigger)
        if self.dora:
            out["dora"] = True
        return out


# --------------------------------------------------------------------------- reading


def _readme_of(ref, file: Path | None, *, token, local_only: bool) -> tuple[Path | None, str]:
    """The README.md of a LoRA reference (weights_ref.WeightsRef) and how to name where it is."""
    if ref.repo:
        return hub_readme(ref.repo, revision=ref.revision, token=token, local_only=local_only), f"{ref.repo} README.md"
    path = Path(ref.path)
    folder = path if path.is_dir() else (file or path).parent
    readme = folder / "README.md"
    return (readme if readme.is_file() else None), str(readme)


def _body(readme: Path) -> str:
    """The first MiB of the README (its example code and title are near the top)."""
    with open(readme, "rb") as fh:
        return fh.read(_README_SCAN_BYTES).decode("utf-8", errors="replace")


def _plain_text(text: str, limit: int) -> str | None:
    """``text`` without Markdown emphasis, links' targets and control characters, one line, cut."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = "".join(ch for ch in text if not unicodedata.category(ch).startswith("C"))
    text = " ".join(text.replace("*", "").replace("`", "").replace("_", " ").split())
    return text[:limit] or None


def _trigger(data: Mapping) -> str | None:
    value = data.get("instance_prompt")
    if not isinstance(value, str):
        return None
    return _plain_text(value, MAX_TRIGGER_CHARS)


def _widget_prompts(data: Mapping) -> tuple[str, ...]:
    widgets = data.get("widget")
    found = [w.get("text") for w in widgets if isinstance(w, Mapping)] if isinstance(widgets, list) else []
    return tuple(t for t in (_plain_text(str(x), 160) for x in found[:8] if isinstance(x, str)) if t)


def read_lora_card(ref, file: Path | None = None, *, token=None, local_only: bool = False) -> LoraCard | None:
    """The card of the LoRA ``ref`` (a parsed ``--lora``; ``file``: its weights file once found),
    None when it has none; one line (card_front_matter.BadCardError) for a card that cannot be read."""
    readme, where = _readme_of(ref, file, token=token, local_only=local_only)
    if readme is None:
        return None
    data = read_front_matter(readme)
    body = card_body(_body(readme))
    base, why = base_model_of(data)
    scale, scale_where, settings = card_of_example(body)
    heading = _HEADING.search(body)
    return LoraCard(readme=where, title=_plain_text(heading.group(1), 80) if heading else None, base_model=base,
                    base_why=why, trigger=_trigger(data), widget_prompts=_widget_prompts(data), scale=scale,
                    scale_where=scale_where, settings=settings)


# --------------------------------------------------------------------------- the example code


def _literal(node: ast.AST, names: Mapping[str, Any]) -> Any:
    """A literal value, or a name the block assigned a literal to; raises ValueError otherwise."""
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    return ast.literal_eval(node)


def _number(value: Any) -> float | None:
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    low, high = LORA_SCALE_RANGE
    return float(value) if math.isfinite(value) and low <= value <= high else None


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _scale_of(call: ast.Call, names: Mapping[str, Any]) -> float | None:
    """The LoRA scale a call of the example applies, or None."""
    wanted = {"fuse_lora": ("lora_scale",), "set_adapters": ("adapter_weights", "weights")}.get(_call_name(call), ())
    for kw in call.keywords:
        try:
            if kw.arg in wanted:
                return _number(_literal(kw.value, names))
            if kw.arg in ("cross_attention_kwargs", "joint_attention_kwargs", "attention_kwargs"):
                value = _literal(kw.value, names)
                if isinstance(value, dict) and "scale" in value:
                    return _number(value["scale"])
        except (ValueError, TypeError, SyntaxError, RecursionError):
            continue
    return None


def _settings_of(call: ast.Call, names: Mapping[str, Any]) -> dict[str, Any]:
    """The call settings of a pipeline call of the example (its literal keywords among EXAMPLE_SETTINGS)."""
    keywords = {kw.arg for kw in call.keywords}
    if _call_name(call) in _NOT_PIPELINE_CALLS or not ("prompt" in keywords or call.args):
        return {}
    out = {}
    for kw in call.keywords:
        if kw.arg in EXAMPLE_SETTINGS:
            try:
                value = _literal(kw.value, names)
            except (ValueError, TypeError, SyntaxError, RecursionError):
                continue
            if isinstance(value, (int, float, str)) and not isinstance(value, bool):
                out[kw.arg] = value
    return out


def _doctest_line(line: str) -> str:
    """A line of a docstring example (``>>> x = 1``, ``...     y``) as code; any other line unchanged."""
    stripped = line.strip()
    if stripped in (">>>", "..."):
        return ""
    return stripped[4:] if stripped.startswith((">>> ", "... ")) else line


def _blocks(text: str) -> list[ast.Module]:
    trees = []
    for block in _CODE.findall(text)[:20]:
        code = "\n".join(_doctest_line(line) for line in block.splitlines())
        if len(code) > _MAX_BLOCK_CHARS:
            continue
        try:
            trees.append(ast.parse(code))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return trees


def card_of_example(text: str) -> tuple[float | None, str | None, dict[str, Any]]:
    """``(scale, where, settings)`` of a card's example code (module docstring): the one LoRA scale
    its calls apply and the call that applies it (None when none, or several that disagree), and
    the call settings every pipeline call of it agrees on."""
    scales: dict[float, str] = {}
    agreed: dict[str, Any] | None = None
    for tree in _blocks(text):
        names = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                try:
                    names[node.targets[0].id] = ast.literal_eval(node.value)
                except (ValueError, TypeError, SyntaxError, RecursionError):
                    pass
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            scale = _scale_of(node, names)
            if scale is not None:
                scales.setdefault(scale, f"{_call_name(node)}(...) with scale {scale:g}")
            settings = _settings_of(node, names)
            if settings:
                agreed = settings if agreed is None else {k: v for k, v in agreed.items() if settings.get(k) == v}
    scale = next(iter(scales)) if len(scales) == 1 else None
    return scale, scales.get(scale) if scale is not None else None, dict(agreed or {})


# --------------------------------------------------------------------------- an audit's use of the cards


def lora_label(ref, card: LoraCard | None, file: Path | None = None, weight_name: str | None = None) -> str:
    """What to call the LoRA ``ref`` (module docstring): its Hub repo (and file, ``weight_name``, when
    not diffusers' default name), its card's title, or the name of the folder holding its ``file``."""
    if ref.repo:
        name = weight_name or ref.weight_name or ""
        return ref.repo if not name or Path(name).name == DIFFUSERS_LORA_FILE else f"{ref.repo}/{name}"
    if card is not None and card.title:
        return card.title
    path = Path(file or ref.path)
    if path.is_dir():
        return path.name
    return path.parent.name if path.name == DIFFUSERS_LORA_FILE else path.stem


def _is_dora(file: Path) -> bool:
    """A DoRA's file holds magnitude vectors (peft ``lora_magnitude_vector``, kohya ``dora_scale``)."""
    try:
        from safetensors import safe_open

        with safe_open(str(file), framework="numpy") as fh:
            return any("lora_magnitude_vector" in k or "dora_scale" in k for k in fh.keys())
    except Exception:  # noqa: BLE001 - the file was read by the checks already; a failure here says nothing
        return False


def judge_base(card: LoraCard, label: str, audited: Sequence[str], pipeline_class: str,
                  model: str) -> tuple[str | None, str | None]:
    """``(base_model_match, warning)`` of a LoRA's card against the model audited (module
    docstring); raises one line for a base of another architecture."""
    if card.base_model is None:
        why = f": {card.base_why}" if card.base_why else ""
        return ("not named" if not why else "not read"), (f"LoRA {label}{why}" if why else None)
    base = current_hub_id(card.base_model).lower()
    if base in {current_hub_id(m).lower() for m in audited if m}:
        return "the model audited", None
    row = card_row(card.base_model)
    have = pipeline_family(pipeline_class)
    if row is not None and pipeline_family(row.pipeline) != have:
        raise MalformedSpecError(f"LoRA {label} was made for {card.base_model} (its card's base_model), a "
                                 f"{row.pipeline} ({pipeline_family(row.pipeline)}); {model} runs {pipeline_class} "
                                 f"({have}): a LoRA of another architecture")
    if row is not None:
        return "another model of its architecture", (
            f"LoRA {label} was made for {card.base_model} (its card's base_model) and is audited on {model}, another "
            f"{have} model: the results are of this combination")
    return "unknown", (f"LoRA {label}'s card names base_model {card.base_model}, which is not {model} and has no card "
                       "row to compare architectures with: audited on it as asked")


def attach_cards(adapters: Sequence, *, pipeline_class: str, audited: Sequence[str], model: str, token=None,
                 local_only: bool = False) -> list:
    """Each checked LoRA (lora.py ``LoraAdapter``) with its card read and judged: its scale the
    card's when ``--lora`` gave none, its name, its base verdict (one line for another
    architecture), whether it is a DoRA. ``audited``: the Hub IDs the model audited answers to
    (its own, its base_model chain)."""
    out = []
    for adapter in adapters:
        weights = adapter.weights
        card = read_lora_card(weights.ref, Path(weights.file), token=token, local_only=local_only)
        label = lora_label(weights.ref, card, Path(weights.file), weights.weight_name)
        scale, source = adapter.scale, "--lora" if weights.ref.scale_given else "default (1)"
        if not weights.ref.scale_given and card is not None and card.scale is not None:
            scale, source = card.scale, f"LoRA card example ({card.readme}: {card.scale_where})"
        match, warning = judge_base(card, label, audited, pipeline_class, model) if card else (None, None)
        use = LoraCardUse(card, label, source, match, warning, dora=_is_dora(Path(weights.file)))
        out.append(replace(adapter, scale=scale, card=use))
    return out


def _checked_trigger(text: str) -> str:
    text = " ".join(str(text).split())
    if not text:
        raise MalformedSpecError("--lora-trigger TEXT: the text is empty")
    if len(text) > MAX_TRIGGER_CHARS:
        raise MalformedSpecError(f"--lora-trigger: at most {MAX_TRIGGER_CHARS} characters, got {len(text)}")
    if any(unicodedata.category(ch).startswith("C") for ch in text):
        raise MalformedSpecError("--lora-trigger: the text holds a control or invisible character")
    return text


def choose_trigger(adapters: Sequence, asked: bool | str | None) -> tuple[str, str] | None:
    """``(trigger, source)`` prepended to every probe, or None: ``asked`` None (not asked), True
    (the cards' ``instance_prompt``, joined in the LoRAs' order; one line when none has one) or a
    text (``--lora-trigger TEXT``)."""
    if asked is None or asked is False:
        return None
    if not adapters:
        raise MalformedSpecError("--lora-trigger goes with --lora (a trigger word activates a LoRA)")
    if isinstance(asked, str):
        return _checked_trigger(asked), "--lora-trigger"
    uses = [a.card for a in adapters if a.card is not None and a.card.card is not None and a.card.card.trigger]
    if not uses:
        names = ", ".join(a.card.name if a.card else a.card_id for a in adapters)
        raise MalformedSpecError(f"--lora-trigger: the card of {names} names no trigger (no instance_prompt in its "
                                 "README's front matter): give one, --lora-trigger TEXT")
    text = TRIGGER_SEPARATOR.join(dict.fromkeys(u.card.trigger for u in uses))
    where = "; ".join(u.card.readme for u in uses)
    return _checked_trigger(text), f"LoRA card instance_prompt ({where})"


def card_setting_sources(adapters: Sequence) -> list[CardSource]:
    """The call settings of the LoRAs' card examples, in the LoRAs' order (model_cards.card_sources
    puts them after the card table's adapter rows and before the model's own row)."""
    return [CardSource(dict(a.card.card.settings), a.card.card.source) for a in adapters
            if a.card is not None and a.card.card is not None and a.card.card.settings]


def with_trigger(model, trigger: tuple[str, str] | None):
    """``model`` (a loaded text-to-image model) putting ``trigger`` (text, source: :func:`choose_trigger`)
    before every prompt as ``TRIGGER, PROMPT``, recorded in its settings and their sources."""
    if trigger is not None:
        text, source = trigger
        model.prompt_prefix = text + TRIGGER_SEPARATOR
        model.settings["lora_trigger"] = text
        model.settings["prompt_template"] = "{lora_trigger}" + TRIGGER_SEPARATOR + "{prompt}"
        model.setting_sources["lora_trigger"] = source
    return model
