"""The calibration sample of a run folder: which images people label so that scores can be
corrected (``RUN_DIR/human_labels/sample.json``; the correction: :mod:`benchmark.scores.ppi`).

A corrected score is valid only if the people-labelled images are a random sample of the
suite's images, drawn before anyone looked at them (labelling the disagreements first would
bias it). So the sample is drawn here, seeded, and recorded with everything needed to check it
later:

* per suite, stratified by prompt with proportional allocation (every prompt's images get the
  suite's sampling fraction, rounded by largest remainder, ties broken by the seed): every image
  of a suite has (about) the same inclusion probability, recorded per prompt, and a score built
  per prompt or per profession gets labels in each;
* the drawn images in a random order (the annotation app serves them in it): answers to a first
  part of the queue are themselves a random sample of the suite;
* the seed, the size and a digest of the population (each eligible image's probe id and sha256):
  :func:`check_suite` draws again from the run's images and refuses a record that does not match
  (edited, drawn from other images, or images changed since).

Nothing here reads answers; :mod:`benchmark.human` does, and counts answers outside the sample
for agreement only.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from benchmark.contract.atomic import write_bytes_atomic
from benchmark.contract.bounded_json import RefusedJson, load_bounded_json
from benchmark.contract.digest import sha256_hex
from benchmark.contract.run_folder import HUMAN_LABELS_DIR
from benchmark.contract.times import utc_iso
from benchmark.scores.ppi import allocate

__all__ = ["SAMPLE_FILE", "SAMPLE_VERSION", "METHOD", "Eligible", "draw_suite", "draw_sample",
           "sample_path", "write_sample", "read_sample", "check_suite", "population_digest"]

SAMPLE_FILE = "sample.json"
SAMPLE_VERSION = 1
METHOD = ("per suite: stratified by prompt, proportional allocation (largest remainder), without replacement, "
          "seeded; the drawn images in random order")
MAX_SAMPLE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Eligible:
    """An image people may be asked about: its probe, the prompt it was made from (the stratum)
    and its sha256 (the manifest's)."""

    probe_id: str
    prompt: str
    sha256: str


def sample_path(run_dir: str | Path) -> Path:
    return Path(run_dir) / HUMAN_LABELS_DIR / SAMPLE_FILE


def population_digest(images: Sequence[Eligible]) -> str:
    """sha256 of the population: each eligible image's probe id and sha256, in probe-id order."""
    lines = "".join(f"{im.probe_id}\t{im.sha256}\n" for im in sorted(images, key=lambda im: im.probe_id))
    return sha256_hex(lines.encode("utf-8"))


def _rng(seed: int, suite: str) -> np.random.Generator:
    return np.random.default_rng([int(seed), zlib.crc32(suite.encode("utf-8"))])


def draw_suite(images: Sequence[Eligible], size: int, seed: int, suite: str) -> dict:
    """The record of one suite's sample: ``size`` of ``images`` stratified by prompt (see the module
    doc), in a random order; deterministic in (images, size, seed, suite)."""
    rng = _rng(seed, suite)
    ordered = sorted(images, key=lambda im: im.probe_id)
    strata: dict[str, list[Eligible]] = {}
    for im in ordered:
        strata.setdefault(im.prompt, []).append(im)
    take = allocate({k: len(v) for k, v in strata.items()}, size, rng)
    chosen: list[Eligible] = []
    for prompt, members in strata.items():
        if take[prompt]:
            picked = rng.choice(len(members), size=take[prompt], replace=False)
            chosen += [members[i] for i in sorted(picked)]
    chosen = [chosen[i] for i in rng.permutation(len(chosen))]
    return {"population": len(ordered), "population_digest": population_digest(ordered), "size": len(chosen),
            "probe_ids": [im.probe_id for im in chosen], "sha256": [im.sha256 for im in chosen],
            "strata": {p: [take[p], len(m)] for p, m in strata.items() if take[p]}}


def draw_sample(populations: Mapping[str, Sequence[Eligible]], size: int, seed: int,
                question_types: Sequence[str] | None = None) -> dict:
    """The sample record: ``size`` images of each suite of ``populations`` (suite -> its eligible
    images), drawn with ``seed``; ``question_types``: what people are asked (None: every type)."""
    if int(size) < 1:
        raise ValueError(f"the sample size must be at least 1 image per suite, got {size}")
    if not 0 <= int(seed) < 2**63:
        raise ValueError(f"the sample seed must be a whole number in [0, 2**63), got {seed}")
    return {"version": SAMPLE_VERSION, "created": utc_iso(), "seed": int(seed), "size_per_suite": int(size),
            "method": METHOD, "question_types": None if question_types is None else list(question_types),
            "suites": {s: draw_suite(images, size, seed, s) for s, images in populations.items() if images}}


def write_sample(run_dir: str | Path, record: Mapping) -> Path:
    """Write RUN_DIR/human_labels/sample.json atomically."""
    path = sample_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_bytes_atomic(path, (json.dumps(record, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))


def _shape_problem(doc: Any) -> str | None:
    if not isinstance(doc, dict) or doc.get("version") != SAMPLE_VERSION:
        return f"not a version-{SAMPLE_VERSION} sample record"
    if not isinstance(doc.get("seed"), int) or isinstance(doc.get("seed"), bool) or not isinstance(doc.get("suites"), dict):
        return "its seed or suites are missing"
    for suite, rec in doc["suites"].items():
        ids, shas = (rec or {}).get("probe_ids"), (rec or {}).get("sha256")
        if not (isinstance(rec, dict) and isinstance(ids, list) and isinstance(shas, list) and len(ids) == len(shas)
                and all(isinstance(x, str) for x in ids + shas) and isinstance(rec.get("size"), int)
                and isinstance(rec.get("population_digest"), str)):
            return f"suite {suite!r} is malformed"
    return None


def read_sample(run_dir: str | Path) -> tuple[dict | None, str | None]:
    """(the sample record, None), (None, None) when RUN_DIR has none, or (None, why it cannot be used)."""
    path = sample_path(run_dir)
    if not path.is_file():
        return None, None
    try:
        data = path.read_bytes()
        if len(data) > MAX_SAMPLE_BYTES:
            return None, f"{SAMPLE_FILE} is over {MAX_SAMPLE_BYTES // 2**20} MB"
        doc = load_bounded_json(data, 8)
    except (OSError, RefusedJson) as exc:
        return None, f"{SAMPLE_FILE} cannot be read ({exc})"
    problem = _shape_problem(doc)
    return (None, f"{SAMPLE_FILE}: {problem}") if problem else (doc, None)


def check_suite(record: Mapping, suite: str, images: Sequence[Eligible]) -> str | None:
    """Why ``record``'s sample of ``suite`` cannot be used with the run's current eligible
    ``images`` (None when it can): images changed or other images, or not the seeded draw."""
    rec = (record.get("suites") or {}).get(suite)
    if rec is None:
        return f"the sample record has no sample of {suite}"
    if rec.get("population_digest") != population_digest(images):
        return (f"the sample of {suite} was drawn from other images than the run's now (images regenerated, "
                "added or removed since)")
    again = draw_suite(images, int(rec.get("size", 0)), int(record["seed"]), suite)
    if again["probe_ids"] != list(rec["probe_ids"]) or again["sha256"] != list(rec["sha256"]):
        return (f"the recorded sample of {suite} is not the seeded draw (seed {record['seed']}, size "
                f"{rec.get('size')}): the record was edited")
    return None
