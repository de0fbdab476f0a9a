"""results.json's ``pairing`` section: what a paired comparison needs, without the run folder.

``t2ibench compare`` pairs two audits by resampling the probes both hold with one
:class:`benchmark.scores.bootstrap.ResamplePlan`: a probe's weight in resample b depends only on
(random state, probe id, b). So each score entry's statistic on the plan's resamples, computed
once by the score stage, is all a later comparison needs: two results files scored under the same
plan (``n_resamples``, ``random_state``) over the same probes give, resample by resample, the
paired difference ``t2ibench compare`` computes from the run folders (equal up to the encoding's
rounding, below 1e-4 of the resamples' range).

The section (``results["pairing"]``)::

    {"format": "paired-resamples/1", "n_resamples": 1000, "random_state": 0,
     "probe_fingerprint": "<the run's probe set fingerprint>",
     "probe_ids": {"n": 2268, "sha256": "<sha256 of the sorted probe ids scored>"},
     "encoding": "...",
     "entries": [{"key": [name, suite, subset, estimator, annotator], "low": 0.31, "step": 2.1e-06,
                  "codes": "<base64 of n_resamples little-endian uint16>", "strata": [65, 0]}, ...]}

Each resample is stored as a 16-bit code: value = low + code x step, code 65535 = undefined on
that resample; ``strata``: the strata of the entry's design and those holding one probe (such
a stratum cannot vary, and a difference resting on it is not tested). Entries are the score
entries with paired resamples; their value, ``defined`` and metadata are those of
``results["scores"]`` with the same key.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np

from benchmark.contract.digest import sha256_hex

__all__ = ["FORMAT", "KEY_FIELDS", "MAX_PAIRING_RESAMPLES", "PairedEntry", "decode_resamples", "encode_resamples",
           "pairing_section", "probe_ids_digest", "read_pairing"]

FORMAT = "paired-resamples/1"
KEY_FIELDS = ("name", "suite", "subset", "estimator", "annotator")
ENCODING = ("each resample a little-endian uint16 code, base64: value = low + code x step; code 65535: "
            "the statistic is undefined on that resample")
UNDEFINED = 65535
TOP = 65534
#: the most resamples a pairing section may carry (2 bytes each per entry)
MAX_PAIRING_RESAMPLES = 100_000


def probe_ids_digest(probe_ids: Iterable[Any]) -> dict:
    """``{"n", "sha256"}`` of a run's probe ids (sorted, one per line): two results pair only
    over the same probes."""
    ids = sorted({str(p) for p in probe_ids})
    return {"n": len(ids), "sha256": sha256_hex("\n".join(ids).encode("utf-8"))}


def encode_resamples(values: np.ndarray) -> dict:
    """``{"low", "step", "codes"}`` of the resampled statistic (NaN: undefined)."""
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v)
    low = float(v[ok].min()) if ok.any() else 0.0
    span = float(v[ok].max()) - low if ok.any() else 0.0
    step = span / TOP if span > 0 else 0.0
    codes = np.full(v.size, UNDEFINED, dtype="<u2")
    if ok.any():
        codes[ok] = np.rint((v[ok] - low) / step).astype("<u2") if step else 0
    return {"low": low, "step": step, "codes": base64.b64encode(codes.tobytes()).decode("ascii")}


def decode_resamples(item: Mapping, n_resamples: int) -> np.ndarray:
    """The resampled statistic of one entry (NaN where undefined); ValueError (one line) when the
    item is not ``n_resamples`` codes with a finite low and step >= 0."""
    low, step = item.get("low"), item.get("step")
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in (low, step)) \
            or step < 0:
        raise ValueError("low and step must be finite numbers, step >= 0")
    raw = item.get("codes")
    if not isinstance(raw, str) or len(raw) != 4 * math.ceil(2 * n_resamples / 3):
        raise ValueError(f"codes must be the base64 of {n_resamples} 16-bit codes")
    try:
        codes = np.frombuffer(base64.b64decode(raw, validate=True), dtype="<u2")
    except (binascii.Error, ValueError):
        raise ValueError("codes is not valid base64") from None
    if codes.size != n_resamples:
        raise ValueError(f"codes holds {codes.size} resamples, not {n_resamples}")
    out = low + codes.astype(float) * step
    out[codes == UNDEFINED] = np.nan
    return out


def pairing_section(*, scores: Iterable[Mapping], resamples: Mapping[tuple, np.ndarray],
                    designs: Mapping[tuple, Mapping | None], n_resamples: int, random_state: int,
                    probe_ids: Iterable[Any], fingerprint: str | None) -> dict | None:
    """The ``pairing`` section of the entries of ``scores`` that have ``resamples`` (keyed by
    their :data:`KEY_FIELDS`); None when none has."""
    entries = []
    for e in scores:
        key = tuple(e.get(k) for k in KEY_FIELDS)
        if key not in resamples or len(resamples[key]) != n_resamples:
            continue
        design = designs.get(key) or {}
        entries.append({"key": list(key), **encode_resamples(resamples[key]),
                        "strata": [int(design.get("strata", 0)), int(design.get("single", 0))]})
    if not entries:
        return None
    return {"format": FORMAT, "n_resamples": int(n_resamples), "random_state": int(random_state),
            "probe_fingerprint": fingerprint, "probe_ids": probe_ids_digest(probe_ids), "encoding": ENCODING,
            "entries": entries}


@dataclass(frozen=True)
class PairedEntry:
    """One decoded entry of a pairing section: its key, resamples and design."""

    key: tuple
    resamples: np.ndarray
    design: dict


def read_pairing(doc: Mapping) -> tuple[dict, list[PairedEntry]]:
    """(the section without its entries, the decoded entries) of a results document; ValueError
    (one line) when it has no section or a malformed one."""
    section = doc.get("pairing")
    if not isinstance(section, Mapping):
        raise ValueError("it has no pairing section (results scored before paired resamples were recorded, "
                         "or with fewer than 2 resamples): `t2ibench score RUN` writes one")
    if section.get("format") != FORMAT:
        raise ValueError(f"its pairing section is of format {section.get('format')!r}, not {FORMAT!r}")
    n = section.get("n_resamples")
    if not isinstance(n, int) or isinstance(n, bool) or not 2 <= n <= MAX_PAIRING_RESAMPLES:
        raise ValueError(f"its pairing n_resamples must be a whole number in [2, {MAX_PAIRING_RESAMPLES}]")
    seed = section.get("random_state")
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
        raise ValueError("its pairing random_state must be a whole number in [0, 2**63)")
    entries, seen = [], set()
    for i, item in enumerate(section.get("entries") or []):
        key = item.get("key") if isinstance(item, Mapping) else None
        if not (isinstance(key, list) and len(key) == len(KEY_FIELDS)
                and all(k is None or isinstance(k, str) for k in key)) or not key[0] or not key[1]:
            raise ValueError(f"pairing entry {i}: key must be [name, suite, subset, estimator, annotator]")
        if tuple(key) in seen:
            raise ValueError(f"pairing entry {i}: key {key} appears twice")
        seen.add(tuple(key))
        strata = item.get("strata")
        if not (isinstance(strata, list) and len(strata) == 2 and all(isinstance(s, int) and s >= 0 for s in strata)):
            raise ValueError(f"pairing entry {i}: strata must be [strata, strata with one probe]")
        try:
            values = decode_resamples(item, n)
        except ValueError as exc:
            raise ValueError(f"pairing entry {i}: {exc}") from None
        entries.append(PairedEntry(tuple(key), values, {"strata": strata[0], "single": strata[1]}))
    head = {k: v for k, v in section.items() if k != "entries"}
    return head, entries
