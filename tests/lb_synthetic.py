"""Synthetic leaderboard submissions made by editing a real results.json of the built-in tiny
model: another model id, no demo marks, every defined value (and its interval) shifted by a
chosen fraction of its range. Used by the leaderboard tests and docs/images/make_screenshots.py."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Mapping

# (model id, shift as a fraction of each score's range): four models that rank differently.
FOUR_MODELS = (("acme/diffusion-xl", 0.02), ("beta-lab/sd-small", 0.10), ("gamma/t2i-base", 0.05),
               ("delta/photoreal-v2", 0.16))


def shifted_results(doc: Mapping, model_id: str, shift: float, *, fill_undefined: bool = False,
                    annotator: str | None = None) -> dict:
    """A copy of results ``doc`` for ``model_id`` with every defined value moved by ``shift`` x its
    range (clipped to the range; the interval moves with it, so it still holds the value).
    ``fill_undefined`` also gives undefined headline scores a made-up value near the ideal and an
    interval (the tiny model leaves most DALL-Eval and PST scores undefined). ``annotator`` names
    the annotator instead of the built-in tiny ones (the copy is then no demo)."""
    out = copy.deepcopy(dict(doc))
    if annotator is not None:
        for item in [*out.get("annotators", []), *out["scores"]]:
            if str(item.get("annotator", "")).startswith("builtin:"):
                item["annotator"] = annotator
    out.pop("warning", None)
    out["model"] = {**out["model"], "id": model_id, "spec": model_id, "revision": "main", "builtin": False}
    out["notes"] = [n for n in out.get("notes", []) if n != doc.get("warning")]
    out["settings"] = {**out.get("settings", {}), "family": "sd1"}
    out["settings"].pop("builtin", None)
    for e in out["scores"]:
        if fill_undefined and e.get("headline") and not e.get("defined"):
            ideal = e.get("ideal") if e.get("ideal") is not None else e.get("min", 0.0)
            span = (e["max"] - e["min"]) if e.get("max") is not None and math.isfinite(e["max"]) else 1.0
            e.update(defined=True, reason=None, value=ideal, n=max(int(e.get("n") or 0), 16),
                     ci={"low": ideal, "high": ideal + 0.04 * span, "confidence_level": 0.95, "n_resamples": 200,
                         "method": "percentile"})
        if not e.get("defined") or e.get("value") is None:
            continue
        lo_b = e.get("min")
        hi_b = e.get("max")
        span = (hi_b - lo_b) if lo_b is not None and hi_b is not None and math.isfinite(hi_b) else 1.0
        delta = shift * span
        lo_b = -math.inf if lo_b is None else lo_b
        hi_b = math.inf if hi_b is None else hi_b

        def move(v: float) -> float:
            return min(max(v + delta, lo_b), hi_b)

        e["value"] = move(e["value"])
        if e.get("ci"):
            e["ci"] = {**e["ci"], "low": min(move(e["ci"]["low"]), e["value"]),
                       "high": max(move(e["ci"]["high"]), e["value"])}
    return out


def write_four_models(results_json: Path, root: Path, *, fill_undefined: bool = False) -> list[Path]:
    """Write the :data:`FOUR_MODELS` submissions made from ``results_json`` under ``root``."""
    doc = json.loads(Path(results_json).read_text(encoding="utf-8"))
    paths = []
    for model_id, shift in FOUR_MODELS:
        path = root / "results" / model_id.replace("/", "__") / "2025-01-01T00-00-00.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(shifted_results(doc, model_id, shift, fill_undefined=fill_undefined),
                                   indent=1), encoding="utf-8")
        paths.append(path)
    return paths


#: the annotator the many synthetic models claim (an open_clip encoder id: they are no demo)
SYNTHETIC_ANNOTATOR = "open_clip:ViT-L-14:openai"


def tiny_audit_argv(out: Path) -> list[str]:
    """``t2ibench`` arguments of the tiny audit whose results.json the synthetic submissions copy
    (the ``tiny_audit`` fixture of the tests, bench/leaderboard_scale.py): builtin:tiny-sd, two
    suites, 4 images each, into ``out``."""
    return ["run", "--model", "builtin:tiny-sd", "--suites", "gep_neutral", "pst_single", "--limit", "4",
            "--n-resamples", "50", "--quiet", "--out", str(out)]


def many_model_ids(n: int) -> list[str]:
    """``n`` distinct valid Hub model ids (``org017/model-00042``)."""
    return [f"org{i % 211:03d}/model-{i:05d}" for i in range(n)]


def write_many(results_json: Path, root: Path, n: int, *, progress=None) -> list[Path]:
    """``n`` valid synthetic submissions made from ``results_json`` under ``root/results``: every
    headline score defined, shifted by a different fraction of its range per model (so they
    rank differently, many within each other's intervals). ``progress`` is called once per file."""
    doc = json.loads(Path(results_json).read_text(encoding="utf-8"))
    paths = []
    for i, model_id in enumerate(many_model_ids(n)):
        shift = ((i * 0.6180339887) % 1.0) * 0.3  # spread over [0, 0.3), no two alike
        path = root / "results" / model_id.replace("/", "__") / "2025-01-01T00-00-00.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(shifted_results(doc, model_id, shift, fill_undefined=True,
                                                                   annotator=SYNTHETIC_ANNOTATOR)), encoding="utf-8")
        paths.append(path)
        if progress is not None:
            progress()
    return paths
