"""Checks a results document must pass before it is submitted or shown on the leaderboard.

:func:`check_results` starts from the scoring stage's own checks
(:func:`benchmark.results.validate_results`: JSON Schema, NaN / infinity, score
names with metadata) and adds what the schema cannot say: a supported schema version,
every score and interval within the range of its metadata, intervals that contain their
estimate, copied metadata that agrees with :mod:`benchmark.scores.metadata`, and that the
run was not made with a built-in tiny random-weight model (allowed only as a demo).

Each problem is one line starting with the JSON path it concerns (``scores/3/value: ...``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmark.results import CI_EXCLUDES_ESTIMATE_NOTE, RESULTS_FILE, SCHEMA_VERSION, validate_results
from benchmark.models.defaults import is_builtin
from benchmark.scores.metadata import SCORE_METADATA, get_metadata

SUPPORTED_SCHEMA_VERSIONS = (SCHEMA_VERSION,)
DEMO_NOTE = "demo: built-in tiny model, meaningless scores"

# Scores whose estimate is an absolute value (or a mean of absolute values). Near 0 the
# percentile bootstrap of such a score is biased upward, so its interval may legitimately
# miss the estimate; benchmark.results.score_entry then writes a ci_note saying so.
ABSOLUTE_VALUE_SCORES = frozenset({
    "gep_score_neutral", "gep_score_explicit", "gep_score_occupation",
    "mad_gender", "mad_skin_tone", "mad_attribute",
    "diffusion_bias", "bias_amplification",
})
_TOLERANCE = 1e-9  # the same slack score_entry and ScoreMetadata.in_range allow


class UnreadableResults(ValueError):
    """A file that is not a results document at all (missing, not JSON, not an object)."""


def load_results_file(path: str | Path) -> dict:
    """The document in ``path`` (a results.json or a run folder holding one).

    NaN / Infinity literals are read as floats so that :func:`check_results` can name
    where they are; anything that is not a JSON object raises :class:`UnreadableResults`.
    """
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UnreadableResults(f"no such file {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UnreadableResults(f"cannot read {path}: {exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnreadableResults(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise UnreadableResults(f"not a results document: the top level is a JSON {type(doc).__name__}, not an object")
    return doc


def is_demo(doc: Mapping) -> bool:
    """True for a run of a built-in tiny model (``model.builtin`` or a ``builtin:`` spec / id)."""
    model = doc.get("model") if isinstance(doc, Mapping) else None
    if not isinstance(model, Mapping):
        return False
    return is_builtin(model)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def _check_model(doc: Mapping, allow_demo: bool) -> list[tuple[str, str]]:
    model = doc.get("model")
    if not isinstance(model, Mapping):
        return []
    problems = []
    name = model.get("spec") or model.get("id")
    builtin_named = any(is_builtin(model.get(k)) for k in ("spec", "id"))
    if builtin_named and model.get("builtin") is False:
        problems.append(("model/builtin", f"is false but the model is {name} (a built-in tiny model)"))
    if is_demo(doc) and not allow_demo:
        problems.append(("model", f"{name} is a built-in tiny random-weight model: its scores are meaningless; "
                                  "accepted only as a demo (--allow-demo / --demo)"))
    submission = doc.get("submission")
    if isinstance(submission, Mapping) and isinstance(submission.get("demo"), bool) \
            and submission["demo"] != is_demo(doc):
        problems.append(("submission/demo", f"is {str(submission['demo']).lower()} but the model "
                                            f"{'is' if is_demo(doc) else 'is not'} a built-in tiny model"))
    return problems


def _check_score(i: int, entry: Mapping) -> list[tuple[str, str]]:
    where = f"scores/{i}"
    name = entry.get("name")
    if name not in SCORE_METADATA:
        return []  # validate_results already says the name has no metadata
    meta = get_metadata(name)
    problems = []

    # The copied metadata must be the package's, or the leaderboard would sort and bound
    # the score differently from every other submission.
    expected = {"min": meta.min_value, "max": None if math.isinf(meta.max_value) else meta.max_value,
                "lower_is_better": meta.lower_is_better}
    for key, want in expected.items():
        if key in entry and entry[key] != want:
            problems.append((f"{where}/{key}", f"{entry[key]!r} disagrees with the metadata of {name} ({want!r})"))

    value = entry.get("value")
    if value is None:
        if not (isinstance(entry.get("reason"), str) and entry["reason"].strip()):
            problems.append((f"{where}/reason", f"{name} is undefined (value null) but no reason says why"))
        return problems
    if not _is_number(value):
        return problems  # wrong type or NaN: the schema / NaN checks report it
    bounds = f"[{_fmt(meta.min_value)}, {_fmt(meta.max_value)}]"
    if not meta.in_range(value):
        problems.append((f"{where}/value", f"{name} = {_fmt(value)} is outside its range {bounds}"))

    ci = entry.get("ci")
    if not isinstance(ci, Mapping) or not (_is_number(ci.get("low")) and _is_number(ci.get("high"))):
        return problems
    low, high = ci["low"], ci["high"]
    if low > high + _TOLERANCE:
        problems.append((f"{where}/ci", f"low {_fmt(low)} is above high {_fmt(high)}"))
        return problems
    for key, bound in (("low", low), ("high", high)):
        if not meta.in_range(bound):
            problems.append((f"{where}/ci/{key}", f"{_fmt(bound)} is outside the range of {name} {bounds}"))
    if not (low - _TOLERANCE <= value <= high + _TOLERANCE):
        note = entry.get("ci_note") or ""
        excused = name in ABSOLUTE_VALUE_SCORES and CI_EXCLUDES_ESTIMATE_NOTE in note
        if not excused:
            why = ("without the ci_note that explains it" if name in ABSOLUTE_VALUE_SCORES
                   else "(allowed only for absolute-value scores with a ci_note)")
            problems.append((f"{where}/ci", f"[{_fmt(low)}, {_fmt(high)}] does not contain the estimate "
                                            f"{_fmt(value)} {why}"))
    return problems


_REQUIRED = re.compile(r"^'([^']+)' is a required property$")


def _readable(line: str) -> tuple[str, str]:
    """(path, message) of one validate_results line, with "required property" made plain."""
    path, _, message = line.partition(": ")
    missing = _REQUIRED.match(message)
    if missing:
        path = missing.group(1) if path == "(top level)" else f"{path}/{missing.group(1)}"
        message = "required field is missing"
    return path, message


def check_results(doc: Mapping, *, allow_demo: bool = False) -> list[str]:
    """Every problem of a results document, one ``path: message`` line each; empty = valid.

    With ``allow_demo`` a built-in tiny model's run is valid (mark it with :func:`is_demo`).
    """
    if not isinstance(doc, Mapping):
        return [f"(top level): a results document is a JSON object, not {type(doc).__name__}"]
    ours: list[tuple[str, str]] = []
    version = doc.get("schema_version")
    if "schema_version" in doc and version not in SUPPORTED_SCHEMA_VERSIONS:
        ours.append(("schema_version", f"{version!r} is not supported (this t2ibench reads "
                                       f"{', '.join(SUPPORTED_SCHEMA_VERSIONS)})"))
    ours += _check_model(doc, allow_demo)
    scores = doc.get("scores")
    for i, entry in enumerate(scores if isinstance(scores, list) else []):
        if isinstance(entry, Mapping):
            ours += _check_score(i, entry)

    # Where one of our lines explains a path, the schema's terser line about it is dropped.
    explained = {p for p, _ in ours}
    explained |= {p.rsplit("/", 1)[0] + "/value" for p in explained if p.endswith("/reason")}
    base = [_readable(line) for line in validate_results(doc)]
    lines = [f"{p}: {m}" for p, m in base if p not in explained]
    return lines + [f"{p}: {m}" for p, m in ours]
