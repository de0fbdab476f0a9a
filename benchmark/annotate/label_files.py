"""Label files: what the annotate stage writes to ``RUN_DIR/labels/<name>.parquet`` and the
score stage reads.

A :class:`LabelFile` declares a file's columns (with their Arrow types) and the columns
that identify one row (its key): a re-run recomputes only the keys that are missing.
Several annotators may write one file (GEP's CLIP estimators and DALL-Eval's VQA questions
both write ``attributes``), each under its own ``annotator`` / ``estimator`` values. The
five files of the papers are declared here (:data:`BUILTIN_LABEL_FILES`, registered by the
registries' loader); a task folder declares its own in its ``task.py``'s ``REGISTRATIONS``, a
plugin registers its own with :func:`benchmark.registries.register_label_file`.

:class:`LabelStore` is one file during one annotate call: the rows kept (out of scope),
reused (same key) and new, written atomically (temporary file + rename).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from benchmark.contract.atomic import atomic_path
from benchmark.contract.run_folder import LABELS_DIR
from benchmark.contract.times import utc_compact
from benchmark.contract.written_hashes import record_written, sidecar_path, written_hash_problem
from benchmark.registries import LABEL_FILES, Registrations

__all__ = ["LABELS_DIR", "LabelFile", "LABEL_FILES", "BUILTIN_LABEL_FILES", "REGISTRATIONS", "LabelStore", "get_label_file",
           "read_labels", "key_part", "set_aside_label_file"]


@dataclass(frozen=True)
class LabelFile:
    """``RUN_DIR/labels/<name>.parquet``: ``columns`` maps each column to its Arrow type name
    (``string``, ``int64``, ``float64``, ``bool``, ``list<float32>``, ``list<string>``), in
    file order; ``key`` names the columns that identify a row."""

    name: str
    columns: Mapping[str, str]
    key: tuple[str, ...]
    description: str = ""
    #: columns that record how a label was made and no score reads (a VQA answer's text): left
    #: out of the labels results.json carries for paired comparisons (benchmark.contract.pairing)
    provenance: tuple[str, ...] = ()

    @property
    def relpath(self) -> str:
        return f"{LABELS_DIR}/{self.name}.parquet"

    def path(self, run_dir: str | Path) -> Path:
        return Path(run_dir) / self.relpath

    def schema(self):
        import pyarrow as pa

        scalar = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(),
                  "float32": pa.float32()}

        def arrow(t: str):
            return pa.list_(scalar[t[5:-1]]) if t.startswith("list<") else scalar[t]

        return pa.schema([(c, arrow(t)) for c, t in self.columns.items()])

    def row_key(self, row: Mapping[str, Any]) -> tuple:
        return tuple(key_part(row.get(c)) for c in self.key)


def get_label_file(name: str) -> LabelFile:
    if name not in LABEL_FILES:
        raise ValueError(f"unknown label file {name!r}; use one of {', '.join(LABEL_FILES)}")
    return LABEL_FILES[name]


#: the package's label files, in the order they are listed
BUILTIN_LABEL_FILES = (
    LabelFile(
        "gender", {"probe_id": "string", "person": "string", "question": "string", "answer": "string",
                   "label": "string", "score": "float64", "estimator": "string", "annotator": "string"},
        ("probe_id", "person", "question", "estimator", "annotator"),
        "perceived gender of each person in an image, by VQA: the label, the answer and, for "
        "closed-set answers, the label's probability; estimator says how (vqa closed-set / vqa generate)",
        provenance=("question", "answer", "score")),
    LabelFile(
        "attributes", {"probe_id": "string", "attribute": "string", "score": "float64", "label": "int64",
                       "estimator": "string", "annotator": "string", "question": "string", "answer": "string"},
        ("probe_id", "attribute", "estimator", "annotator", "question"),
        "attribute existence: the CLIP estimators C / CC / CLS, or a VQA yes / no question", provenance=("answer",)),
    LabelFile(
        "skin_tone", {"probe_id": "string", "face_found": "bool", "ita": "float64", "mst": "int64",
                      "n_faces": "int64", "annotator": "string"},
        ("probe_id", "annotator"),
        "ITA and Monk Skin Tone of the largest face", provenance=("ita", "n_faces")),
    LabelFile(
        "embeddings", {"encoder": "string", "kind": "string", "probe_id": "string", "text": "string",
                       "role": "string", "target": "string", "embedding": "list<float32>"},
        ("encoder", "kind", "probe_id", "text", "role", "target"),
        "CLIP image and text embeddings with their roles (target, attribute), per encoder"),
    LabelFile(
        "detections", {"probe_id": "string", "detector": "string", "n_queries": "int64",
                       "query_scores": "list<float32>", "query_labels": "list<string>",
                       "query_boxes": "list<float32>", "prob_classes": "list<string>", "query_probs": "list<float32>"},
        ("probe_id", "detector"),
        "object-detector queries of the scene images, with the class probabilities the rules ask about"),
)
REGISTRATIONS = Registrations(label_files=BUILTIN_LABEL_FILES)


def key_part(value: Any) -> str:
    """A key column's value as text (None / NaN -> "")."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def read_labels(run_dir: str | Path, name: str) -> pd.DataFrame:
    """A label file of a run folder as a DataFrame (``gender``, ``attributes``, ``skin_tone``,
    ``embeddings``, ``detections`` or a registered one)."""
    path = get_label_file(name).path(run_dir)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: run `t2ibench annotate {run_dir}` first")
    return pd.read_parquet(path)


def set_aside_label_file(path: Path) -> Path:
    """Move a damaged label file to ``<name>.parquet.corrupt-<time>`` (kept for inspection), so
    the annotate stage computes it again."""
    stamp = utc_compact()
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    path.rename(target)
    sidecar_path(path).unlink(missing_ok=True)  # the new file gets its own record
    return target


def _column_values(rows: list[dict], column: str, arrow_type: str) -> list:
    values = [r.get(column) for r in rows]
    if arrow_type == "list<float32>":
        return [None if v is None else np.asarray(v, dtype=np.float32) for v in values]
    if arrow_type.startswith("list<"):  # rows read back from parquet hold numpy arrays
        return [None if v is None else list(v) for v in values]
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    # NaN means "missing" except in a float score column, where it is a value
    values = [None if (isinstance(v, float) and math.isnan(v) and column != "score") else v for v in values]
    if arrow_type == "int64":
        values = [None if v is None else int(v) for v in values]
    return values


def write_label_rows(path: Path, rows: list[dict], spec: LabelFile) -> None:
    """All ``rows`` as ``spec``'s parquet file, atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = spec.schema()
    arrays = [pa.array(_column_values(rows, c, t), type=schema.field(c).type) for c, t in spec.columns.items()]
    with atomic_path(path) as tmp:
        pq.write_table(pa.Table.from_arrays(arrays, schema=schema), tmp)
    record_written(path)  # verify and the score stage compare with it


class LabelStore:
    """One label file during one annotate call: the rows to keep (out of scope), to reuse
    (same key) and the new ones; written in probe order."""

    def __init__(self, run_dir: Path, spec: LabelFile, in_scope: Callable[[dict], bool], force: bool,
                 probe_order: dict[str, int]):
        self.spec = spec
        self.path = spec.path(run_dir)
        self.kept: list[dict] = []
        self.reuse: dict[tuple, dict] = {}
        self.n_in_scope_before = 0
        self.expected: list[tuple] = []
        self._expected_set: set[tuple] = set()
        self.new: dict[tuple, dict] = {}
        self.force = force
        self.probe_order = probe_order
        self.existed = self.path.is_file()
        self.set_aside: Path | None = None
        edited = written_hash_problem(self.path) if self.existed else None
        if edited:  # not the file this stage wrote: never reused
            self.set_aside = set_aside_label_file(self.path)
            print(f"{spec.relpath} {edited}: moved aside to {self.set_aside.name}; its rows are computed again",
                  file=sys.stderr)
            self.existed = False
        if self.existed:
            try:
                df = pd.read_parquet(self.path)
            except Exception as exc:  # a damaged file (pyarrow raises several kinds): computed again
                self.set_aside = set_aside_label_file(self.path)
                print(f"{spec.relpath} cannot be read ({type(exc).__name__}): moved aside to "
                      f"{self.set_aside.name}; its rows are computed again", file=sys.stderr)
                self.existed = False
                df = pd.DataFrame(columns=list(spec.columns))
            if any(c not in df.columns for c in spec.columns):  # written by an older format: recompute it
                df = pd.DataFrame(columns=list(spec.columns))
            for row in df.to_dict("records"):
                if in_scope(row):
                    self.n_in_scope_before += 1
                    if not force:
                        self.reuse[spec.row_key(row)] = row
                else:
                    self.kept.append(row)

    def expect(self, row_key: tuple) -> bool:
        """Register an expected row; True when it still has to be computed."""
        if row_key not in self._expected_set:
            self._expected_set.add(row_key)
            self.expected.append(row_key)
        return row_key not in self.reuse and row_key not in self.new

    def add(self, rows: Iterable[dict]) -> None:
        for r in rows:
            self.new[self.spec.row_key(r)] = r

    @property
    def n_missing(self) -> int:
        return sum(1 for k in self.expected if k not in self.reuse and k not in self.new)

    @property
    def up_to_date(self) -> bool:
        """Nothing new, nothing to drop: the file on disk is already what this call would write."""
        return (self.existed and not self.force and not self.new and self.n_missing == 0
                and self.n_in_scope_before == len(self.expected))

    def rows(self) -> list[dict]:
        chosen = [self.new.get(k) or self.reuse.get(k) for k in self.expected]
        rows = self.kept + [r for r in chosen if r is not None]
        big = len(self.probe_order) + 1
        # probe order, then the order rows were expected in (stable); rows of no image first
        return sorted(rows, key=lambda r: self.probe_order.get(key_part(r.get("probe_id")), big)
                      if r.get("probe_id") else -1)

    def write(self) -> int:
        rows = self.rows()
        write_label_rows(self.path, rows, self.spec)
        return len(rows)
