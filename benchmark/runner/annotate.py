"""Annotation stage: the images of a run folder -> label files (and cached embeddings).

``annotate_run(run_dir)`` reads ``RUN_DIR/run_config.json`` and ``RUN_DIR/manifest.parquet``
(written by generation) and asks every task of the run's suites (:mod:`benchmark.tasks`)
which annotators it needs. Each annotator (:mod:`benchmark.annotate.registry`) writes rows
of one label file under ``labels/`` (:mod:`benchmark.annotate.label_files`), atomically;
annotators that read CLIP embeddings share one embedding cache per encoder
(``embeddings/<encoder-slug>/``, only missing images are embedded); ``timings.json`` gets
``annotate/<kind>[<model>]`` entries merged into what is there.

Rows are reused by key: re-running with the same annotators finds every expected row in the
files and does nothing (no model is loaded); new images (a resumed generation) or another
annotator get only the missing rows; ``force=True`` recomputes the rows in scope. Rows of
suites outside ``suites=`` are kept as they are. Images with ``nsfw == True`` are skipped
and counted. See ``docs/annotate.md``.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from benchmark import run_folder as rf
from benchmark.annotate.label_files import LABEL_FILES, LabelStore, key_part, read_labels
from benchmark.annotate.registry import (
    AnnotateContext,
    Annotator,
    WorkItem,
    default_annotators,
    is_disabled,
    list_annotator_kinds,
    model_name,
)
from benchmark.probes.source import configs_of_record, suite_families
from benchmark.runner.progress import progress_bar

__all__ = ["AnnotationSummary", "DEFAULT_BATCH_SIZE", "LABEL_FILES", "annotate_run", "default_annotators",
           "read_labels"]

DEFAULT_BATCH_SIZE = 32


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
    annotators: dict[str, Any] = field(default_factory=dict)  # run option -> model name(s)
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
    path = run_dir / rf.TIMINGS_FILE
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


# --------------------------------------------------------------------------- plan


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


@dataclass
class _Work:
    """One annotator's share of the call: the images (and rows of no image) it still has to do."""

    annotator: Annotator
    store: LabelStore
    todo: list[WorkItem] = field(default_factory=list)
    extra: list[tuple] = field(default_factory=list)


@dataclass
class _Plan:
    run_dir: Path
    ctx: AnnotateContext
    images: _Images
    stores: dict[str, LabelStore]
    work: list[_Work]
    summary: AnnotationSummary
    timings: dict[str, dict] = field(default_factory=dict)


def _options(run_config: dict, given: dict) -> dict:
    """Annotator option values: those given (None = default), the run's defaults otherwise; the
    option of a ``many`` kind becomes a list (one string or object -> one model)."""
    chosen = dict(default_annotators(run_config))
    chosen.update({k: v for k, v in given.items() if v is not None})
    for kind in list_annotator_kinds():
        value = chosen.get(kind.option)
        if kind.many and not isinstance(value, (list, tuple)):
            chosen[kind.option] = [] if value is None or is_disabled(value) else [value]
        elif kind.many:
            chosen[kind.option] = list(value)
    return chosen


def _annotators(families: dict[str, str], scope: list[str], options: dict, images: _Images,
                summary: AnnotationSummary) -> list[Annotator]:
    """The annotators the tasks of ``scope`` need, in annotator-kind order; disabled ones are
    counted in ``summary.skipped``; every model spec is checked (one line) before any work."""
    from benchmark.tasks import tasks_for_suites

    params: dict[str, dict[str, Any]] = {}
    for task, suites in tasks_for_suites({s: families[s] for s in scope}):
        for kind_name, param in task.annotators.items():
            params.setdefault(kind_name, {}).update({s: param for s in suites})
    covered = {s for p in params.values() for s in p}
    for s in scope:
        if s not in covered:
            summary.unannotated_suites.append(s)
            summary.skipped[f"no annotator: {s}"] = len(images.ids_of([s]))
    out: list[Annotator] = []
    for kind in [k for k in list_annotator_kinds() if k.name in params]:
        value = options.get(kind.option)
        models = [m for m in (value if kind.many else [value]) if not is_disabled(m)]
        summary.annotators[kind.option] = [model_name(m) for m in models] if kind.many else \
            (None if not models else (value if isinstance(value, str) else model_name(value)))
        if not models:
            summary.skipped[f"{kind.name} images ({kind.option} disabled)"] = len(images.ids_of(params[kind.name]))
        for m in models:
            annotator = kind.factory(m, params[kind.name])
            annotator.check()
            out.append(annotator)
    return out


def _plan(run_dir: Path, given: dict, *, suites: Any, force: bool, device: str | None,
          batch_size: int) -> _Plan:
    """Read the run, choose and check the annotators, and list what each still has to do."""
    if not (run_dir / rf.MANIFEST_FILE).is_file():
        raise rf.RunFolderError(f"{run_dir} has no {rf.MANIFEST_FILE}: run the generation stage first "
                                f"(t2ibench run ... --out {run_dir})")
    run_config = rf.read_run_config(run_dir) or {}
    manifest = rf.read_manifest(run_dir)
    if "probe_index" in manifest.columns:
        manifest = manifest.sort_values("probe_index", kind="stable")
    present = list(dict.fromkeys(manifest["suite"]))
    scope = _resolve_suites(suites, present)
    families = suite_families(run_config.get("probes"), present)
    summary = AnnotationSummary(run_dir=run_dir)
    in_scope = manifest[manifest["suite"].isin(scope)]
    nsfw = in_scope["nsfw"].fillna(False).astype(bool) if "nsfw" in in_scope.columns \
        else pd.Series(False, index=in_scope.index)
    if int(nsfw.sum()):
        summary.skipped["nsfw"] = int(nsfw.sum())
    images = _Images(run_dir, in_scope[~nsfw.to_numpy()])
    summary.n_images = len(images.rows)
    annotators = _annotators(families, scope, _options(run_config, given), images, summary)
    ctx = AnnotateContext(run_dir, device=device, batch_size=batch_size,
                          configs=configs_of_record(run_config.get("probes")), families=families)
    stores = _stores(run_dir, annotators, manifest, scope, force)
    plan = _Plan(run_dir, ctx, images, stores, [], summary)
    for a in annotators:
        plan.work.append(_todo(a, stores[a.label_file], images, ctx))
    return plan


def _stores(run_dir: Path, annotators: list[Annotator], manifest: pd.DataFrame, scope: list[str],
            force: bool) -> dict[str, LabelStore]:
    suite_of = {str(p): s for p, s in zip(manifest["probe_id"], manifest["suite"])}
    probe_order = {str(p): i for i, p in enumerate(manifest["probe_id"])}
    scope_set = set(scope)

    def in_scope_row(row: dict) -> bool:
        pid = key_part(row.get("probe_id"))
        # rows of no image (MCAS texts) belong to the annotators running now; orphans are dropped
        return not pid or suite_of.get(pid) in scope_set or pid not in suite_of

    names = list(dict.fromkeys(a.label_file for a in annotators))
    return {n: LabelStore(run_dir, LABEL_FILES[n], in_scope_row, force, probe_order) for n in names}


def _todo(annotator: Annotator, store: LabelStore, images: _Images, ctx: AnnotateContext) -> _Work:
    work = _Work(annotator, store)
    for pid in images.ids_of(annotator.suites):
        row = images.by_id[pid]
        missing = [k for k in annotator.keys(row, ctx) if store.expect(k)]
        if missing:
            work.todo.append(WorkItem(row, missing))
    work.extra = [k for k in annotator.extra_keys(ctx) if store.expect(k)]
    return work


# --------------------------------------------------------------------------- run


def _release_after(work: list[_Work]) -> dict[int, list[tuple[str, str]]]:
    """For pixel annotators: the position in ``work`` after which each loaded model (shared by
    annotators of one model key and spec, e.g. VQA gender and attributes) can be freed."""
    last: dict[tuple[str, str], int] = {}
    for i, w in enumerate(work):
        a = w.annotator
        if a.inputs != "embeddings" and w.todo and a.model_key and isinstance(a.model, str):
            last[(a.model_key, a.model)] = i
    out: dict[int, list] = {}
    for key_spec, i in last.items():
        out.setdefault(i, []).append(key_spec)
    return out


def _embed(plan: _Plan, encoder: Any, todo: list[WorkItem], progress: bool, checkpoint_every: int) -> None:
    """Fill ``item.embedding`` from the encoder's cache, embedding the images not cached yet."""
    from benchmark.annotate.embedding_cache import EmbeddingCache

    name = model_name(encoder)
    need = list(dict.fromkeys(it.probe_id for it in todo))  # manifest order: todo lists are in it
    sha = [key_part(plan.images.by_id[p].get("sha256")) or None for p in need]
    cache = EmbeddingCache(plan.run_dir, name)
    n_missing = len(cache.missing(need, sha))
    t0 = time.perf_counter()
    model = None
    if n_missing:
        from benchmark.annotate.clip_labels import load_clip

        model = plan.ctx.model("clip", encoder, lambda spec: load_clip(spec, plan.ctx))
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    bar = progress_bar(n_missing, f"embed images [{name}]", enabled=progress)
    try:
        emb = cache.ensure(need, sha, lambda pos: plan.images.load([need[k] for k in pos]),
                           model.embed_images if model is not None else None, batch_size=plan.ctx.batch_size,
                           flush_every=checkpoint_every, progress=bar)
    finally:
        bar.close()
    plan.summary.images_embedded[name] = cache.n_embedded
    plan.timings[f"annotate/embed_images[{name}]"] = _timing(time.perf_counter() - t0, cache.n_embedded, name,
                                                             load_seconds=round(load_s, 4),
                                                             n_cached=len(need) - cache.n_embedded)
    row_of = {p: i for i, p in enumerate(need)}
    for it in todo:
        it.embedding = emb[row_of[it.probe_id]]


def _run_embedding_work(plan: _Plan, progress: bool, checkpoint_every: int) -> None:
    """Per encoder (in order): embed the images its annotators still need, once, then run them."""
    groups: dict[str, list[_Work]] = {}
    for w in plan.work:
        if w.annotator.inputs == "embeddings" and (w.todo or w.extra):
            groups.setdefault(model_name(w.annotator.encoder), []).append(w)
    for name, works in groups.items():
        todo = [it for w in works for it in w.todo]
        order = {str(r["probe_id"]): i for i, r in enumerate(plan.images.rows)}
        todo.sort(key=lambda it: order[it.probe_id])
        if todo:
            _embed(plan, works[0].annotator.encoder, todo, progress, checkpoint_every)
        for w in works:
            t0 = time.perf_counter()
            w.store.add(w.annotator.annotate(w.todo, plan.ctx) if w.todo else [])
            if w.extra:
                w.store.add(w.annotator.annotate_extra(w.extra, plan.ctx))
            plan.timings[f"annotate/{w.annotator.kind}[{w.annotator.name}]"] = _timing(
                time.perf_counter() - t0, len(w.todo), w.annotator.name)
        plan.ctx.release("clip", works[0].annotator.encoder)


def _run_pixel_work(plan: _Plan, w: _Work, progress: bool, checkpoint_every: int) -> None:
    """One annotator over its images, ``batch_size`` decoded images at a time; its label file
    is written every ``checkpoint_every`` images, so a crash loses at most that many."""
    a, size = w.annotator, plan.ctx.batch_size
    t0 = time.perf_counter()
    if a.model_key:  # load before the clock starts for the images
        a.load(plan.ctx)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    bar = progress_bar(len(w.todo), f"{a.kind} [{a.name}]", enabled=progress)
    since = 0
    try:
        for start in range(0, len(w.todo), size):
            chunk = w.todo[start:start + size]
            for it, im in zip(chunk, plan.images.load([it.probe_id for it in chunk])):
                it.image = im
            w.store.add(a.annotate(chunk, plan.ctx))
            for it in chunk:
                it.image = None
            bar.update(len(chunk))
            since += len(chunk)
            if since >= checkpoint_every:
                w.store.write()
                since = 0
    finally:
        bar.close()
    plan.timings[f"annotate/{a.kind}[{a.name}]"] = _timing(time.perf_counter() - t0, len(w.todo), a.name,
                                                           load_seconds=round(load_s, 4))


def _write(plan: _Plan) -> None:
    summary = plan.summary
    for name, store in plan.stores.items():
        relpath = store.spec.relpath
        summary.new_rows[relpath] = len(store.new)
        if store.up_to_date:
            summary.files_up_to_date.append(relpath)
            summary.rows[relpath] = store.n_in_scope_before + len(store.kept)
            continue
        if not store.expected and not store.existed:
            continue  # nothing to write (e.g. every image of its suites was nsfw)
        summary.rows[relpath] = store.write()
        summary.files_written.append(relpath)


def annotate_run(
    run_dir: str | Path,
    *,
    encoder: Any = None,
    mcas_encoders: Any = None,
    vqa: Any = None,
    skin_tone: Any = None,
    detector: Any = None,
    annotators: dict | None = None,
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
    ``Detector``); ``annotators``: more options by name (a plugin annotator's option). ``None``
    takes the run's default (the tiny built-ins for a ``builtin:`` model, the papers' models
    otherwise); ``False`` or ``"none"`` turns an annotator off. Loaded model objects are
    accepted as well. ``suites`` restricts the stage to some suites of the run; ``force``
    recomputes their rows.
    """
    t_start = time.perf_counter()
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    given = {"encoder": encoder, "mcas_encoders": mcas_encoders, "vqa": vqa, "skin_tone": skin_tone,
             "detector": detector, **(annotators or {})}
    plan = _plan(Path(run_dir), given, suites=suites, force=force, device=device, batch_size=int(batch_size))
    release = _release_after(plan.work)
    _run_embedding_work(plan, progress, checkpoint_every)
    for i, w in enumerate(plan.work):
        if w.annotator.inputs != "embeddings" and w.todo:
            _run_pixel_work(plan, w, progress, checkpoint_every)
        for key, spec in release.get(i, []):
            plan.ctx.release(key, spec)
    _write(plan)
    summary = plan.summary
    summary.models_loaded = list(plan.ctx.loaded_names)
    if plan.timings:
        plan.timings["annotate/total"] = _timing(time.perf_counter() - t_start, summary.n_images, "annotate",
                                                 files_written=list(summary.files_written))
    _merge_timings(plan.run_dir, plan.timings)
    summary.timings = plan.timings
    if progress:
        print(summary.format(), file=sys.stderr)
    return summary
