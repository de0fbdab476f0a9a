"""results.json: the versioned record of one audit (see ``docs/results.md``).

Built by the scoring stage (:func:`benchmark.runner.score.score_run`) and described by
the JSON Schema ``benchmark/contract/results_schema.json``. Score metadata (display name,
range, direction, paper) is copied into every score entry from
:data:`benchmark.scores.metadata.SCORE_METADATA`, never written here by hand.

The file has no NaN or infinity (JSON has neither): undefined numbers are ``null``.
For a built-in tiny random-weight model the first key is ``warning``.
"""

from __future__ import annotations

import json
import math
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from benchmark.contract.model_specs import is_builtin
from benchmark.contract.run_folder import write_bytes_atomic
from benchmark.contract.run_folder_check import timings_document
from benchmark.scores.metadata import SCORE_METADATA, get_metadata
from benchmark.contract.times import utc_iso
from benchmark.contract.bounded_json import MAX_INT_DIGITS, MAX_NUMBER_CHARS, RefusedJson, json_depth, load_bounded_json  # noqa: F401 (re-exported)

SCHEMA_VERSION = "1.0"
RESULTS_FILE = "results.json"
SCHEMA_FILE = "results_schema.json"
PACKAGE_NAME = "t2i-bias-benchmark"
BUILTIN_WARNING = "Scores from a tiny random-weight model: meaningless, for testing the pipeline only."
#: the first line of results and report when the model is real but a label came from a built-in annotator
BUILTIN_ANNOTATORS_WARNING = ("Labels from built-in tiny random-weight annotators: the scores are meaningless, "
                              "for testing the pipeline only.")
# score_entry's note for a percentile interval that misses its estimate; `t2ibench validate`
# accepts such an interval only for absolute-value scores whose note starts with the mark (an earlier
# wording listed the absolute-value scores after "absolute values": results holding it still pass).
CI_EXCLUDES_ESTIMATE_MARK = "the percentile interval does not contain the estimate"
CI_EXCLUDES_ESTIMATE_NOTE = f"{CI_EXCLUDES_ESTIMATE_MARK}: resampling biases scores built from absolute values upward near 0"
SEED_POLICY = ("one image per probe row, generated from its own torch.Generator seeded with the probe's `seed`: "
               "the first 31 bits of sha256(probe id), independent of batch size, order and process")


def seed_policy(provenance: Mapping[str, Any] | None) -> str:
    """results.json ``seeds.policy``: :data:`SEED_POLICY` for images the benchmark generated; for
    images made elsewhere (``provenance``: supplied or an image API) what their provenance says."""
    if not isinstance(provenance, Mapping) or not provenance.get("kind"):
        return SEED_POLICY
    made = {"api": "made by an image API"}.get(str(provenance["kind"]), str(provenance["kind"]))
    return (f"one image per probe row, {made}: seeds {provenance.get('seeds', 'not controlled')} (each probe's "
            "`seed` is recorded; the benchmark did not make the image from it)")


# --------------------------------------------------------------------------- JSON values


def json_safe(value: Any) -> Any:
    """A JSON-ready value: numpy scalars and arrays unwrapped, NaN / inf / pandas NA -> None,
    tuples -> lists, mapping keys -> str, DataFrames -> lists of row objects."""
    if value is None:
        return None
    if isinstance(value, pd.DataFrame):
        return [json_safe(r) for r in value.to_dict("records")]
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return [json_safe(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Path):
        return str(value)
    return str(value)


def dumps(results: Mapping) -> str:
    """results as indented JSON text; raises ValueError on NaN / inf (there should be none)."""
    return json.dumps(json_safe(results), indent=2, allow_nan=False, ensure_ascii=False) + "\n"


# --------------------------------------------------------------------------- score entries


def _ci(ci: Mapping | None) -> tuple[dict | None, str | None]:
    """A CI dict from the score functions, or (None, why) when it is missing or not finite."""
    if ci is None:
        return None, None
    low, high = ci.get("low"), ci.get("high")
    if low is None or high is None or not (math.isfinite(float(low)) and math.isfinite(float(high))):
        return None, "bootstrap interval undefined: the statistic was undefined on some resamples"
    return {
        "low": float(low), "high": float(high), "confidence_level": float(ci["confidence_level"]),
        "n_resamples": int(ci["n_resamples"]), "method": str(ci.get("method") or "bootstrap"),
    }, None


def score_entry(name: str, suite: str, value: float | None, *, ci: Mapping | None = None, n: int = 0,
                estimator: str | None = None, annotator: str | None = None, subset: str | None = None,
                reason: str | None = None, ci_note: str | None = None) -> dict:
    """One element of ``results["scores"]``, with the score's metadata copied from SCORE_METADATA.

    ``value`` None (or NaN / inf) makes the entry undefined; ``reason`` then says why.
    ``subset`` tells entries of one name and suite apart (e.g. an intervention aspect).
    """
    meta = get_metadata(name)
    if value is not None and not math.isfinite(float(value)):
        value = None
    defined = value is not None
    if not defined and not reason:
        reason = "undefined"
    ci_dict, why = _ci(ci) if defined else (None, None)
    if ci_dict is not None and not (ci_dict["low"] - 1e-9 <= value <= ci_dict["high"] + 1e-9):
        why = CI_EXCLUDES_ESTIMATE_NOTE
    return {
        "name": name,
        "display_name": meta.display_name,
        "suite": suite,
        "subset": subset,
        "estimator": estimator,
        "annotator": annotator,
        "value": None if value is None else float(value),
        "defined": defined,
        "reason": None if defined else str(reason),
        "ci": ci_dict,
        "ci_note": "; ".join(x for x in (ci_note, why) if x) or None,
        "n": int(n),
        **{k: v for k, v in expected_score_metadata(name).items() if k != "display_name"},
    }


def has_metadata(name: str) -> bool:
    return name in SCORE_METADATA


# --------------------------------------------------------------------------- environment


def hardware_info(device: str | None = None) -> dict:
    """platform, python, torch version, device and GPU name (None without one) of this machine."""
    info: dict[str, Any] = {"platform": platform.platform(), "python": sys.version.split()[0], "torch": None,
                            "device": device, "gpu": None, "recorded_by": "score"}
    try:
        import torch

        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
            info["device"] = device or "cuda"
        else:
            info["device"] = device or "cpu"
    except Exception:  # torch missing or broken: the record says so by its nulls
        info["device"] = device
    return info


def read_timings(run_dir: str | Path) -> dict[str, float]:
    """Seconds per stage from RUN_DIR/timings.json.

    Accepted shapes: ``{stage: seconds}`` (top-level numbers), and nested objects whose
    leaves named ``seconds`` (or ending in ``_seconds``) are times: ``{"annotate/vqa":
    {"seconds": 3.0, "n_images": 10}}`` gives ``annotate/vqa: 3.0``; other nested numbers
    (counts, rates) are left out. Nested names are joined with '.'.
    """
    raw = timings_document(run_dir)[0] or {}
    out: dict[str, float] = {}

    def is_time(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0

    def walk(prefix: str, obj: Any) -> None:
        for k, v in obj.items():
            name = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, Mapping):
                walk(name, v)
            elif is_time(v) and (not prefix or k == "seconds" or str(k).endswith("_seconds")):
                out[prefix if k == "seconds" else name] = float(v)

    if isinstance(raw, Mapping):
        walk("", raw)
    return out


# --------------------------------------------------------------------------- the document


def builtin_annotators(doc: Mapping) -> list[str]:
    """The built-in tiny random-weight models among the annotators of ``doc`` (sorted):
    ``annotators[*]`` (annotator, encoder) and the score entries' annotator / estimator."""
    found: set[str] = set()
    for key, fields in (("annotators", ("annotator", "encoder", "estimator")), ("scores", ("annotator", "estimator"))):
        items = doc.get(key) if isinstance(doc, Mapping) else None
        for item in items if isinstance(items, list) else []:
            if isinstance(item, Mapping):
                found.update(str(item[f]).strip() for f in fields if isinstance(item.get(f), str) and is_builtin(item[f]))
    return sorted(found)


def results_warning(model: Mapping, annotators: list, scores: list) -> str | None:
    """The warning a results document opens with: a built-in generator, else a built-in annotator."""
    if model.get("builtin"):
        return BUILTIN_WARNING
    if builtin_annotators({"annotators": annotators, "scores": scores}):
        return BUILTIN_ANNOTATORS_WARNING
    return None


@dataclass(frozen=True)
class AuditedRun:
    """What was audited, as the run folder recorded it (run_config.json): results.json's
    ``model``, ``package``, ``settings``, ``seeds``, ``hardware``, and where they apply ``probes``
    (which probe set: kind, source, revision, fingerprint; results on different probe sets are
    never compared), ``references`` (the reference datasets scores were made against instead of
    the model's own images, ``{"<task>": {source, revision, fingerprint}}``; absent for the
    papers' protocol) and ``provenance`` (images the benchmark did not generate: supplied as a
    folder, or from an API; :mod:`benchmark.contract.image_provenance`) and ``setting_sources``
    (where each generation setting came from: ``--set``, a model card row, the pipeline's
    default; benchmark.models.model_cards)."""

    model: Mapping
    package_version: str
    settings: Mapping
    seeds: Mapping
    hardware: Mapping
    probes: Mapping | None = None
    references: Mapping | None = None
    provenance: Mapping | None = None
    setting_sources: Mapping | None = None


@dataclass(frozen=True)
class ScoredRun:
    """What the score stage found: ``suites`` (each suite's status), ``scores`` (score entries),
    ``annotators`` (who made the labels), ``scoring`` (how: resamples, level, task options),
    ``run`` (images counted, excluded, batch sizes), ``details`` (the per-item tables),
    ``timings``, ``notes``, ``pairing`` (the score entries' paired resamples,
    :mod:`benchmark.contract.pairing`; written last, absent when none) and ``human_labels`` (people's
    labels of a calibration sample: what was used and refused, the annotator's errors per group, the
    corrected shares; absent without people's labels; each entry's ``human_corrected`` is in ``scores``)."""

    suites: list
    scores: list
    annotators: list
    scoring: Mapping
    run: Mapping
    details: Mapping
    timings: Mapping
    notes: list
    pairing: Mapping | None = None
    human_labels: Mapping | None = None


def build_results(audited: AuditedRun, scored: ScoredRun, *, created: str | None = None) -> dict:
    """The results document in its fixed key order (``warning`` first, and first of the notes,
    for a built-in model or annotator: :func:`results_warning`); ``created``: now by default."""
    doc: dict[str, Any] = {}
    notes = list(scored.notes)
    warning = results_warning(audited.model, scored.annotators, scored.scores)
    if warning:
        doc["warning"] = warning
        notes = [warning] + [n for n in notes if n != warning]
    doc.update({
        "schema_version": SCHEMA_VERSION,
        "model": dict(audited.model),
        **({"probes": dict(audited.probes)} if audited.probes else {}),
        **({"references": {str(k): dict(v) for k, v in audited.references.items()}} if audited.references else {}),
        **({"provenance": dict(audited.provenance)} if audited.provenance else {}),
        "package": {"name": PACKAGE_NAME, "version": str(audited.package_version)},
        "created": created or utc_iso(),
        "run": dict(scored.run or {}),
        "suites": list(scored.suites),
        "settings": dict(audited.settings),
        **({"setting_sources": {str(k): str(v) for k, v in audited.setting_sources.items()}}
           if audited.setting_sources else {}),
        "seeds": dict(audited.seeds),
        "scoring": dict(scored.scoring),
        "hardware": dict(audited.hardware),
        "timings": {str(k): float(v) for k, v in scored.timings.items()},
        "annotators": list(scored.annotators),
        "scores": list(scored.scores),
        **({"human_labels": dict(scored.human_labels)} if scored.human_labels else {}),
        "details": dict(scored.details),
        "notes": notes,
        **({"pairing": dict(scored.pairing)} if scored.pairing else {}),
    })
    return json_safe(doc)


def write_results(run_dir: str | Path, results: Mapping) -> Path:
    """Write RUN_DIR/results.json atomically (strict JSON: no NaN)."""
    return write_bytes_atomic(Path(run_dir) / RESULTS_FILE, dumps(results).encode("utf-8"))


def read_results(path: str | Path) -> dict:
    """results.json from a file or a run folder: :func:`load_results_file` with its default limits."""
    return load_results_file(path)


# --------------------------------------------------------------------------- schema


def schema_path() -> Path:
    """``benchmark/contract/results_schema.json``: the schema ships beside this module (package data)."""
    return Path(__file__).resolve().parent / SCHEMA_FILE


def load_schema() -> dict:
    return json.loads(schema_path().read_text(encoding="utf-8"))


def validate_results(results: Mapping, schema: Mapping | None = None) -> list[str]:
    """Problems of a results document, one readable line each (empty list: valid).

    Checks the JSON Schema (draft 2020-12), that no number is NaN / inf, that ``warning``
    comes first when the model is built in, and that each score names known metadata.
    Range and CI-containment checks belong to ``t2ibench validate``.
    """
    import jsonschema

    schema = load_schema() if schema is None else schema
    validator = jsonschema.Draft202012Validator(schema)
    problems = []
    for err in sorted(validator.iter_errors(results), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        problems.append(f"{where}: {err.message}")

    def walk(prefix: str, obj: Any) -> None:
        if isinstance(obj, float) and not math.isfinite(obj):
            problems.append(f"{prefix or '(top level)'}: {obj} is not allowed (use null)")
        elif isinstance(obj, Mapping):
            for k, v in obj.items():
                walk(f"{prefix}/{k}" if prefix else str(k), v)
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                walk(f"{prefix}/{i}", v)

    try:  # in C, fast; only a document with NaN / inf (or non-JSON values) is walked to name the place
        json.dumps(results, allow_nan=False)
    except (ValueError, TypeError):
        walk("", results)
    model = results.get("model") if isinstance(results, Mapping) else None
    if isinstance(model, Mapping) and model.get("builtin") and next(iter(results), None) != "warning":
        problems.append("warning: must be the first key of a built-in model's results")
    for i, s in enumerate(results.get("scores") or [] if isinstance(results, Mapping) else []):
        if isinstance(s, Mapping) and s.get("name") not in SCORE_METADATA:
            problems.append(f"scores/{i}/name: {s.get('name')!r} has no entry in SCORE_METADATA")
    return problems


# --------------------------------------------------------------------------- reading: the one reader
#
# `t2ibench validate`, the leaderboard and the runner all read results files through
# load_results_file. Results files come from strangers, so reading is bounded before any
# parsing: size first (never reading past the limit), then nesting depth (a linear scan,
# no recursion), then a strict parse that refuses what a results document never holds.

MAX_RESULTS_BYTES = 16 * 1024 * 1024  # a real audit's results.json is tens to hundreds of kB
MAX_RESULTS_DEPTH = 32  # the schema nests 5 levels; settings / details add a few


class UnreadableResults(ValueError):
    """A results file that was not read. ``str()`` is one line naming the file.

    ``refused`` is True for a file that was refused by a reading rule (size, nesting
    depth, big integer, duplicate key, NaN / Infinity, number overflow): a problem of the
    document. False for a file that cannot be read as a JSON object at all (missing, not a
    regular file, not UTF-8, not JSON, not an object).
    """

    def __init__(self, path: str | Path, reason: str, *, refused: bool = False):
        self.path, self.reason, self.refused = str(path), " ".join(str(reason).split()), refused
        super().__init__(f"{self.path}: {self.reason}")


def load_results_file(path: str | Path, *, max_bytes: int = MAX_RESULTS_BYTES,
                      max_depth: int = MAX_RESULTS_DEPTH) -> dict:
    """The results document in ``path`` (a results.json, or a run folder holding one).

    Raises :class:`UnreadableResults` (one line naming the file) for a file over
    ``max_bytes`` (refused from its size, never read past the limit), nested deeper than
    ``max_depth``, holding an integer of more than 20 digits, a number that overflows, a
    NaN / Infinity literal or a key twice in one object, and for anything that is not a
    UTF-8 JSON object. Nothing else raises.
    """
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS_FILE
    mb = max_bytes / 1024 / 1024
    try:
        if not path.exists():
            raise UnreadableResults(path, "no such file")
        if not path.is_file():
            raise UnreadableResults(path, "not a regular file")
        size = path.stat().st_size
        if size > max_bytes:
            raise UnreadableResults(path, f"{size / 1024 / 1024:.1f} MB, over the size limit of {mb:g} MB",
                                    refused=True)
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise UnreadableResults(path, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:  # it grew since stat()
        raise UnreadableResults(path, f"over the size limit of {mb:g} MB", refused=True)
    try:
        doc = load_bounded_json(data, max_depth)
    except RefusedJson as exc:
        raise UnreadableResults(path, exc.reason, refused=exc.refused) from None
    if not isinstance(doc, dict):
        raise UnreadableResults(path, "not a results document: the top level is a JSON "
                                f"{_json_type(doc)}, not an object")
    return doc



def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


# --------------------------------------------------------------------------- validation helpers


def expected_score_metadata(name: str) -> dict:
    """The metadata fields a score entry named ``name`` must carry, as :func:`score_entry`
    copies them from SCORE_METADATA (``max`` null for an unbounded score)."""
    meta = get_metadata(name)
    return {
        "display_name": meta.display_name,
        "lower_is_better": meta.lower_is_better,
        "ideal": meta.ideal,
        "min": meta.min_value,
        "max": None if math.isinf(meta.max_value) else meta.max_value,
        "unit": meta.unit,
        "headline": meta.headline,
        "paper": meta.paper,
    }
