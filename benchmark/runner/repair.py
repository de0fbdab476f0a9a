"""What a resumed generation (``t2ibench run`` / ``generate``) repairs before it scans the batches.

:func:`repair_run_folder` runs :func:`benchmark.contract.run_folder_check.inspect_run_folder` (every PNG
hashed) and, for each problem:

* a batch with a missing, damaged, swapped or outside image, an orphan PNG, a removed or
  unreadable metadata row, a ``metadata.jsonl`` that is not the file the runner wrote (its
  sha256 record) or a symlink out, or rows that no longer match the probe list (an edited
  gender) or run_config.json (an edited model_id, revision or settings): the whole batch
  directory is removed, so its probes are generated again (on CPU the images are
  byte-identical) under the same name;
* a PNG under ``images/`` outside any batch: removed;
* an edited, extended or unreadable ``manifest.parquet``: reported; generation rewrites it from
  ``metadata.jsonl`` when it finishes (it always does);
* an unreadable label file, one whose bytes are not those recorded when it was written, one
  without the columns its stage writes (two files swapped with their records) or one that is a
  symlink out of the run folder: moved aside to ``labels/<name>.parquet.corrupt-<time>``, so the
  annotate stage computes it again; a label file deleted with its sha256 record left: the record
  removed, so the annotate stage writes the file again.

:func:`drop_label_rows` then removes the label rows of every probe about to be generated, so
no label of an old image survives its regeneration. Each repair prints one line.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import pandas as pd

from benchmark.contract import run_folder as rf
from benchmark.annotate.label_files import LABEL_FILES, set_aside_label_file
from benchmark.contract.run_folder_check import (LABEL_KINDS, FolderCheck, Problem, comparable, inspect_run_folder,
                                                 label_files)
from benchmark.contract.written_hashes import record_written, sidecar_path, written_hash_problem

__all__ = ["RepairOutcome", "repair_run_folder", "drop_label_rows", "label_schema_problems", "record_mismatches"]

REPAIR_PREFIX = "repaired: "


@dataclass
class RepairOutcome:
    lines: list[str] = field(default_factory=list)       # one per repair, as printed
    removed_batches: list[str] = field(default_factory=list)
    regenerated: list[str] = field(default_factory=list)  # probe ids of the removed batches
    set_aside: list[str] = field(default_factory=list)     # label files moved aside (new names)


def _say(out: RepairOutcome, line: str, log: Callable[[str], None] | None) -> None:
    out.lines.append(line)
    (log or (lambda s: print(REPAIR_PREFIX + s, file=sys.stderr)))(line)


def _probe_mismatches(check_rows: Iterable[tuple[str, dict]], probes: pd.DataFrame) -> list[Problem]:
    """Metadata rows whose probe fields or index differ from the probe list (an edited row)."""
    index_of = {pid: i for i, pid in enumerate(probes["probe_id"])}
    records = probes.to_dict("records")
    out = []
    for batch, row in check_rows:
        i = index_of.get(row["probe_id"])
        if i is None:
            continue
        rel = f"{rf.IMAGES_DIR}/{batch}/{rf.METADATA_FILE}"
        if row.get("probe_index") != i:
            out.append(Problem("batch", rel, f"probe_index is {row.get('probe_index')!r}, the probe list says {i}",
                               row["probe_id"], batch))
            continue
        diffs = [c for c in probes.columns if comparable(row.get(c)) != comparable(records[i][c])]
        if diffs:
            c = diffs[0]
            out.append(Problem("batch", rel, f"{c} is {comparable(row.get(c))!r}, the probe list says "
                               f"{comparable(records[i][c])!r}", row["probe_id"], batch))
    return out


def _schema_mismatch(schema, spec) -> str | None:
    """How a label file's Arrow ``schema`` differs from what ``spec`` writes (None when it does not)."""
    import pyarrow as pa

    want = spec.schema()
    have = {f.name: f.type for f in schema}
    lacking = [c for c in want.names if c not in have]
    extra = [c for c in have if c not in want.names]
    if lacking or extra:
        what = f"lacks column {lacking[0]!r}" if lacking else f"has column {extra[0]!r}"
        return (f"{what}: its columns ({', '.join(have)}) are not those the annotate stage writes to "
                f"{spec.relpath} (a label file swapped or written by something else)")

    def plain(t):  # list types compare by their values, not by the name of the value field
        return ("list", plain(t.value_type)) if pa.types.is_list(t) or pa.types.is_large_list(t) else \
            ("string",) if pa.types.is_string(t) or pa.types.is_large_string(t) else (str(t),)

    for field in want:
        if plain(have[field.name]) != plain(field.type):
            return (f"column {field.name!r} is {have[field.name]}, the annotate stage writes {field.type} to "
                    f"{spec.relpath} (a label file swapped or written by something else)")
    return None


def label_schema_problems(run_dir: str | Path) -> list[Problem]:
    """``label-schema``: each readable ``labels/<name>.parquet`` of a registered label file whose
    columns or types are not those the annotate stage writes for that name."""
    import pyarrow.parquet as pq

    run_dir = Path(run_dir)
    out = []
    for path in label_files(run_dir):
        spec = LABEL_FILES.get(path.stem)
        if spec is None:
            continue  # no annotator of this version writes it: nothing reads it
        try:
            schema = pq.read_schema(path)
        except Exception:  # unreadable: a label-unreadable problem of the folder check
            continue
        why = _schema_mismatch(schema, spec)
        if why:
            out.append(Problem("label-schema", path.relative_to(run_dir).as_posix(), why))
    return out


def record_mismatches(run_dir: Path, check_rows: Iterable[tuple[str, dict]]) -> list[Problem]:
    """Metadata rows whose ``model_id`` / ``revision`` / ``settings`` are not those of
    ``run_config.json`` (edited in metadata.jsonl and the manifest alike); none when the run
    configuration is unusable (the resume check refuses that)."""
    try:
        config = rf.read_run_config(run_dir)
    except rf.RunFolderError:
        return []
    model = (config or {}).get("model")
    if not isinstance(model, dict) or not isinstance(config.get("settings"), dict):
        return []
    want = {"model_id": model.get("model_id"), "revision": model.get("revision"),
            "settings": rf.settings_json(config["settings"])}
    out = []
    for batch, row in check_rows:
        wrong = [k for k, v in want.items() if row.get(k) != v]
        if wrong:
            k = wrong[0]
            out.append(Problem("row-mismatch", f"{rf.IMAGES_DIR}/{batch}/{rf.METADATA_FILE}",
                               f"{k} is {comparable(row.get(k))!r}, {rf.CONFIG_FILE} says {want[k]!r}",
                               row["probe_id"], batch))
    return out


def repair_run_folder(run_dir: str | Path, probes: pd.DataFrame, *,
                      log: Callable[[str], None] | None = None) -> RepairOutcome:
    """Repair RUN_DIR before a resumed generation (see the module docstring); main process only.

    Raises ``RunFolderError`` (before changing anything) when the batches hold probes that are
    not in ``probes``: that folder belongs to another run.
    """
    from benchmark.contract.run_folder_check import scan_batch_dirs

    run_dir = Path(run_dir)
    out = RepairOutcome()
    scans = scan_batch_dirs(run_dir)
    known = set(probes["probe_id"])
    stray = [r["probe_id"] for s in scans for r in s.rows if r["probe_id"] not in known]
    if stray:
        raise rf.RunFolderError(f"{run_dir} holds images for probes not in this probe list (e.g. {stray[0]!r}); "
                                f"choose another --out folder")
    check: FolderCheck = inspect_run_folder(run_dir, verify_sha256=True, scans=scans)
    rows = [(s.name, r) for s in scans for r in s.rows]
    reported = {p.where for p in check.problems}
    edited = [p for p in check.problems if p.kind == "metadata-sha256"]  # named after a more precise cause
    problems = ([p for p in check.problems if p.kind != "metadata-sha256"] + _probe_mismatches(rows, probes)
                + record_mismatches(run_dir, rows) + edited
                + [p for p in label_schema_problems(run_dir) if p.where not in reported])
    first_of_batch: dict[str, Problem] = {}
    for p in problems:
        if p.batch and (p.where != rf.MANIFEST_FILE):  # a manifest problem is the manifest's, not the batch's
            first_of_batch.setdefault(p.batch, p)
    for scan in scans:
        p = first_of_batch.get(scan.name)
        if p is None:
            continue
        ids = [r["probe_id"] for r in scan.rows]
        if scan.path.is_symlink():
            scan.path.unlink()
        else:
            shutil.rmtree(scan.path)
        out.removed_batches.append(scan.name)
        out.regenerated += ids
        _say(out, f"{rf.IMAGES_DIR}/{scan.name} removed ({p.line()}); its probes ({len(ids)}) are generated again",
             log)
    for p in problems:
        if p.kind == "orphan-image" and p.batch is None:
            (run_dir / p.where).unlink(missing_ok=True)
            _say(out, f"{p.where} removed: no {rf.METADATA_FILE} lists it", log)
    manifest = [p for p in problems if p.where == rf.MANIFEST_FILE and not p.behind]
    if manifest:
        more = f" (and {len(manifest) - 1} more)" if len(manifest) > 1 else ""
        _say(out, f"{rf.MANIFEST_FILE} is rewritten from {rf.METADATA_FILE} ({manifest[0].line()}{more})", log)
    for p in problems:
        if p.kind == "label-missing":  # its record alone is left: the annotate stage writes the file again
            sidecar_path(run_dir / p.where).unlink(missing_ok=True)
            _say(out, f"{p.where} {p.message}: the annotate stage computes it again", log)
        elif p.kind in LABEL_KINDS or (p.kind == "file-outside" and p.where.startswith(f"{rf.LABELS_DIR}/")):
            target = set_aside_label_file(run_dir / p.where)
            out.set_aside.append(target.relative_to(run_dir).as_posix())
            _say(out, f"{p.where} {p.message}: moved aside to {target.name}; the annotate stage computes it again",
                 log)
    return out


def drop_label_rows(run_dir: str | Path, probe_ids: Iterable[str], *,
                    log: Callable[[str], None] | None = None) -> dict[str, int]:
    """Remove the rows of ``probe_ids`` from every readable label file (atomically); returns
    rows dropped per file. Label files key their rows by ``probe_id``: the annotate stage
    computes the dropped rows again from the regenerated images."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    run_dir = Path(run_dir)
    ids = sorted(set(probe_ids))
    dropped: dict[str, int] = {}
    if not ids:
        return dropped
    out = RepairOutcome()
    for path in label_files(run_dir):
        try:
            table = pq.read_table(path)
        except Exception:  # unreadable: set aside by repair_run_folder, or left for the annotate stage
            continue
        if "probe_id" not in table.column_names or written_hash_problem(path):
            continue  # an edited file is never rewritten (that would bless it): annotate sets it aside
        hit = pc.is_in(table["probe_id"], value_set=pa.array(ids, type=table.schema.field("probe_id").type))
        n = int(pc.sum(hit).as_py() or 0)
        if not n:
            continue
        with rf.atomic_path(path) as tmp:
            pq.write_table(table.filter(pc.invert(pc.fill_null(hit, False))), tmp)
        record_written(path)
        rel = path.relative_to(run_dir).as_posix()
        dropped[rel] = n
        n_probes = len(set(table.filter(pc.fill_null(hit, False))["probe_id"].to_pylist()))
        _say(out, f"{rel}: dropped {n} rows of the probes generated again ({n_probes}); the annotate stage "
             f"computes them from the new images", log)
    return dropped
