"""Which model card table rows a model inherits: its own (by Hub ID, or the Hub ID a local
copy is a copy of) and those of the ``base_model`` its model card names, followed a few levels.

A fine-tune published with ``base_model: stabilityai/sdxl-turbo`` in its README's YAML front
matter (the Hub's standard field, read with huggingface_hub's ``ModelCard``) runs at
SDXL-Turbo's settings unless it has a row of its own; a fine-tune of that fine-tune at the same,
up to :data:`MAX_LEVELS` levels; a chain that comes back to a model already on it is refused.

A local folder is matched to a Hub ID, in this order:

1. a folder inside a Hugging Face cache (``.../models--ORG--NAME/snapshots/COMMIT``): that ID;
2. a copy made with ``hf download ORG/NAME --local-dir DIR`` (huggingface_hub leaves
   ``DIR/.cache/huggingface/download/README.md.metadata`` beside the repo's own README): the one
   Hub ID with a card table row that the card's example code loads (``from_pretrained("ORG/NAME"``),
   as every card in the table does; none or several: not matched. ``model_index.json`` and the
   components' ``_name_or_path`` are no help: diffusers writes no repo name into them;
3. the folder's README.md front matter ``base_model`` (a fine-tune, or any folder whose README
   one writes ``base_model: ORG/NAME`` into).

A folder matched by none of these runs at the pipeline's defaults, and the plan says so
(:func:`benchmark.models.model_cards.settings_warning`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .errors import MalformedSpecError
from .hub_access import hub_offline
from .model_cards import card_row

__all__ = ["CardIdentity", "MAX_LEVELS", "card_identity", "read_card_data", "cache_path_id", "local_copy_id"]

#: how many base_model links are followed (a fine-tune of a fine-tune of a fine-tune)
MAX_LEVELS = 4
_CACHE_PATH = re.compile(r"models--(?P<org>[^/\\]+?)--(?P<name>[^/\\]+)[/\\]snapshots[/\\](?P<commit>[0-9a-f]{40})$")
_LOADS = re.compile(r"""from_pretrained\(\s*["'](?P<id>[\w.-]+/[\w.-]+)["']""")


@dataclass(frozen=True)
class CardIdentity:
    """``own``: the Hub ID whose row is the model's own (None: none known); ``how``: how a local
    folder was matched to it; ``bases``: the ``base_model`` chain, nearest first."""

    own: str | None = None
    how: str | None = None
    bases: tuple[str, ...] = field(default=())


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
        text = (folder / "README.md").read_text(encoding="utf-8")
    except OSError:
        return None
    known = {card_row(m["id"]).ids[0] for m in _LOADS.finditer(text) if card_row(m["id"]) is not None}
    return known.pop() if len(known) == 1 else None


def _front_matter(readme: Path) -> dict:
    from huggingface_hub import ModelCard

    try:
        data = ModelCard.load(readme).data
    except (OSError, ValueError):
        return {}
    return data.to_dict() if data is not None else {}


def read_card_data(repo_or_folder: str, *, revision: str | None = None, token=None) -> dict:
    """The YAML front matter of a local folder's README.md or a Hub repo's model card (from the
    cache, or the Hub unless offline); {} when there is none or it cannot be read."""
    folder = Path(repo_or_folder)
    if folder.is_dir():
        readme = folder / "README.md"
        return _front_matter(readme) if readme.is_file() else {}
    from huggingface_hub import hf_hub_download, try_to_load_from_cache

    try:
        hit = try_to_load_from_cache(repo_or_folder, "README.md", revision=revision)
    except Exception:  # noqa: BLE001 - a malformed ID or a broken cache entry: no card
        hit = None
    if not isinstance(hit, str):
        if hub_offline():
            return {}
        try:
            hit = hf_hub_download(repo_or_folder, "README.md", revision=revision, token=token, etag_timeout=5)
        except Exception:  # noqa: BLE001 - unreachable, gated, no card: the chain stops here
            return {}
    return _front_matter(Path(hit))


def _base_of(data: Mapping) -> str | None:
    """The card's ``base_model`` when it names one model (a merge of several names no one base)."""
    base = data.get("base_model")
    if isinstance(base, list):
        base = base[0] if len(base) == 1 else None
    return str(base).strip() if isinstance(base, str) and base.strip() else None


def _chain(start: str, data: Mapping, read: Callable[[str], Mapping]) -> tuple[str, ...]:
    """The ``base_model`` links from ``data`` (the card of ``start``): followed while a base has
    no row of its own, up to MAX_LEVELS; a loop is refused in one line."""
    seen, bases = [start], []
    base = _base_of(data)
    while base is not None:
        if base.lower() in (s.lower() for s in seen):
            raise MalformedSpecError("the model cards' base_model links loop: " + " -> ".join([*seen, base]))
        bases.append(base)
        seen.append(base)
        if card_row(base) is not None or len(bases) >= MAX_LEVELS:
            break
        base = _base_of(read(base))
    return tuple(bases)


def card_identity(kind: str, value: str, *, revision: str | None = None, token=None,
                  read: Callable[[str], Mapping] | None = None) -> CardIdentity:
    """The rows a ``hub`` or ``local`` model inherits (module docstring). ``read(repo)``: a Hub
    repo's card data (default :func:`read_card_data`; tests pass their own)."""
    read = read or (lambda repo: read_card_data(repo, token=token))
    if kind == "hub":
        if card_row(value) is not None:
            return CardIdentity(own=value)
        return CardIdentity(bases=_chain(value, read_card_data(value, revision=revision, token=token), read))
    if kind != "local":
        return CardIdentity()
    own, how = cache_path_id(value), "its Hugging Face cache path"
    if own is None:
        own, how = local_copy_id(value), "the example code of the model card `hf download --local-dir` copied"
    if own is not None and card_row(own) is not None:
        return CardIdentity(own=own, how=how)
    return CardIdentity(own=own, how=how if own else None, bases=_chain(value, read_card_data(value), read))
