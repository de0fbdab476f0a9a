"""Where a run's images came from, when the benchmark did not generate them itself.

run_config.json and results.json carry a ``provenance`` block for images supplied as a folder
(``t2ibench run --images``) and for images requested from an image-generation API
(``--model openai:...``); runs whose images the benchmark generated from a pipeline it loaded
have none. The leaderboard shows the block's ``kind`` and filters on it.
"""

from __future__ import annotations

from typing import Any, Mapping

SUPPLIED = "images supplied"
API = "api"
KINDS = (SUPPLIED, API)
SEEDS_NOT_CONTROLLED = "not controlled by the benchmark"


def supplied_provenance(*, supplied_by: str | None, selection: Mapping[str, Any], folder_sha256: str,
                        n_supplied: int, n_missing: int, matched_by: str) -> dict:
    """``selection``: the sheet's suites, limit and probe fingerprint (benchmark.probes.sheet)."""
    return {"kind": SUPPLIED, "supplied_by": supplied_by or "not stated", "seeds": SEEDS_NOT_CONTROLLED,
            "seeds_controlled": False, "sheet": dict(selection), "matched_by": matched_by,
            "images_sha256": folder_sha256, "n_supplied": int(n_supplied), "n_missing": int(n_missing)}


def api_provenance(*, provider: str, api_base: str, model: str, settings: Mapping[str, Any],
                   seeds_controlled: bool) -> dict:
    return {"kind": API, "provider": provider, "api_base": api_base, "api_model": model,
            "seeds": "passed to the API" if seeds_controlled else SEEDS_NOT_CONTROLLED,
            "seeds_controlled": bool(seeds_controlled), "request_settings": dict(settings)}


def provenance_kind(results: Mapping[str, Any]) -> str:
    """What the leaderboard shows: the block's kind, or ``generated`` (by the benchmark)."""
    block = results.get("provenance")
    return str(block.get("kind")) if isinstance(block, Mapping) and block.get("kind") in KINDS else "generated"
