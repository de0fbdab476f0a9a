"""Which model card table rows a model inherits: its own (by Hub ID, or the Hub ID a local
copy is a copy of) and those of the ``base_model`` its model card names, followed a few levels;
and the refusal of a model whose pipeline class contradicts the base its card names.

A fine-tune published with ``base_model: stabilityai/sdxl-turbo`` in its README's YAML front
matter (the Hub's standard field, read by card_front_matter.py: safe loader, size and depth
limits, one line for a card that cannot be read) runs at SDXL-Turbo's settings unless it has a
row of its own; a fine-tune of that fine-tune at the same, up to :data:`MAX_LEVELS` levels; a
chain that comes back to a model already on it is refused. A ``base_model`` that is no Hub model
ID, or a list of several (a merge), is not followed, and the warning of a model on its pipeline's
defaults says why (:attr:`CardIdentity.unfollowed`).

A local folder is matched to a Hub ID, in this order:

1. a folder inside a Hugging Face cache (``.../models--ORG--NAME/snapshots/COMMIT``): that ID;
2. a copy made with ``hf download ORG/NAME --local-dir DIR`` (huggingface_hub leaves
   ``DIR/.cache/huggingface/download/README.md.metadata`` beside the repo's own README): the one
   Hub ID with a card table row that the card's example code loads (``from_pretrained("ORG/NAME"``),
   as every card in the table does; none or several: not matched. ``model_index.json`` and the
   components' ``_name_or_path`` are no help: diffusers writes no repo name into them;
3. the folder's README.md front matter ``base_model`` (a fine-tune, or any folder whose README
   one writes ``base_model: ORG/NAME`` into).

A folder matched by none of these runs at the pipeline's defaults, and the plan, run_config.json
and results.json say so (:func:`benchmark.models.model_cards.settings_warning`, the source
``no card row: pipeline default``). A folder whose ``model_index.json`` class is of another
architecture than the row it inherits (an SDXL folder whose card says ``base_model:
black-forest-labs/FLUX.1-schnell``) is refused (:func:`check_declared_base`): its card's settings
are another model's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.contract.model_specs import hub_id_problem

from .card_front_matter import read_front_matter
from .errors import MalformedSpecError
from .hub_access import hub_offline
from .model_cards import card_row, current_hub_id, pipeline_family

__all__ = ["CardIdentity", "MAX_LEVELS", "card_identity", "read_card_data", "hub_readme", "base_model_of",
           "cache_path_id", "local_copy_id", "check_declared_base"]

#: how many base_model links are followed (a fine-tune of a fine-tune of a fine-tune)
MAX_LEVELS = 4
#: how much of a README the ``hf download`` check reads for its example code (a card's example is near the top)
_README_SCAN_BYTES = 1024 * 1024
_CACHE_PATH = re.compile(r"models--(?P<org>[^/\\]+?)--(?P<name>[^/\\]+)[/\\]snapshots[/\\](?P<commit>[0-9a-f]{40})$")
_LOADS = re.compile(r"""from_pretrained\(\s*["'](?P<id>[\w.-]+/[\w.-]+)["']""")


@dataclass(frozen=True)
class CardIdentity:
    """``own``: the Hub ID whose row is the model's own (None: none known); ``how``: how a local
    folder was matched to it; ``bases``: the ``base_model`` chain, nearest first; ``unfollowed``:
    why a card's ``base_model`` was not followed (not a Hub ID, several models), or None."""

    own: str | None = None
    how: str | None = None
    bases: tuple[str, ...] = field(default=())
    unfollowed: str | None = None


def cache_path_id(folder: str | Path) -> str | None:
    """The Hub ID of a folder inside a Hugging Face cache snapshot, or None."""
    match = _CACHE_PATH.search(str(Path(folder).resolve()))
    return f"{match['org']}/{match['name']}" if match else None


def local_copy_id(folder: str | Path) -> str | None:
    """The Hub ID a ``hf download --local-dir`` copy is a copy of (module docstring, 2.), or None."""
    folder = Path(folder)
    if not (folder / ".cache" / "huggingface" / "download" / "README.md.metadata").is_file():
        return None
    try:
        with open(folder / "README.md", "rb") as fh:
            text = fh.read(_README_SCAN_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    known = {card_row(m["id"]).ids[0] for m in _LOADS.finditer(text) if card_row(m["id"]) is not None}
    return known.pop() if len(known) == 1 else None


def hub_readme(repo: str, *, revision: str | None = None, token=None, local_only: bool = False) -> Path | None:
    """A Hub repo's README.md: the cached copy, else (unless offline or ``local_only``) downloaded;
    None when it has none or it cannot be had (gated, unreachable, a malformed ID)."""
    from huggingface_hub import hf_hub_download, try_to_load_from_cache

    try:
        hit = try_to_load_from_cache(repo, "README.md", revision=revision)
    except Exception:  # noqa: BLE001 - a malformed ID or a broken cache entry: a miss
        hit = None
    if isinstance(hit, str):
        return Path(hit)
    if local_only or hub_offline():
        return None
    try:
        return Path(hf_hub_download(repo, "README.md", revision=revision, token=token, etag_timeout=5))
    except Exception:  # noqa: BLE001 - unreachable, gated, no card: no card
        return None


def read_card_data(repo_or_folder: str, *, revision: str | None = None, token=None, local_only: bool = False) -> dict:
    """The YAML front matter of a local folder's README.md or a Hub repo's model card (from the
    cache, or the Hub unless offline or ``local_only``); {} when there is none; one line
    (card_front_matter.BadCardError) for a card that cannot be read."""
    folder = Path(repo_or_folder)
    if folder.is_dir():
        readme = folder / "README.md"
        return read_front_matter(readme) if readme.is_file() else {}
    readme = hub_readme(repo_or_folder, revision=revision, token=token, local_only=local_only)
    return read_front_matter(readme) if readme is not None else {}


def _shown(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 4] + "...'"


def base_model_of(data: Mapping) -> tuple[str | None, str | None]:
    """``(base, why)``: the card's ``base_model`` when it names one Hub model, else None and why
    not (None when the card names none): a list of several (a merge names no one base), a value
    that is no text, or text that is no Hub model ID."""
    base = data.get("base_model") if isinstance(data, Mapping) else None
    if base is None or base == [] or base == "":
        return None, None
    if isinstance(base, list):
        if len(base) > 1:
            return None, (f"its card's base_model lists {len(base)} models ({_shown(base)}): a merge names no one "
                          "base whose settings apply")
        base = base[0]
    if not isinstance(base, str):
        return None, f"its card's base_model is a {type(base).__name__} ({_shown(base)}), not a Hub model ID"
    base = base.strip()
    problem = hub_id_problem(base) if "/" in base else "names no organisation (ORG/NAME)"
    if problem:
        return None, f"its card's base_model {_shown(base)} {problem}"
    return base, None


def _chain(start: str, data: Mapping, read: Callable[[str], Mapping]) -> tuple[tuple[str, ...], str | None]:
    """The ``base_model`` links from ``data`` (the card of ``start``), followed while a base has no
    row of its own, up to MAX_LEVELS, and why the last card's base_model was not followed; a
    loop is refused in one line."""
    seen, bases = [start], []
    base, why = base_model_of(data)
    while base is not None:
        if current_hub_id(base).lower() in (current_hub_id(s).lower() for s in seen):
            raise MalformedSpecError("the model cards' base_model links loop: " + " -> ".join([*seen, base]))
        bases.append(base)
        seen.append(base)
        if card_row(base) is not None or len(bases) >= MAX_LEVELS:
            break
        base, why = base_model_of(read(base))
    return tuple(bases), why


def card_identity(kind: str, value: str, *, revision: str | None = None, token=None,
                  read: Callable[[str], Mapping] | None = None, local_only: bool = False) -> CardIdentity:
    """The rows a ``hub`` or ``local`` model inherits (module docstring). ``read(repo)``: a Hub
    repo's card data (default :func:`read_card_data`; tests pass their own); ``local_only``: read
    cards from the cache and the disk only (the checks made before the heavy libraries load)."""
    read = read or (lambda repo: read_card_data(repo, token=token, local_only=local_only))
    if kind == "hub":
        if card_row(value) is not None:
            return CardIdentity(own=value)
        bases, why = _chain(value, read_card_data(value, revision=revision, token=token, local_only=local_only),
                            read)
        return CardIdentity(bases=bases, unfollowed=why)
    if kind != "local":
        return CardIdentity()
    own, how = cache_path_id(value), "its Hugging Face cache path"
    if own is None:
        own, how = local_copy_id(value), "the example code of the model card `hf download --local-dir` copied"
    if own is not None and card_row(own) is not None:
        return CardIdentity(own=own, how=how)
    bases, why = _chain(value, read_card_data(value), read)
    return CardIdentity(own=own, how=how if own else None, bases=bases, unfollowed=why)


def check_declared_base(spec: str, declared: str, identity: CardIdentity) -> None:
    """Refuse, in one line, a model whose ``model_index.json`` class (``declared``) is of another
    architecture than the card row it would run at (its own, matched as ``identity`` says, or its
    nearest ``base_model``'s): an SDXL folder whose card says ``base_model:
    black-forest-labs/FLUX.1-schnell`` would otherwise run SDXL at FLUX.1-schnell's 4 steps and
    guidance 0."""
    named, row, how = identity.own, card_row(identity.own), identity.how or "its Hub ID"
    if row is None:
        named = next((b for b in identity.bases if card_row(b) is not None), None)
        row, how = card_row(named), "its model card's base_model"
    if row is None:
        return
    have, want = pipeline_family(declared), pipeline_family(row.pipeline)
    if have == want:
        return
    shown = ", ".join(f"{k}={v!r}" for k, v in list(row.settings.items())[:3] if not isinstance(v, (list, tuple)))
    raise MalformedSpecError(
        f"{spec}: its model_index.json declares {declared} ({have}), but {how} names {named}, a {row.pipeline} "
        f"({want}): that card's settings ({shown}) are another architecture's; correct base_model in its README's "
        "front matter (or remove it and pass --set)")
