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
    the annotator instead of the built-in tiny ones (the copy is then no demo). The copy has no
    ``pairing`` section: its resamples would not be of the moved values."""
    out = copy.deepcopy(dict(doc))
    if annotator is not None:
        for item in [*out.get("annotators", []), *out["scores"]]:
            if str(item.get("annotator", "")).startswith("builtin:"):
                item["annotator"] = annotator
    out.pop("warning", None)
    out.pop("pairing", None)  # the paired resamples are of the values and annotators replaced here
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


# --------------------------------------------------------------------------- every headline score, and 10,000 rows fast


def all_scores_doc(model_id: str, shift: float, *, width: float = 0.04, demo: bool = False) -> dict:
    """A valid results document of ``model_id`` with an entry for every headline score (each in a
    made-up suite named after its column group, so a board of them has every column family of
    the overview), its value ``shift`` of the way into the score's range (3 significant digits
    and more: the widest cells the table shows) and an interval ``width`` of the range wide."""
    from benchmark.contract import results as res
    from benchmark.scores.metadata import SCORE_METADATA, column_group

    scores, suites = [], {}
    for name, meta in SCORE_METADATA.items():
        if not meta.headline:
            continue
        suite = suites.setdefault(column_group(name), "synthetic-" + column_group(name).lower().replace(" ", "-"))
        lo, hi = meta.min_value, meta.max_value
        span = (hi - lo) if math.isfinite(hi) and math.isfinite(lo) else 1.0
        value = lo + span * (0.0123 + shift * 0.9)
        half = span * width / 2
        ci = {"low": max(lo, value - half * 0.7), "high": min(hi, value + half * 1.3), "confidence_level": 0.95,
              "n_resamples": 200, "method": "percentile"}
        scores.append(res.score_entry(name, suite, value, ci=ci, n=40, estimator="CLS",
                                      annotator="open_clip:ViT-L-14:openai"))
    spec = "builtin:tiny-sd" if demo else model_id
    audited = res.AuditedRun(
        model={"id": spec, "spec": spec, "revision": "main", "builtin": demo}, package_version="0.1.0",
        settings={"family": "tiny" if demo else "sd1"}, seeds={"policy": res.SEED_POLICY, "bootstrap_random_state": 0},
        hardware={"platform": "linux", "python": "3.11", "torch": "2.4", "device": "cuda", "gpu": "H100"})
    scored = res.ScoredRun(
        suites=[{"name": s, "status": "scored", "reason": None, "n_images": 40, "n_scored_images": 40,
                 "excluded": {}} for s in suites.values()],
        scoring={"confidence_level": 0.95, "n_resamples": 200, "ci_method": "percentile"}, timings={},
        annotators=[], scores=scores, details={}, notes=[], run={"n_images": 40 * len(suites), "n_nsfw_excluded": 0})
    return res.build_results(audited, scored, created="2025-01-01T00:00:00+00:00")


def synthetic_table(n: int, *, seed: int = 0, demo_every: int = 500):
    """The contents table (:mod:`submissions.leaderboard.contents_schema`) of ``n`` synthetic
    models made in a second: the cells of one valid :func:`all_scores_doc` repeated, with other
    model ids and keys, values spread over the ranges and intervals of varied widths (seeded), and
    every ``demo_every``-th row a demo. No file behind the rows: the table alone, as a Hub
    results dataset serves it. Returns (the arrow table, the model ids by row)."""
    import numpy as np
    import pyarrow as pa

    from benchmark.scores.metadata import SCORE_METADATA
    from submissions.leaderboard import board_model, contents_schema

    base = all_scores_doc("org/model", 0.5)
    sub = board_model.Submission(doc=base, source="x.json", path=Path("x.json"), run_dir=None)
    rec = {**contents_schema.cells(sub), "source": "x.json", "sha256": "0" * 64, "size": 1, "mtime_ns": 1,
           "problems": [], "checked_with": "synthetic", "run_folder": False}
    table = pa.Table.from_pylist([rec] * n, schema=contents_schema.schema())
    rng = np.random.default_rng(seed)
    ids = many_model_ids(n)
    demo = np.zeros(n, dtype=bool)
    if demo_every:
        demo[demo_every - 1::demo_every] = True
    columns = {"model_id": ids, "key": [f"{i}@main" for i in ids], "model_spec": ids,
               "source": [f"results/{i.replace('/', '__')}/1.json" for i in ids], "demo": demo,
               "builtin": demo, "family": np.where(demo, "tiny", "sd1")}
    for name in contents_schema.present_scores(table):
        meta = SCORE_METADATA[name]
        span = meta.max_value - meta.min_value
        value = meta.min_value + span * rng.uniform(0.01, 0.6, n)
        half = span * rng.uniform(0.002, 0.05, n)
        columns[name] = value
        columns[f"{name}_low"] = np.maximum(meta.min_value, value - half)
        columns[f"{name}_high"] = np.minimum(meta.max_value, value + half)
    for col, values in columns.items():
        table = table.set_column(table.schema.get_field_index(col), col,
                                 pa.array(values, type=table.schema.field(col).type))
    return contents_schema.drop_unused_scores(table), ids
