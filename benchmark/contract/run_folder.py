"""The run folder (RUN_DIR): layout, atomic batch writes, resume scan, manifest and card.

Layout written by generation::

    RUN_DIR/
      run_config.json          what was asked (model, settings, suites, limit...), written first
      README.md                dataset card; its YAML makes RUN_DIR a Hub-layout image dataset
      images/b000000/          one directory per finished batch, named by the global index
        000000.png ...           of its first probe; PNG files plus
        metadata.jsonl           one row per image (probe fields, sha256, model, settings...)
        metadata.sha256          the sha256 of metadata.jsonl as it was written
      manifest.parquet         all metadata rows in global probe order (derived, rewritable)
      .partial/                batches being written; renamed into images/ when complete

Other stages add ``embeddings/``, ``labels/``, ``results.json``, ``report/``; the card's
image config reads only ``images/**``.

A batch is written into ``.partial/<name>.<rank>.<pid>/`` (files fsynced) and renamed to
``images/<name>/`` in one ``os.rename``, which is atomic on POSIX: a killed process
leaves either the whole batch or none of it under ``images/`` (and maybe a stray
``.partial`` entry, removed on the next run). ``metadata.jsonl`` files are the source of
truth; ``manifest.parquet`` is rebuilt from them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from benchmark.contract.atomic import atomic_path, fsync_dir, write_bytes_atomic  # noqa: F401 (re-exported)
from benchmark.contract.digest import file_sha256, sha256_hex
from benchmark.contract.values import plain_value

CONFIG_FILE = "run_config.json"
MANIFEST_FILE = "manifest.parquet"
IMAGES_DIR = "images"
PARTIAL_DIR = ".partial"
METADATA_FILE = "metadata.jsonl"
# the sha256 of a batch's metadata.jsonl as the runner wrote it, beside it in the batch
# (benchmark.contract.written_hashes): a flag or field edited afterwards no longer matches.
# Not "metadata.jsonl.sha256": `datasets` counts every suffix of a data file, and a second
# ".jsonl" per batch would make it read the folder as JSON instead of images.
METADATA_RECORD = "metadata.sha256"
CONFIG_FORMAT = 1
# run_config.json keys compared on resume only when both runs record them
OPTIONAL_IDENTITY_KEYS = ("probes",)
# What the later stages add (see the module docstring).
LABELS_DIR = "labels"            # annotate: labels/<name>.parquet (benchmark.annotate.label_files)
EMBEDDINGS_DIR = "embeddings"    # annotate: embeddings/<encoder-slug>/ (benchmark.annotate.embedding_cache)
TIMINGS_FILE = "timings.json"    # seconds per stage, merged by every stage
SCORES_DIR = "scores"            # score: the detail tables
REPORT_DIR = "report"            # report: report.html, report.md, plots; agreement.md / .json
HUMAN_LABELS_DIR = "human_labels"  # people's answers (benchmark.human) and the calibration sample

# Columns the runner adds to each probe row in metadata.jsonl (probe fields come first).
RUNNER_COLUMNS = ("file_name", "probe_index", "sha256", "model_id", "revision", "settings", "nsfw", "rank",
                  "batch_seconds")
# Manifest-only columns (where the row's file lies).
MANIFEST_EXTRA_COLUMNS = ("batch", "image_path")
# Columns that depend on how the work was split (ranks, batch size) or on timing, not on
# the images: drop them to compare two runs.
VOLATILE_COLUMNS = ("rank", "batch_seconds", "batch", "image_path")

_BATCH_RE = re.compile(r"^b\d+$")


class RunFolderError(ValueError):
    """A run folder that cannot be used as asked; the message is one line."""


# --------------------------------------------------------------------------- paths


def images_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / IMAGES_DIR


def partial_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / PARTIAL_DIR


def batch_name(first_index: int, n_total: int) -> str:
    """``b000123``: the global index of the batch's first probe, zero-padded to a width fixed by ``n_total``."""
    width = max(6, len(str(max(n_total - 1, 0))))
    return f"b{first_index:0{width}d}"


def image_file_name(probe_index: int, n_total: int) -> str:
    width = max(6, len(str(max(n_total - 1, 0))))
    return f"{probe_index:0{width}d}.png"


# --------------------------------------------------------------------------- small atomic writes


def json_bytes(obj: Any) -> bytes:
    """The bytes the run folder's JSON files hold (indented, numpy numbers as Python's)."""
    return (json.dumps(obj, indent=2, sort_keys=False, default=_json_default) + "\n").encode()


def write_json_atomic(path: str | Path, obj: Any) -> Path:
    return write_bytes_atomic(path, json_bytes(obj))


# --------------------------------------------------------------------------- JSON values


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, Path):
        return str(value)
    return str(value)  # torch.dtype and other objects: their readable name


def settings_json(settings: dict) -> str:
    """Settings as a canonical JSON string (sorted keys), the form stored per image."""
    return json.dumps(plain_value(dict(settings)), sort_keys=True, default=_json_default)


# --------------------------------------------------------------------------- run_config.json


def read_run_config(run_dir: str | Path) -> dict | None:
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise RunFolderError(f"{path} is not valid JSON ({exc}); delete it or choose another --out") from None
    if not isinstance(config, dict) or not isinstance(config.get("model", {}), dict):
        raise RunFolderError(f"{path} is not a run configuration (a JSON object with a model entry); delete it or "
                             "choose another --out")
    return config


def check_is_run_folder(run_dir: str | Path) -> None:
    """Refuse a folder that exists, holds files and has no run_config.json (not a run folder).

    Hidden entries (temp files, ``.partial``) do not count: run_config.json is renamed into
    place before anything visible is written, so another process of the same run never
    sees a half-made folder as foreign.
    """
    run_dir = Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise RunFolderError(f"{run_dir} is a file, not a run folder; choose another --out folder")
    if (run_dir.is_dir() and not (run_dir / CONFIG_FILE).is_file()
            and any(not p.name.startswith(".") for p in run_dir.iterdir())):
        raise RunFolderError(f"{run_dir} is not empty and has no {CONFIG_FILE}: it is not a run folder; "
                             f"choose another --out folder")


def config_differences(existing: dict, new: dict, keys: Iterable[str]) -> list[str]:
    """Readable ``key: old -> new`` for each of ``keys`` whose value differs (nested dicts compared per key)."""
    diffs = []
    for key in keys:
        old, cur = existing.get(key), new.get(key)
        if isinstance(old, dict) and isinstance(cur, dict):
            for sub in sorted(set(old) | set(cur)):
                if old.get(sub) != cur.get(sub):
                    diffs.append(f"{key}.{sub} was {old.get(sub)!r}, now {cur.get(sub)!r}")
        elif old != cur:
            diffs.append(f"{key} was {old!r}, now {cur!r}")
    return diffs


def check_run_config(run_dir: str | Path, new: dict, keys: Sequence[str],
                     model_keys: Sequence[str] | None = None) -> None:
    """Raise a one-line ``RunFolderError`` when RUN_DIR's run_config.json differs from ``new`` on ``keys``.

    ``model_keys`` restricts the comparison of the ``model`` entry to those sub-keys. A key that
    one side does not record (``probes`` of a folder written by ``generate`` from a plain probe
    table) is not compared: the probe rows themselves are (``probes_sha256``).
    """
    existing = read_run_config(run_dir)
    if existing is None:
        return
    keys = [k for k in keys if k not in OPTIONAL_IDENTITY_KEYS or (k in existing and k in new)]
    # Compare through JSON so tuples/lists and numpy scalars compare as they are stored.
    new = json.loads(json.dumps(new, default=_json_default))
    if model_keys is not None:
        existing = {**existing, "model": {k: (existing.get("model") or {}).get(k) for k in model_keys}}
        new = {**new, "model": {k: (new.get("model") or {}).get(k) for k in model_keys}}
    diffs = config_differences(existing, new, keys)
    if diffs:
        more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
        raise RunFolderError(
            f"{run_dir} holds a run made with other generation arguments: {diffs[0]}{more}; "
            f"rerun with the same arguments to resume, or choose another --out folder")


# --------------------------------------------------------------------------- resume


def clean_partial(run_dir: str | Path) -> list[Path]:
    """Delete stray half-written batches left by a killed run; returns what was removed."""
    root = partial_dir(run_dir)
    removed = []
    if root.is_dir():
        for entry in sorted(root.iterdir()):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry)
    return removed


_ROW_KEYS = ("probe_id", "file_name")


def read_batch_rows(batch_dir: Path) -> list[dict]:
    """The rows of a batch's metadata.jsonl; a line that is not a JSON object with a probe id
    and a file name (a file truncated mid-line) is a RunFolderError naming the file and line."""
    meta = batch_dir / METADATA_FILE
    rows = []
    with open(meta, encoding="utf-8", errors="strict") as fh:
        try:
            lines = list(fh)
        except UnicodeDecodeError as exc:
            raise RunFolderError(f"{meta} is not UTF-8 text ({exc.reason}); remove {batch_dir} to regenerate "
                                 "that batch") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            what = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            raise RunFolderError(f"{meta} line {number} is not valid JSON ({what}); remove {batch_dir} to "
                                 "regenerate that batch") from None
        if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in _ROW_KEYS):
            raise RunFolderError(f"{meta} line {number} is not a metadata row (probe_id, file_name); remove "
                                 f"{batch_dir} to regenerate that batch")
        rows.append(row)
    return rows


def scan_batches(run_dir: str | Path, *, check_files: bool = True, verify_sha256: bool = False) -> list[dict]:
    """Every metadata row of every finished batch (with ``batch`` and ``image_path`` added).

    Raises ``RunFolderError`` on something a finished batch cannot be: a batch directory
    without metadata, a row whose PNG is missing (or, with ``verify_sha256``, whose
    bytes changed), or a probe present in two batches.
    """
    root = images_dir(run_dir)
    rows: list[dict] = []
    seen: dict[str, str] = {}
    if not root.is_dir():
        return rows
    for batch_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if not _BATCH_RE.match(batch_dir.name):
            continue
        if not (batch_dir / METADATA_FILE).is_file():
            raise RunFolderError(f"{batch_dir} has no {METADATA_FILE}: it was not written by the runner; remove it")
        for row in read_batch_rows(batch_dir):
            pid = row["probe_id"]
            if pid in seen:
                raise RunFolderError(f"probe {pid!r} is in two batches ({seen[pid]} and {batch_dir.name}); "
                                     f"remove one of them")
            seen[pid] = batch_dir.name
            path = batch_dir / row["file_name"]
            if check_files and not path.is_file():
                raise RunFolderError(f"{path} is listed in {batch_dir.name}/{METADATA_FILE} but missing; "
                                     f"remove {batch_dir} to regenerate that batch")
            if verify_sha256 and file_sha256(path) != row["sha256"]:
                raise RunFolderError(f"{path} does not match its sha256 in {METADATA_FILE}; "
                                     f"remove {batch_dir} to regenerate that batch")
            row["batch"] = batch_dir.name
            row["image_path"] = f"{IMAGES_DIR}/{batch_dir.name}/{row['file_name']}"
            rows.append(row)
    return rows


# --------------------------------------------------------------------------- atomic batch


def write_batch(run_dir: str | Path, name: str, files: Sequence[tuple[str, bytes]], rows: Sequence[dict],
                *, rank: int = 0) -> Path:
    """Write PNG ``files`` (name, bytes) and their metadata ``rows`` as ``images/<name>/`` atomically."""
    run_dir = Path(run_dir)
    final = images_dir(run_dir) / name
    if final.exists():
        raise RunFolderError(f"{final} already exists; a probe would be generated twice")
    tmp = partial_dir(run_dir) / f"{name}.r{rank}.{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        for file_name, data in files:
            with open(tmp / file_name, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        lines = "".join(json.dumps(plain_value(r), ensure_ascii=False, default=_json_default) + "\n" for r in rows)
        data = lines.encode("utf-8")
        # the rows, then the record of their bytes (verify compares: an nsfw flag or a model_id
        # edited in metadata.jsonl and the manifest alike no longer matches it)
        for file_name, content in ((METADATA_FILE, data),
                                   (METADATA_RECORD, (sha256_hex(data) + "\n").encode("ascii"))):
            with open(tmp / file_name, "wb") as fh:
                fh.write(content)
                fh.flush()
                os.fsync(fh.fileno())
        fsync_dir(tmp)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.rename(tmp, final)  # atomic: the batch appears whole or not at all
        fsync_dir(final.parent)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


# --------------------------------------------------------------------------- manifest


def manifest_frame(rows: Sequence[dict], columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Rows as a DataFrame sorted by ``probe_index``, columns in ``columns`` order (then any others)."""
    df = pd.DataFrame(list(rows))
    if columns is not None:
        for c in columns:
            if c not in df.columns:
                df[c] = None
        df = df[list(columns) + [c for c in df.columns if c not in columns]]
    if len(df):
        df = df.sort_values("probe_index", kind="stable").reset_index(drop=True)
    return df


def write_manifest(run_dir: str | Path, rows: Sequence[dict], columns: Sequence[str] | None = None) -> Path:
    """``manifest.parquet``: every finished row in global probe order (written atomically)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = manifest_frame(rows, columns)
    path = Path(run_dir) / MANIFEST_FILE
    table = pa.Table.from_pylist([{k: plain_value(v) for k, v in r.items()} for r in df.to_dict("records")])
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return path


def read_manifest(run_dir: str | Path) -> pd.DataFrame:
    return pd.read_parquet(Path(run_dir) / MANIFEST_FILE)


# --------------------------------------------------------------------------- card


def image_features_yaml(probe_rows: Sequence[dict], probe_columns: Sequence[str]) -> list[dict]:
    """The card's ``features:`` list for the image config.

    Declared explicitly because ``datasets`` infers metadata types from the first rows
    of one metadata.jsonl, and a field that is empty there (a suite without it) would be
    typed ``null`` and fail on the next batch.
    """
    import datasets
    import pyarrow as pa

    fields = [{c: plain_value(r.get(c)) for c in probe_columns} for r in probe_rows]
    schema = pa.Table.from_pylist(fields).schema if fields else pa.schema([(c, pa.string()) for c in probe_columns])
    probe_features = datasets.Features.from_arrow_schema(schema)
    feats = datasets.Features({"image": datasets.Image()})
    feats["probe_index"] = datasets.Value("int64")
    for c in probe_columns:
        f = probe_features[c]
        if isinstance(f, datasets.Value) and f.dtype == "null":
            f = datasets.Value("string")
        if isinstance(f, datasets.List) and isinstance(f.feature, datasets.Value) and f.feature.dtype == "null":
            f = datasets.List(datasets.Value("string"))
        feats[c] = f
    feats["sha256"] = datasets.Value("string")
    feats["model_id"] = datasets.Value("string")
    feats["revision"] = datasets.Value("string")
    feats["settings"] = datasets.Value("string")
    feats["nsfw"] = datasets.Value("bool")
    feats["rank"] = datasets.Value("int64")
    feats["batch_seconds"] = datasets.Value("float64")
    return feats._to_yaml_list()
