"""What the results schema cannot say about a run's ``provenance`` block
(:mod:`benchmark.contract.image_provenance`): it matches the model spec and the run's counts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmark.contract.image_provenance import API, SUPPLIED


def _spec_kind(model: Any) -> str | None:
    spec = model.get("spec") if isinstance(model, Mapping) else None
    if isinstance(spec, str) and spec.startswith("images:"):
        return SUPPLIED
    if isinstance(spec, str) and spec.startswith("openai:"):
        return API
    return None


def check_image_provenance(doc: Mapping) -> list[tuple[str, str]]:
    """(path, message) for every inconsistency; the schema checks the block's shape."""
    block = doc.get("provenance")
    expected = _spec_kind(doc.get("model"))
    if block is None:
        return [("provenance", f"is missing: a model spec {doc['model']['spec']!r} needs the {expected!r} "
                               "provenance block")] if expected else []
    if not isinstance(block, Mapping):
        return []  # the schema says so
    problems = []
    kind = block.get("kind")
    if kind in (SUPPLIED, API) and kind != expected:
        spec = doc.get("model", {}).get("spec") if isinstance(doc.get("model"), Mapping) else None
        problems.append(("provenance/kind", f"is {kind!r} but the model spec {spec!r} is "
                                            f"{'not ' if expected is None else ''}{expected or 'an API or images: spec'}"))
    if kind == SUPPLIED and block.get("seeds_controlled") is not False:
        problems.append(("provenance/seeds_controlled", "must be false for images supplied from elsewhere"))
    run = doc.get("run") if isinstance(doc.get("run"), Mapping) else {}
    withheld = run.get("n_withheld") if isinstance(run.get("n_withheld"), Mapping) else None
    if kind == SUPPLIED and withheld is not None and isinstance(block.get("n_missing"), int) \
            and withheld.get("missing") != block["n_missing"]:
        problems.append(("provenance/n_missing", f"is {block['n_missing']} but run/n_withheld/missing counts "
                                                 f"{withheld.get('missing')}"))
    return problems
