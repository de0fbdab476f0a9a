"""Annotation stage: the images of a run folder -> label files (and cached embeddings).

``annotate_run(run_dir)`` reads ``RUN_DIR/run_config.json`` and ``RUN_DIR/manifest.parquet``
(written by generation) and writes, each atomically (temporary file + rename):

* ``labels/gender.parquet``      perceived gender by VQA (dalleval_bias, every PST suite);
* ``labels/attributes.parquet``  attribute existence: GEP suites by CLIP (C, CC, CLS),
  dalleval_bias by VQA ("Is the person wearing {a}?");
* ``labels/skin_tone.parquet``   ITA and Monk Skin Tone of the largest face (dalleval_bias);
* ``labels/embeddings.parquet``  MCAS image and text embeddings with their roles, per encoder;
* ``labels/detections.parquet``  object-detector queries of the PaintSkills images (every query's
  top class, probability and box, and the probabilities of the probe's target classes);
* ``embeddings/<encoder-slug>/images.npy`` + ``ids.json`` (+ ``meta.json``): the image
  embedding cache, shared by every pass and every re-run (only missing images are embedded);
* ``timings.json``               ``annotate/<name>`` entries merged into what is there.

Rows are reused by key: re-running with the same annotators finds every expected row in the
files and does nothing (no model is loaded); new images (a resumed generation) or another
annotator get only the missing rows; ``force=True`` recomputes the rows in scope. Rows of
suites outside ``suites=`` are kept as they are. Images with ``nsfw == True`` are skipped
and counted. See ``docs/annotate.md``.
"""

from __future__ import annotations

import gc
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from benchmark.annotate.clip_labels import GEP_SUITES
from benchmark.annotate.mcas_embeddings import MCAS_SUITES
from benchmark.annotate.vqa_labels import ATTRIBUTE_VQA_SUITES, GENDER_SUITES
from benchmark.atomic import atomic_path
from benchmark import run_folder as rf
from benchmark.runner.progress import progress_bar

__all__ = [
    "AnnotationSummary",
    "DEFAULT_ENCODER",
    "SEED004_ENCODERS",
    "DEFAULT_VQA",
    "LABEL_FILES",
    "annotate_run",
    "default_annotators",
    "read_labels",
]

# benchmark.models.defaults and benchmark.paintskills.detect import no torch, so choosing
# annotators stays cheap.
from benchmark.models.defaults import DEFAULT_ENCODER, DEFAULT_VQA, SEED004_ENCODERS  # noqa: E402
from benchmark.models.defaults import DEFAULT_DETECTOR, TINY_DETECTOR  # noqa: E402
from benchmark.probes.paintskills import SUITE_OF as PAINTSKILLS_SUITE_OF  # noqa: E402

TINY_ENCODER = "builtin:tiny-clip"
TINY_VQA = "builtin:tiny-vqa"
DEFAULT_SKIN_TONE = "haar"
DEFAULT_BATCH_SIZE = 32
TEXT_BATCH_SIZE = 256
TIMINGS_FILE = "timings.json"
LABELS_DIR = "labels"

SKIN_TONE_SUITES = ("dalleval_bias",)
PAINTSKILLS_SUITES = tuple(PAINTSKILLS_SUITE_OF.values())
ANNOTATED_SUITES = tuple(dict.fromkeys(GEP_SUITES + ATTRIBUTE_VQA_SUITES + GENDER_SUITES + SKIN_TONE_SUITES
                                       + MCAS_SUITES + PAINTSKILLS_SUITES))


# --------------------------------------------------------------------------- label files


@dataclass(frozen=True)
class _FileSpec:
    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    suites: tuple[str, ...]

    @property
    def relpath(self) -> str:
        return f"{LABELS_DIR}/{self.name}.parquet"

    def schema(self):
        import pyarrow as pa

        types = {
            "probe_id": pa.string(), "person": pa.string(), "question": pa.string(), "answer": pa.string(),
            "label": pa.string() if self.name == "gender" else pa.int64(), "annotator": pa.string(),
            "attribute": pa.string(), "score": pa.float64(), "estimator": pa.string(),
            "face_found": pa.bool_(), "ita": pa.float64(), "mst": pa.int64(), "n_faces": pa.int64(),
            "encoder": pa.string(), "kind": pa.string(), "text": pa.string(), "role": pa.string(),
            "target": pa.string(), "embedding": pa.list_(pa.float32()),
            "detector": pa.string(), "n_queries": pa.int64(), "query_scores": pa.list_(pa.float32()),
            "query_labels": pa.list_(pa.string()), "query_boxes": pa.list_(pa.float32()),
            "prob_classes": pa.list_(pa.string()), "query_probs": pa.list_(pa.float32()),
        }
        return pa.schema([(c, types[c]) for c in self.columns])


LABEL_FILES: dict[str, _FileSpec] = {
    "gender": _FileSpec("gender", ("probe_id", "person", "question", "answer", "label", "annotator"),
                        ("probe_id", "person", "question", "annotator"), GENDER_SUITES),
    "attributes": _FileSpec("attributes", ("probe_id", "attribute", "score", "label", "estimator", "annotator",
                                           "question", "answer"),
                            ("probe_id", "attribute", "estimator", "annotator", "question"),
                            GEP_SUITES + ATTRIBUTE_VQA_SUITES),
    "skin_tone": _FileSpec("skin_tone", ("probe_id", "face_found", "ita", "mst", "n_faces", "annotator"),
                           ("probe_id", "annotator"), SKIN_TONE_SUITES),
    "embeddings": _FileSpec("embeddings", ("encoder", "kind", "probe_id", "text", "role", "target", "embedding"),
                            ("encoder", "kind", "probe_id", "text", "role", "target"), MCAS_SUITES),
    "detections": _FileSpec("detections", ("probe_id", "detector", "n_queries", "query_scores", "query_labels",
                                           "query_boxes", "prob_classes", "query_probs"),
                            ("probe_id", "detector"), PAINTSKILLS_SUITES),
}
_LIST_COLUMNS = ("query_scores", "query_labels", "query_boxes", "prob_classes", "query_probs")


def _key_part(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _write_parquet_atomic(path: Path, rows: list[dict], spec: _FileSpec) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = spec.schema()
    cols = {}
    for c in spec.columns:
        vals = [r.get(c) for r in rows]
        if c == "embedding":
            vals = [None if v is None else np.asarray(v, dtype=np.float32) for v in vals]
        elif c in _LIST_COLUMNS:  # rows read back from parquet hold numpy arrays
            vals = [None if v is None else list(v) for v in vals]
        else:
            vals = [v.item() if isinstance(v, np.generic) else v for v in vals]
            vals = [None if (isinstance(v, float) and math.isnan(v) and c != "score") else v for v in vals]
            if pa.types.is_integer(schema.field(c).type):
                vals = [None if v is None else int(v) for v in vals]
        cols[c] = pa.array(vals, type=schema.field(c).type)
    table = pa.Table.from_arrays([cols[c] for c in spec.columns], schema=schema)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)


class _LabelFile:
    """One label file: the rows to keep (out of scope), to reuse (same key), and new ones."""

    def __init__(self, run_dir: Path, spec: _FileSpec, in_scope: Callable[[dict], bool], force: bool,
                 probe_order: dict[str, int]):
        self.spec = spec
        self.path = run_dir / spec.relpath
        self.kept: list[dict] = []
        self.reuse: dict[tuple, dict] = {}
        self.n_in_scope_before = 0
        self.expected: list[tuple] = []
        self._expected_set: set[tuple] = set()
        self.new: dict[tuple, dict] = {}
        self.force = force
        self.probe_order = probe_order
        self.existed = self.path.is_file()
        if self.existed:
            df = pd.read_parquet(self.path)
            missing = [c for c in spec.columns if c not in df.columns]
            if missing:  # written by an older format: recompute it
                df = pd.DataFrame(columns=list(spec.columns))
            for row in df.to_dict("records"):
                if in_scope(row):
                    self.n_in_scope_before += 1
                    if not force:
                        self.reuse[self.key(row)] = row
                else:
                    self.kept.append(row)

    def key(self, row: dict) -> tuple:
        return tuple(_key_part(row.get(c)) for c in self.spec.key)

    def expect(self, row_key: tuple) -> bool:
        """Register an expected row; True when it still has to be computed."""
        if row_key not in self._expected_set:
            self._expected_set.add(row_key)
            self.expected.append(row_key)
        return row_key not in self.reuse and row_key not in self.new

    def add(self, rows: Iterable[dict]) -> None:
        for r in rows:
            self.new[self.key(r)] = r

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
        # probe order, then the order rows were expected in (stable)
        return sorted(rows, key=lambda r: self.probe_order.get(_key_part(r.get("probe_id")), big)
                      if r.get("probe_id") else -1)

    def write(self) -> int:
        rows = self.rows()
        _write_parquet_atomic(self.path, rows, self.spec)
        return len(rows)


# --------------------------------------------------------------------------- defaults


def _is_builtin_run(run_config: dict | None) -> bool:
    model = (run_config or {}).get("model") or {}
    return bool(model.get("builtin")) or any(str(model.get(k) or "").startswith("builtin:")
                                             for k in ("spec", "model_id"))


def default_annotators(run_config: dict | None) -> dict:
    """The annotators a run gets when none are named.

    A run of a built-in tiny text-to-image model (``builtin:`` spec) gets the built-in tiny
    annotators (``builtin:tiny-clip`` for GEP and MCAS, ``builtin:tiny-vqa``), so the whole
    audit runs offline; any other run gets the papers' models: CLIP ViT-L/14 (OpenAI) for GEP
    (seed 000), the six OpenAI CLIPs of seed 004 for MCAS, BLIP-2 OPT-2.7b for VQA (seed 001), the
    COCO DETR ResNet-50 for PaintSkills (``builtin:tiny-detr`` for built-in runs). Skin tone uses
    OpenCV's Haar face detector either way.
    """
    if _is_builtin_run(run_config):
        return {"encoder": TINY_ENCODER, "mcas_encoders": (TINY_ENCODER,), "vqa": TINY_VQA,
                "skin_tone": DEFAULT_SKIN_TONE, "detector": TINY_DETECTOR}
    return {"encoder": DEFAULT_ENCODER, "mcas_encoders": SEED004_ENCODERS, "vqa": DEFAULT_VQA,
            "skin_tone": DEFAULT_SKIN_TONE, "detector": DEFAULT_DETECTOR}


def _disabled(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.strip().lower() in ("", "none", "off"))


def _model_name(model: Any) -> str:
    return model if isinstance(model, str) else str(getattr(model, "name", None) or repr(model))


# --------------------------------------------------------------------------- summary


@dataclass
class AnnotationSummary:
    """What one call of :func:`annotate_run` did."""

    run_dir: Path
    files_written: list[str] = field(default_factory=list)   # label files (re)written by this call
    files_up_to_date: list[str] = field(default_factory=list)  # complete for these annotators: not touched
    rows: dict[str, int] = field(default_factory=dict)       # rows per label file after this call
    new_rows: dict[str, int] = field(default_factory=dict)   # rows computed by this call
    n_images: int = 0                                        # images in scope (not nsfw)
    skipped: dict[str, int] = field(default_factory=dict)    # "nsfw", "no annotator: <suite>", "<x> disabled"
    unannotated_suites: list[str] = field(default_factory=list)
    annotators: dict[str, Any] = field(default_factory=dict)
    models_loaded: list[str] = field(default_factory=list)
    images_embedded: dict[str, int] = field(default_factory=dict)  # encoder -> images embedded (not cached)
    timings: dict[str, dict] = field(default_factory=dict)

    @property
    def n_nsfw_skipped(self) -> int:
        return int(self.skipped.get("nsfw", 0))

    def format(self) -> str:
        written = ", ".join(f"{f} ({self.rows.get(f, 0):,} rows, {self.new_rows.get(f, 0):,} new)"
                            for f in self.files_written) or "none"
        parts = [f"annotation of {self.n_images:,} images in {self.run_dir}: wrote {written}"]
        if self.files_up_to_date:
            parts.append(f"up to date: {', '.join(self.files_up_to_date)}")
        if self.skipped:
            parts.append("skipped: " + ", ".join(f"{k} {v:,}" for k, v in self.skipped.items()))
        if self.models_loaded:
            parts.append(f"models: {', '.join(self.models_loaded)}")
        total = self.timings.get("annotate/total", {}).get("seconds")
        if total is not None:
            parts.append(f"{total:.1f} s")
        return "; ".join(parts)

    def __str__(self) -> str:
        return self.format()

    def to_dict(self) -> dict:
        return {"run_dir": str(self.run_dir), "files_written": list(self.files_written),
                "files_up_to_date": list(self.files_up_to_date), "rows": dict(self.rows),
                "new_rows": dict(self.new_rows), "n_images": self.n_images, "skipped": dict(self.skipped),
                "unannotated_suites": list(self.unannotated_suites), "annotators": dict(self.annotators),
                "models_loaded": list(self.models_loaded), "images_embedded": dict(self.images_embedded),
                "timings": dict(self.timings)}


# --------------------------------------------------------------------------- images


class _Images:
    """Probe rows of the run (manifest order) and their PNG files."""

    def __init__(self, run_dir: Path, manifest: pd.DataFrame):
        self.run_dir = run_dir
        self.df = manifest.reset_index(drop=True)
        self.rows = self.df.to_dict("records")
        self.by_id = {str(r["probe_id"]): r for r in self.rows}

    def path(self, probe_id: str) -> Path:
        row = self.by_id[probe_id]
        for col in ("image_path", "file_name"):
            rel = row.get(col)
            if isinstance(rel, str) and rel and (self.run_dir / rel).is_file():
                return self.run_dir / rel
        batch, name = row.get("batch"), row.get("file_name")
        if isinstance(batch, str) and isinstance(name, str) and (self.run_dir / rf.IMAGES_DIR / batch / name).is_file():
            return self.run_dir / rf.IMAGES_DIR / batch / name
        raise rf.RunFolderError(f"the image of probe {probe_id!r} is missing from {self.run_dir} "
                                f"(manifest image_path {row.get('image_path')!r}); rerun generation")

    def load(self, probe_ids: Sequence[str]) -> list:
        from PIL import Image

        out = []
        for pid in probe_ids:
            with Image.open(self.path(pid)) as im:
                out.append(im.convert("RGB"))
        return out

    def ids_of(self, suites: Iterable[str]) -> list[str]:
        suites = set(suites)
        return [str(r["probe_id"]) for r in self.rows if r["suite"] in suites]


# --------------------------------------------------------------------------- timings


def _merge_timings(run_dir: Path, entries: dict[str, dict]) -> None:
    if not entries:
        return
    path = run_dir / TIMINGS_FILE
    current: dict = {}
    if path.is_file():
        try:
            current = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            current = {}
        if not isinstance(current, dict):
            current = {}
    current.update(entries)
    rf.write_json_atomic(path, current)


def _timing(seconds: float, n_images: int, annotator: str, **extra) -> dict:
    return {"seconds": round(float(seconds), 4), "n_images": int(n_images),
            "images_per_second": round(n_images / seconds, 3) if seconds > 0 and n_images else None,
            "annotator": annotator, **extra}


# --------------------------------------------------------------------------- the stage


def _resolve_suites(suites: Any, present: list[str]) -> list[str]:
    if suites is None:
        return present
    if isinstance(suites, str):
        suites = [s.strip() for s in suites.split(",") if s.strip()]
    suites = list(dict.fromkeys(suites))
    from benchmark.probes import list_suites

    known = set(list_suites()) | set(present)
    unknown = [s for s in suites if s not in known]
    if unknown:
        raise ValueError(f"unknown suite {unknown[0]!r}; known suites: {', '.join(sorted(known))}")
    absent = [s for s in suites if s not in present]
    if absent:
        raise ValueError(f"suite {absent[0]!r} has no images in this run folder (it has: {', '.join(present)})")
    return suites


def _free(model: Any) -> None:
    del model
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # pragma: no cover
        pass


def _skin_tone_annotator(skin_tone: Any):
    from benchmark.annotate.skin_tone import (
        FaceDetector,
        HaarFaceDetector,
        SkinToneAnnotator,
        WholeImageFaceDetector,
    )

    if isinstance(skin_tone, SkinToneAnnotator):
        return skin_tone
    if isinstance(skin_tone, FaceDetector):
        return SkinToneAnnotator(skin_tone)
    name = str(skin_tone).strip().lower()
    if name in ("haar", "opencv-haar"):
        return SkinToneAnnotator(HaarFaceDetector())
    if name in ("whole-image", "whole_image"):
        return SkinToneAnnotator(WholeImageFaceDetector())
    raise ValueError(f"unknown skin-tone annotator {skin_tone!r}: use haar, whole-image or none")


class _CountingDetector:
    """Wraps a face detector to remember how many faces the last image had."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.last = 0

    def detect(self, rgb):
        faces = self.inner.detect(rgb)
        self.last = len(faces)
        return faces


def annotate_run(
    run_dir: str | Path,
    *,
    encoder: Any = None,
    mcas_encoders: Any = None,
    vqa: Any = None,
    skin_tone: Any = None,
    detector: Any = None,
    device: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    suites: Sequence[str] | str | None = None,
    force: bool = False,
    progress: bool = True,
    checkpoint_every: int = 512,
) -> AnnotationSummary:
    """Annotate the images of ``run_dir`` (see the module docstring and docs/annotate.md).

    ``encoder``: CLIP spec for GEP (C, CC, CLS); ``mcas_encoders``: CLIP specs for the MCAS
    embeddings; ``vqa``: VQA spec for gender and DALL-Eval attributes; ``skin_tone``:
    ``"haar"`` / ``"whole-image"`` / a ``FaceDetector`` or ``SkinToneAnnotator``; ``detector``: the
    PaintSkills object detector (a DETR Hub ID or folder, ``builtin:tiny-detr``, or a loaded
    :class:`benchmark.paintskills.detect.Detector`). ``None``
    takes :func:`default_annotators` of the run (the tiny built-ins for a ``builtin:`` model,
    the papers' models otherwise); ``False`` or ``"none"`` turns an annotator off. Loaded
    model objects (an ``ImageTextEncoder``, a ``VQAModel``) are accepted as well.
    ``suites`` restricts the stage to some suites of the run; ``force`` recomputes their rows.
    """
    t_start = time.perf_counter()
    run_dir = Path(run_dir)
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    batch_size = int(batch_size)
    manifest_path = run_dir / rf.MANIFEST_FILE
    if not manifest_path.is_file():
        raise rf.RunFolderError(f"{run_dir} has no {rf.MANIFEST_FILE}: run the generation stage first "
                                f"(t2ibench run ... --out {run_dir})")
    run_config = rf.read_run_config(run_dir)
    manifest = rf.read_manifest(run_dir)
    if "probe_index" in manifest.columns:
        manifest = manifest.sort_values("probe_index", kind="stable")
    present = list(dict.fromkeys(manifest["suite"]))
    scope_suites = _resolve_suites(suites, present)

    defaults = default_annotators(run_config)
    encoder = defaults["encoder"] if encoder is None else encoder
    mcas_encoders = defaults["mcas_encoders"] if mcas_encoders is None else mcas_encoders
    if isinstance(mcas_encoders, str) or not isinstance(mcas_encoders, (list, tuple)):
        mcas_encoders = [] if _disabled(mcas_encoders) else [mcas_encoders]
    vqa = defaults["vqa"] if vqa is None else vqa
    skin_tone = defaults["skin_tone"] if skin_tone is None else skin_tone
    detector = defaults["detector"] if detector is None else detector
    for spec in [encoder, *mcas_encoders]:  # one-line errors before any heavy work
        if isinstance(spec, str) and not _disabled(spec):
            from benchmark.models.encoders import parse_encoder_spec

            parse_encoder_spec(spec)

    summary = AnnotationSummary(run_dir=run_dir)
    summary.annotators = {"encoder": None if _disabled(encoder) else _model_name(encoder),
                          "mcas_encoders": [_model_name(e) for e in mcas_encoders if not _disabled(e)],
                          "vqa": None if _disabled(vqa) else _model_name(vqa),
                          "skin_tone": None if _disabled(skin_tone) else str(getattr(skin_tone, "name", skin_tone)),
                          "detector": None if _disabled(detector) else _model_name(detector)}

    # Images in scope; nsfw ones are skipped (counted), never annotated.
    in_scope = manifest[manifest["suite"].isin(scope_suites)]
    if "nsfw" in in_scope.columns:
        nsfw = in_scope["nsfw"].fillna(False).astype(bool)
    else:
        nsfw = pd.Series(False, index=in_scope.index)
    if int(nsfw.sum()):
        summary.skipped["nsfw"] = int(nsfw.sum())
    usable = in_scope[~nsfw.to_numpy()]
    images = _Images(run_dir, usable)
    summary.n_images = len(images.rows)
    for s in scope_suites:
        if s not in ANNOTATED_SUITES:
            summary.unannotated_suites.append(s)
            summary.skipped[f"no annotator: {s}"] = int((usable["suite"] == s).sum())

    suite_of = {str(p): s for p, s in zip(manifest["probe_id"], manifest["suite"])}
    probe_order = {str(p): i for i, p in enumerate(manifest["probe_id"])}
    scope_set = set(scope_suites)

    def in_scope_row(row: dict) -> bool:
        pid = _key_part(row.get("probe_id"))
        if not pid:  # MCAS text rows
            return bool(scope_set & set(MCAS_SUITES))
        return suite_of.get(pid) in scope_set or pid not in suite_of

    files: dict[str, _LabelFile] = {}
    for name, spec in LABEL_FILES.items():
        if scope_set & set(spec.suites):
            files[name] = _LabelFile(run_dir, spec, in_scope_row, force, probe_order)

    timings: dict[str, dict] = {}
    bar_kw = {"enabled": progress}

    # ------------------------------------------------------------ plan: expected rows
    gep_ids = [p for p in images.ids_of(GEP_SUITES)]
    gep_todo: list[str] = []
    enc_name = None if _disabled(encoder) else _model_name(encoder)
    if gep_ids and enc_name is None:
        summary.skipped["GEP images (encoder disabled)"] = len(gep_ids)
    elif gep_ids:
        from benchmark.annotate.clip_labels import ESTIMATORS, _as_list

        f = files["attributes"]
        for pid in gep_ids:
            need = False
            for a in _as_list(images.by_id[pid].get("annotated_attributes")):
                for est in ESTIMATORS:
                    need |= f.expect((pid, a, est, enc_name, ""))
            if need:
                gep_todo.append(pid)

    from benchmark.annotate.vqa_labels import attribute_questions, gender_questions

    vqa_name = None if _disabled(vqa) else _model_name(vqa)
    gender_todo: dict[str, list[tuple[str, str]]] = {}
    attr_todo: dict[str, list[tuple[str, str]]] = {}
    vqa_ids = images.ids_of(set(GENDER_SUITES) | set(ATTRIBUTE_VQA_SUITES))
    if vqa_ids and vqa_name is None:
        summary.skipped["VQA images (vqa disabled)"] = len(vqa_ids)
    elif vqa_ids:
        dalleval_cfg = None
        if "dalleval_bias" in scope_set:
            from benchmark.probes import load_config

            dalleval_cfg = load_config("dalleval")
        for pid in vqa_ids:
            row = images.by_id[pid]
            if "gender" in files:
                for person, q in gender_questions(row, dalleval_cfg):
                    if files["gender"].expect((pid, person, q, vqa_name)):
                        gender_todo.setdefault(pid, []).append((person, q))
            for attr, q in attribute_questions(row, dalleval_cfg):
                if files["attributes"].expect((pid, attr, "vqa", vqa_name, q)):
                    attr_todo.setdefault(pid, []).append((attr, q))

    skin_ids = images.ids_of(SKIN_TONE_SUITES)
    skin_todo: list[str] = []
    skin = None
    if skin_ids and _disabled(skin_tone):
        summary.skipped["skin-tone images (skin tone disabled)"] = len(skin_ids)
    elif skin_ids:
        from benchmark.annotate.skin_tone import SkinToneAnnotator

        base = _skin_tone_annotator(skin_tone)
        skin = SkinToneAnnotator(_CountingDetector(base.detector), min_skin_pixels=base.min_skin_pixels)
        summary.annotators["skin_tone"] = skin.name
        for pid in skin_ids:
            if files["skin_tone"].expect((pid, skin.name)):
                skin_todo.append(pid)

    mcas_ids = images.ids_of(MCAS_SUITES)
    mcas_names = [_model_name(e) for e in mcas_encoders if not _disabled(e)]
    mcas_image_todo: dict[str, list[str]] = {}
    mcas_text_todo: set[str] = set()
    texts = None
    if mcas_ids and not mcas_names:
        summary.skipped["MCAS images (no encoder)"] = len(mcas_ids)
    elif mcas_ids:
        from benchmark.annotate.mcas_embeddings import mcas_text_table
        from benchmark.probes.mcas import mcas_image_roles

        f = files["embeddings"]
        texts = mcas_text_table()
        roles = mcas_image_roles(images.df[images.df["suite"].isin(MCAS_SUITES)].reset_index(drop=True))
        for name in mcas_names:
            for pid, role, target in zip(mcas_ids, roles["role"], roles["target"]):
                if f.expect((name, "image", pid, "", role, target)):
                    mcas_image_todo.setdefault(name, []).append(pid)
            for t, role, target in zip(texts["text"], texts["role"], texts["target"]):
                if f.expect((name, "text", "", t, role, target)):
                    mcas_text_todo.add(name)

    det_ids = images.ids_of(PAINTSKILLS_SUITES)
    det_name = None if _disabled(detector) else _model_name(detector)
    det_todo: list[str] = []
    if det_ids and det_name is None:
        summary.skipped["PaintSkills images (detector disabled)"] = len(det_ids)
    elif det_ids:
        det_todo = [pid for pid in det_ids if files["detections"].expect((pid, det_name))]
        if det_todo and isinstance(detector, str):  # one-line error now, not after the other annotators
            from benchmark.models.detector import check_detector_spec

            check_detector_spec(detector)

    # ------------------------------------------------------------ CLIP encoders (each loaded once)
    encoder_objs = {}
    for e in ([encoder] if enc_name else []) + [e for e in mcas_encoders if not _disabled(e)]:
        encoder_objs.setdefault(_model_name(e), e)
    sha_of = {pid: _key_part(r.get("sha256")) or None for pid, r in images.by_id.items()}
    for name, spec in encoder_objs.items():
        do_gep = name == enc_name and bool(gep_todo)
        img_mcas = mcas_image_todo.get(name, [])
        if not (do_gep or img_mcas or name in mcas_text_todo):
            continue
        t0 = time.perf_counter()
        if isinstance(spec, str):
            from benchmark.models import load_encoder

            # images reach the encoder batch_size at a time (cache.ensure); its own batch size
            # only chunks texts (CLS training sentences, MCAS texts), which are cheap
            model = load_encoder(spec, device=device, batch_size=max(batch_size, TEXT_BATCH_SIZE))
        else:
            model = spec
        summary.models_loaded.append(name)
        load_s = time.perf_counter() - t0
        from benchmark.annotate.embedding_cache import EmbeddingCache

        cache = EmbeddingCache(run_dir, name)
        need = list(dict.fromkeys((gep_todo if do_gep else []) + img_mcas))
        need_set = set(need)
        need = [p for p in probe_order if p in need_set]  # manifest order
        n_missing = len(cache.missing(need, [sha_of[p] for p in need]))
        t0 = time.perf_counter()
        bar = progress_bar(n_missing, f"embed images [{name}]", **bar_kw)
        try:
            emb = cache.ensure(need, [sha_of[p] for p in need], lambda pos: images.load([need[k] for k in pos]),
                               model.embed_images, batch_size=batch_size, flush_every=checkpoint_every,
                               progress=bar)
        finally:
            bar.close()
        embed_s = time.perf_counter() - t0
        summary.images_embedded[name] = cache.n_embedded
        timings[f"annotate/embed_images[{name}]"] = _timing(embed_s, cache.n_embedded, name,
                                                           load_seconds=round(load_s, 4),
                                                           n_cached=len(need) - cache.n_embedded)
        row_of = {p: i for i, p in enumerate(need)}
        if do_gep:
            from benchmark.annotate.clip_labels import gep_attribute_rows

            t0 = time.perf_counter()
            rows = gep_attribute_rows([images.by_id[p] for p in gep_todo], emb[[row_of[p] for p in gep_todo]],
                                      model.embed_texts, name)
            files["attributes"].add(rows)
            timings["annotate/gep_clip"] = _timing(time.perf_counter() - t0, len(gep_todo), name,
                                                   n_rows=len(rows))
        if img_mcas or name in mcas_text_todo:
            from benchmark.annotate.mcas_embeddings import (
                mcas_image_rows,
                mcas_text_embedding_rows,
            )

            t0 = time.perf_counter()
            f = files["embeddings"]
            if img_mcas:
                sub = images.df.set_index("probe_id").loc[img_mcas].reset_index()
                f.add(mcas_image_rows(name, sub, emb[[row_of[p] for p in img_mcas]]))
            if name in mcas_text_todo:
                f.add(mcas_text_embedding_rows(name, texts, model.embed_texts(list(texts["text"]))))
            timings[f"annotate/mcas_embeddings[{name}]"] = _timing(time.perf_counter() - t0, len(img_mcas), name)
        if isinstance(spec, str):
            _free(model)

    def checkpoint(names: Sequence[str]) -> None:
        for n in names:
            if n in files and (files[n].new or files[n].force):
                files[n].write()

    # ------------------------------------------------------------ VQA (gender + DALL-Eval attributes)
    vqa_pids = [p for p in probe_order if p in gender_todo or p in attr_todo]
    if vqa_pids:
        from benchmark.annotate.vqa_labels import perceived_gender_label, presence_label

        t0 = time.perf_counter()
        if isinstance(vqa, str):
            from benchmark.models import load_vqa

            vqa_model = load_vqa(vqa, device=device, batch_size=batch_size)
        else:
            vqa_model = vqa
        summary.models_loaded.append(vqa_name)
        load_s = time.perf_counter() - t0
        secs = {"gender": 0.0, "attributes": 0.0}
        counts = {"gender": 0, "attributes": 0}
        nq = {"gender": 0, "attributes": 0}
        load_images_s = 0.0
        bar = progress_bar(len(vqa_pids), "VQA", **bar_kw)
        since = 0
        try:
            for start in range(0, len(vqa_pids), batch_size):
                chunk = vqa_pids[start:start + batch_size]
                t1 = time.perf_counter()
                ims = dict(zip(chunk, images.load(chunk)))
                load_images_s += time.perf_counter() - t1
                for what, todo in (("gender", gender_todo), ("attributes", attr_todo)):
                    items = [(p, a, q) for p in chunk for a, q in todo.get(p, [])]
                    if not items:
                        continue
                    t1 = time.perf_counter()
                    answers = vqa_model.answer([ims[p] for p, _, _ in items], [q for _, _, q in items])
                    secs[what] += time.perf_counter() - t1
                    counts[what] += len({p for p, _, _ in items})
                    nq[what] += len(items)
                    if what == "gender":
                        files["gender"].add({"probe_id": p, "person": person, "question": q, "answer": ans,
                                             "label": perceived_gender_label(ans), "annotator": vqa_name}
                                            for (p, person, q), ans in zip(items, answers))
                    else:
                        files["attributes"].add({"probe_id": p, "attribute": a, "score": float(presence_label(ans)),
                                                 "label": presence_label(ans), "estimator": "vqa",
                                                 "annotator": vqa_name, "question": q, "answer": ans}
                                                for (p, a, q), ans in zip(items, answers))
                bar.update(len(chunk))
                since += len(chunk)
                if since >= checkpoint_every:  # a crash loses at most checkpoint_every images of answers
                    checkpoint(["gender", "attributes"])
                    since = 0
        finally:
            bar.close()
        if isinstance(vqa, str):
            _free(vqa_model)
        share = load_images_s / 2 if counts["gender"] and counts["attributes"] else load_images_s
        for what in ("gender", "attributes"):
            if counts[what]:
                timings[f"annotate/vqa_{what}"] = _timing(secs[what] + share, counts[what], vqa_name,
                                                          n_questions=nq[what], load_seconds=round(load_s, 4))

    # ------------------------------------------------------------ skin tone
    if skin_todo:
        t0 = time.perf_counter()
        bar = progress_bar(len(skin_todo), "skin tone", **bar_kw)
        since = 0
        try:
            for start in range(0, len(skin_todo), batch_size):
                chunk = skin_todo[start:start + batch_size]
                rows = []
                for pid, im in zip(chunk, images.load(chunk)):
                    res = skin.annotate(im)
                    n_faces = skin.detector.last
                    rows.append({"probe_id": pid, "face_found": n_faces > 0,
                                 "ita": None if res is None else float(res.ita),
                                 "mst": None if res is None else int(res.mst), "n_faces": int(n_faces),
                                 "annotator": skin.name})
                files["skin_tone"].add(rows)
                bar.update(len(chunk))
                since += len(chunk)
                if since >= checkpoint_every:
                    checkpoint(["skin_tone"])
                    since = 0
        finally:
            bar.close()
        timings["annotate/skin_tone"] = _timing(time.perf_counter() - t0, len(skin_todo), skin.name)

    # ------------------------------------------------------------ PaintSkills object detector
    if det_todo:
        t0 = time.perf_counter()
        if isinstance(detector, str):
            from benchmark.models.detector import load_detector

            det_model = load_detector(detector, device=device, batch_size=batch_size)
        else:
            det_model = detector
        summary.models_loaded.append(det_name)
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        bar = progress_bar(len(det_todo), "detect objects", **bar_kw)
        since = 0
        try:
            for start in range(0, len(det_todo), batch_size):
                chunk = det_todo[start:start + batch_size]
                rows = []
                for pid, det in zip(chunk, det_model.detect(images.load(chunk))):
                    row = images.by_id[pid]
                    # keep every query, and the probabilities of the classes the rules ask about
                    keep = [row.get(c) for c in ("target", "target_b") if isinstance(row.get(c), str) and row.get(c)]
                    rows.append({"probe_id": pid, "detector": det_name, **det.restrict(keep).to_record()})
                files["detections"].add(rows)
                bar.update(len(chunk))
                since += len(chunk)
                if since >= checkpoint_every:
                    checkpoint(["detections"])
                    since = 0
        finally:
            bar.close()
        if isinstance(detector, str):
            _free(det_model)
        timings["annotate/detections"] = _timing(time.perf_counter() - t0, len(det_todo), det_name,
                                                 load_seconds=round(load_s, 4))

    # ------------------------------------------------------------ write
    for name, f in files.items():
        summary.new_rows[name] = len(f.new)
        if f.up_to_date:
            summary.files_up_to_date.append(f.spec.relpath)
            summary.rows[f.spec.relpath] = f.n_in_scope_before + len(f.kept)
            continue
        if not f.expected and not f.existed:
            continue  # nothing to write (e.g. every image of its suites was nsfw)
        summary.rows[f.spec.relpath] = f.write()
        summary.files_written.append(f.spec.relpath)
    summary.new_rows = {LABEL_FILES[n].relpath: v for n, v in summary.new_rows.items()}
    if timings:
        timings["annotate/total"] = _timing(time.perf_counter() - t_start, summary.n_images, "annotate",
                                            files_written=list(summary.files_written))
    _merge_timings(run_dir, timings)
    summary.timings = timings
    if progress:
        print(summary.format(), file=sys.stderr)
    return summary


def read_labels(run_dir: str | Path, name: str) -> pd.DataFrame:
    """A label file of a run folder as a DataFrame: ``gender``, ``attributes``, ``skin_tone``,
    ``embeddings`` or ``detections``."""
    if name not in LABEL_FILES:
        raise ValueError(f"unknown label file {name!r}; use one of {', '.join(LABEL_FILES)}")
    path = Path(run_dir) / LABEL_FILES[name].relpath
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: run `t2ibench annotate {run_dir}` first")
    return pd.read_parquet(path)
