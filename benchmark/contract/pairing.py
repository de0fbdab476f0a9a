"""results.json's ``pairing`` section: what a paired comparison needs, without the run folder.

``t2ibench compare`` tests a difference between two audits with a paired randomization test
(:mod:`benchmark.scores.randomization`): it swaps the two runs' labels of random probes and scores
both runs again. That needs each probe's labels, so the score stage writes the label rows its
scores read, per label file, into this section; a comparison from results files alone rebuilds
each run (its probe rows from its probe set, its labels from here) and scores it exactly as it
scores a run folder: the same verdicts.

The section (``results["pairing"]``)::

    {"format": "probe-labels/1", "probe_fingerprint": "<the run's probe set fingerprint>",
     "probe_ids": {"n": 2268, "sha256": "<sha256 of the sorted probe ids scored>"},
     "ids": "<base64 of zlib of the sorted probe ids, one per line>",
     "withheld": [<index into ids of each image left out of every score>],
     "labels": {"gender": {"rows": 2268, "columns": ["probe", "person", ...],
                           "parquet": "<base64 of a zstd parquet file>"}, ...},
     "not_carried": {"detections": {"rows": 7185, "bytes": 8300000}},
     "encoding": "..."}

Each label file's rows are one parquet table (zstd) of the columns the scores read (a label
file's ``provenance`` columns, such as a VQA question's text, are left out), floats as float32,
the probe id replaced by ``probe``: its index into ``ids`` (ids of rows of no probe of the run,
such as a reference's images, are appended to ``ids`` after the run's own, ``n_extra`` of them;
-1 for a row of no image, such as a text embedding).
A label file whose rows take more than :data:`MAX_CARRIED_BYTES` (a full audit's CLIP embeddings
and DETR queries: megabytes) is listed in ``not_carried`` instead, and the scores resting on it
are compared from run folders only.
"""

from __future__ import annotations

import base64
import binascii
import io
import zlib
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from benchmark.contract.digest import sha256_hex

__all__ = ["FORMAT", "MAX_CARRIED_BYTES", "OLD_FORMATS", "PairingSection", "pairing_section", "probe_ids_digest",
           "read_pairing"]

FORMAT = "probe-labels/1"
#: formats of earlier versions (the paired resamples of each entry), which cannot be tested
OLD_FORMATS = ("paired-resamples/1",)
ENCODING = ("per label file, a zstd parquet table (base64) of the rows the scores read, floats as float32, the probe "
            "id as `probe`, its index into the sorted probe ids (zlib, base64, one per line)")
#: a label file's encoded rows larger than this are not carried (``not_carried``)
MAX_CARRIED_BYTES = 1_000_000
#: bounds a reader checks before decoding (base64 text, rows, uncompressed parquet)
MAX_SECTION_CHARS = 16_000_000
MAX_ROWS = 2_000_000
MAX_UNCOMPRESSED = 512_000_000
PROBE_COLUMN = "probe"


def probe_ids_digest(probe_ids: Iterable[Any]) -> dict:
    """``{"n", "sha256"}`` of a run's probe ids (sorted, one per line)."""
    ids = sorted({str(p) for p in probe_ids})
    return {"n": len(ids), "sha256": sha256_hex("\n".join(ids).encode("utf-8"))}


def _table_bytes(frame: pd.DataFrame) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = frame.copy()
    for col in out.columns:
        if out[col].dtype.kind == "f":
            out[col] = out[col].astype(np.float32)
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(out, preserve_index=False), sink, compression="zstd", compression_level=9)
    return sink.getvalue()


def _encoded_labels(frame: pd.DataFrame, index: dict[str, int], extra: list[str]) -> dict:
    probes = []
    for value in frame["probe_id"]:
        if value is None or (isinstance(value, float) and value != value):
            probes.append(-1)  # a row of no image (a text embedding)
            continue
        p = str(value)
        if p not in index:
            index[p] = len(index)
            extra.append(p)
        probes.append(index[p])
    table = frame.drop(columns=["probe_id"]).assign(**{PROBE_COLUMN: np.asarray(probes, dtype=np.int32)})
    table = table[[PROBE_COLUMN] + [c for c in table.columns if c != PROBE_COLUMN]]
    data = _table_bytes(table)
    return {"rows": int(len(frame)), "columns": list(table.columns), "parquet": base64.b64encode(data).decode("ascii")}


def pairing_section(*, probe_ids: Iterable[Any], withheld: Iterable[Any], labels: Mapping[str, pd.DataFrame | None],
                    fingerprint: str | None) -> dict | None:
    """The ``pairing`` section of a run: its probe ids, the probes left out of every score
    (``withheld``), and ``labels`` (label file name -> the rows its scores read, with a
    ``probe_id`` column; None for a file the run lacks). None when no label file has rows."""
    ids = sorted({str(p) for p in probe_ids})
    index = {p: i for i, p in enumerate(ids)}
    extra: list[str] = []
    carried, not_carried = {}, {}
    for kind, frame in labels.items():
        if frame is None or not len(frame):
            continue
        encoded = _encoded_labels(frame, index, extra)
        size = len(encoded["parquet"])
        if size > MAX_CARRIED_BYTES:
            not_carried[kind] = {"rows": int(len(frame)), "bytes": size}
        else:
            carried[kind] = encoded
    if not carried and not not_carried:
        return None
    text = "\n".join(ids + extra).encode("utf-8")
    wanted = {str(p) for p in withheld}
    return {"format": FORMAT, "probe_fingerprint": fingerprint, "probe_ids": probe_ids_digest(ids),
            "ids": base64.b64encode(zlib.compress(text, 9)).decode("ascii"), "n_extra": len(extra),
            "withheld": [i for i, p in enumerate(ids) if p in wanted], "labels": carried,
            "not_carried": not_carried, "encoding": ENCODING}


@dataclass(frozen=True)
class PairingSection:
    """A decoded pairing section: the run's sorted probe ids, those left out of every score, each
    carried label file's rows (with ``probe_id``) and the label files not carried (name -> why)."""

    probe_ids: list[str]
    withheld: list[str]
    labels: dict[str, pd.DataFrame]
    not_carried: dict[str, str]
    fingerprint: str | None


def _decode_ids(section: Mapping) -> list[str]:
    raw = section.get("ids")
    if not isinstance(raw, str) or len(raw) > MAX_SECTION_CHARS:
        raise ValueError("its pairing ids must be base64 text")
    try:
        d = zlib.decompressobj()
        text = d.decompress(base64.b64decode(raw, validate=True), 64 * MAX_SECTION_CHARS)
        if d.unconsumed_tail:
            raise ValueError("too large")
        return text.decode("utf-8").split("\n") if text else []
    except (binascii.Error, zlib.error, ValueError, UnicodeDecodeError):
        raise ValueError("its pairing ids are not zlib-compressed base64 text") from None


def _decode_labels(kind: str, item: Any, ids: list[str]) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(item, Mapping) or not isinstance(item.get("parquet"), str) \
            or not isinstance(item.get("rows"), int) or not 0 <= item["rows"] <= MAX_ROWS:
        raise ValueError(f"its pairing labels {kind!r} must have rows and parquet")
    try:
        buffer = pa.BufferReader(base64.b64decode(item["parquet"], validate=True))
        meta = pq.ParquetFile(buffer).metadata
        size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if meta.num_rows != item["rows"] or size > MAX_UNCOMPRESSED:
            raise ValueError("rows")
        frame = pq.read_table(buffer).to_pandas()
    except (binascii.Error, ValueError, OSError, pa.ArrowException):
        raise ValueError(f"its pairing labels {kind!r} are not the base64 of a parquet table of {item['rows']} "
                         "rows") from None
    probe = frame.pop(PROBE_COLUMN) if PROBE_COLUMN in frame.columns else None
    if probe is None or probe.dtype.kind not in "iu" or len(probe) and not (-1 <= probe.min() and
                                                                           probe.max() < len(ids)):
        raise ValueError(f"its pairing labels {kind!r} must name each row's probe by its index into ids")
    named = np.asarray(ids + [None], dtype=object)  # -1: a row of no image
    frame.insert(0, "probe_id", named[probe.to_numpy()] if len(probe) else [])
    return frame


def read_pairing(doc: Mapping) -> PairingSection:
    """The decoded pairing section of a results document; ValueError (one line) when it has none,
    one of an older format, or a malformed one."""
    section = doc.get("pairing")
    if not isinstance(section, Mapping):
        raise ValueError("it has no pairing section (results scored before per-probe labels were recorded): "
                         "`t2ibench score RUN` writes one")
    if section.get("format") in OLD_FORMATS:
        raise ValueError(f"its pairing section is of the older format {section.get('format')!r} (paired resamples, "
                         "scored by an earlier version), which a randomization test cannot use: `t2ibench score RUN` "
                         "writes the per-probe labels")
    if section.get("format") != FORMAT:
        raise ValueError(f"its pairing section is of format {section.get('format')!r}, not {FORMAT!r}")
    ids = _decode_ids(section)
    n_extra = section.get("n_extra")
    if not isinstance(n_extra, int) or isinstance(n_extra, bool) or not 0 <= n_extra <= len(ids):
        raise ValueError("its pairing n_extra must count the ids of rows of no probe of the run")
    own = ids[:len(ids) - n_extra]
    if own != sorted(set(own)) or probe_ids_digest(own) != section.get("probe_ids"):
        raise ValueError("its pairing ids are not the sorted probe ids its probe_ids digest names")
    withheld = section.get("withheld")
    if not isinstance(withheld, list) or not all(isinstance(i, int) and 0 <= i < len(own) for i in withheld):
        raise ValueError("its pairing withheld must list indices into its probe ids")
    labels = section.get("labels")
    not_carried = section.get("not_carried") or {}
    if not isinstance(labels, Mapping) or not isinstance(not_carried, Mapping):
        raise ValueError("its pairing labels and not_carried must be objects")
    frames = {str(kind): _decode_labels(str(kind), item, ids) for kind, item in labels.items()}
    why = {}
    for kind, item in not_carried.items():
        size = item.get("bytes") if isinstance(item, Mapping) else None
        why[str(kind)] = (f"its {size / 1e6:.1f} MB of labels are more than a results file carries"
                          if isinstance(size, (int, float)) else "its labels are not carried")
    return PairingSection(own, [own[i] for i in withheld], frames, why, section.get("probe_fingerprint"))
