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
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import pandas as pd

from benchmark.contract import run_folder as rf
from benchmark.annotate.label_files import LABEL_FILES, LabelStore, key_part, read_labels
from benchmark.annotate.registry import (
    AnnotateContext,
    Annotator,
    AnnotatorKind,
    WorkItem,
    default_annotators,
    is_disabled,
    list_annotator_kinds,
    model_name,
    with_prepared,
)
from benchmark.annotate.embedding_cache import EmbeddingCache
from benchmark.probes import list_suites
from benchmark.probes.source import configs_of_record, suite_families
from benchmark.contract.run_folder_check import image_path_error, require_intact, resolves_inside
from benchmark.runner.expected import expected_problems
from benchmark.present.progress import progress_bar
from benchmark.present.text import excluded_text
from benchmark.contract.withheld import withheld_counts
from benchmark.tasks import tasks_for_suites

__all__ = ["AnnotationSummary", "DEFAULT_BATCH_SIZE", "LABEL_FILES", "annotate_run", "default_annotators",
           "read_labels"]

DEFAULT_BATCH_SIZE = 32


LEFT_OUT = ("refused", "missing", "nsfw")  # keys of AnnotationSummary.skipped: images left out of every score


@dataclass
class AnnotationSummary:
    """What one call of :func:`annotate_run` did."""

    run_dir: Path
    files_written: list[str] = field(default_factory=list)   # label files (re)written by this call
    files_up_to_date: list[str] = field(default_factory=list)  # complete for these annotators: not touched
    rows: dict[str, int] = field(default_factory=dict)       # rows per label file after this call
    new_rows: dict[str, int] = field(default_factory=dict)   # rows computed by this call
    n_images: int = 0                                        # images in scope (not nsfw)
    # "nsfw" (safety checker), "refused" (image API), "missing" (not supplied), "no annotator: <suite>", "<x> disabled"
    skipped: dict[str, int] = field(default_factory=dict)
    unannotated_suites: list[str] = field(default_factory=list)
    annotators: dict[str, Any] = field(default_factory=dict)  # run option -> model name(s)
    models_loaded: list[str] = field(default_factory=list)
    images_embedded: dict[str, int] = field(default_factory=dict)  # encoder -> images embedded (not cached)
    png_decodes: int = 0                                     # PNG files decoded (each image once at most)
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
        left_out = excluded_text({k: v for k, v in self.skipped.items() if k in LEFT_OUT})
        if left_out:  # in the words the report and the results use (benchmark.present.text)
            parts.append(f"left out: {left_out}")
        other = {k: v for k, v in self.skipped.items() if k not in LEFT_OUT}
        if other:
            parts.append("skipped: " + ", ".join(f"{k} {v:,}" for k, v in other.items()))
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
                "png_decodes": self.png_decodes, "timings": dict(self.timings)}


# --------------------------------------------------------------------------- images


class _Images:
    """Probe rows of the run (manifest order) and their PNG files."""

    def __init__(self, run_dir: Path, manifest: pd.DataFrame):
        self.run_dir = run_dir
        self.df = manifest.reset_index(drop=True)
        self.rows = self.df.to_dict("records")
        self.by_id = {str(r["probe_id"]): r for r in self.rows}
        self.root = rf.images_dir(run_dir).resolve()  # every image must lie inside it

    def check_paths(self) -> None:
        """Refuse (one line) a manifest whose image paths leave the run's images/ folder, before any work."""
        for row in self.rows:
            rel = row.get("image_path")
            if rel is None or (isinstance(rel, float) and rel != rel):
                continue  # an older manifest without image_path: path() looks in the batch folder
            err = image_path_error(rel)
            if err is None and (self.run_dir / rel).exists() and not resolves_inside(self.run_dir / rel, self.root):
                err = f"image_path {rel!r} resolves outside the run's images/ folder (a symlink out)"
            if err:
                raise rf.RunFolderError(f"{self.run_dir / rf.MANIFEST_FILE}: probe {row['probe_id']!r}: {err}; "
                                        f"`t2ibench run` with the run's arguments rewrites the manifest")

    def path(self, probe_id: str) -> Path:
        row = self.by_id[probe_id]
        candidates = [self.run_dir / row[c] for c in ("image_path", "file_name")
                      if image_path_error(row.get(c)) is None]
        batch, name = row.get("batch"), row.get("file_name")
        if isinstance(batch, str) and isinstance(name, str) and "/" not in batch + name and ".." not in (batch, name):
            candidates.append(self.run_dir / rf.IMAGES_DIR / batch / name)
        for path in candidates:
            if path.is_file() and resolves_inside(path, self.root):
                return path
        raise rf.RunFolderError(f"the image of probe {probe_id!r} is missing from {self.run_dir} "
                                f"(manifest image_path {row.get('image_path')!r}); rerun generation")

    def load(self, probe_ids: Sequence[str]) -> list:
        from PIL import Image

        out = []
        for pid in probe_ids:
            path = self.path(pid)
            try:
                with Image.open(path) as im:
                    out.append(im.convert("RGB"))
            except (OSError, SyntaxError, ValueError) as exc:  # truncated or not a PNG (PIL's errors)
                raise rf.RunFolderError(f"{path} cannot be decoded ({exc}): the image of probe {pid!r} is damaged; "
                                        f"`t2ibench run` with the run's arguments generates it again") from None
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
    decoded: int = 0  # PNG files decoded by this call


def annotator_options(run_config: dict, given: dict) -> dict:
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


@dataclass
class AnnotatorChoice:
    """One annotator kind the tasks of a scope need: the suites it serves, the option's value
    and the annotators made from it (none when the option is disabled)."""

    kind: AnnotatorKind
    suites: list[str]
    value: Any
    annotators: list[Annotator]

    @property
    def models(self) -> list[str] | str | None:
        names = [a.name for a in self.annotators]
        return names if self.kind.many else (names[0] if names else None)


def choose_annotators(families: dict[str, str], scope: list[str], options: dict) -> tuple[list[AnnotatorChoice],
                                                                                          list[str]]:
    """The annotators the tasks of ``scope`` need, in annotator-kind order, each model spec
    checked (one line) before anything is loaded; and the suites no task annotates. Needs no
    image, so ``run`` checks them before generating."""
    params: dict[str, dict[str, Any]] = {}
    for task, suites in tasks_for_suites({s: families[s] for s in scope}):
        for kind_name, param in task.annotators.items():
            params.setdefault(kind_name, {}).update({s: param for s in suites})
    covered = {s for p in params.values() for s in p}
    choices = []
    for kind in [k for k in list_annotator_kinds() if k.name in params]:
        value = options.get(kind.option)
        models = [m for m in (value if kind.many else [value]) if not is_disabled(m)]
        settings = {k: options[k] for k in kind.settings if options.get(k) is not None}
        made = []
        for m in models:
            annotator = kind.create(m, params[kind.name], **settings)
            annotator.check()
            made.append(annotator)
        choices.append(AnnotatorChoice(kind, list(params[kind.name]), value, made))
    return choices, [s for s in scope if s not in covered]


def _annotators(families: dict[str, str], scope: list[str], options: dict, images: _Images,
                summary: AnnotationSummary) -> list[Annotator]:
    """:func:`choose_annotators`, with disabled ones and suites no task annotates counted in
    ``summary``."""
    choices, unannotated = choose_annotators(families, scope, options)
    for s in unannotated:
        summary.unannotated_suites.append(s)
        summary.skipped[f"no annotator: {s}"] = len(images.ids_of([s]))
    out: list[Annotator] = []
    for c in choices:
        models = [m for m in (c.value if c.kind.many else [c.value]) if not is_disabled(m)]
        summary.annotators[c.kind.option] = [model_name(m) for m in models] if c.kind.many else \
            (None if not models else (c.value if isinstance(c.value, str) else model_name(c.value)))
        if not models:
            summary.skipped[f"{c.kind.name} images ({c.kind.option} disabled)"] = len(images.ids_of(c.suites))
        out.extend(c.annotators)
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
    if int(nsfw.sum()):  # placeholders of withheld images (refused / missing) are counted by their reason
        withheld = withheld_counts(run_dir, in_scope.loc[nsfw.to_numpy(), "probe_id"])
        for reason, n in {**withheld, "nsfw": int(nsfw.sum()) - sum(withheld.values())}.items():
            if n:
                summary.skipped[reason] = n
    images = _Images(run_dir, in_scope[~nsfw.to_numpy()])
    images.check_paths()
    summary.n_images = len(images.rows)
    annotators = _annotators(families, scope, annotator_options(run_config, given), images, summary)
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


class _Batch:
    """What the annotators of one batch share: its decoded images, which images each model is
    needed for, and values computed once for all of them (a VQA model's image features)."""

    def __init__(self, images: dict[str, Any], needs: dict[tuple[str, str], list[str]],
                 prepared: dict[tuple[str, str], Any] | None = None):
        self.images = images
        self._needs = needs
        self._prepared = prepared or {}
        self._shared: dict = {}

    def needing(self, model_key: str, model: Any) -> list[str]:
        """The batch's probe ids that annotators of this model need, in order."""
        return self._needs.get((model_key, model_name(model)), [])

    def prepared(self, model_key: str, model: Any) -> Any:
        """What the model's ``prepare_images`` made of :meth:`needing`'s images on a decode thread,
        or None (a model without ``prepare_images``, or one not loaded when the batch was decoded:
        the annotator prepares the images itself)."""
        return self._prepared.get((model_key, model_name(model)))

    def shared(self, key: Any, compute):
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]


@dataclass
class _Counter:
    """Seconds and images of one piece of work, for timings.json."""

    seconds: float = 0.0
    n_images: int = 0


class _Encoders:
    """The CLIP encoders whose caches miss images the embedding annotators need."""

    def __init__(self, plan: _Plan):
        self.plan = plan
        self.caches: dict[str, Any] = {}
        self.specs: dict[str, Any] = {}
        self.missing: dict[str, set[str]] = {}

        for w in plan.work:
            if w.annotator.inputs != "embeddings" or not w.todo:
                continue
            name = model_name(w.annotator.encoder)
            if name not in self.caches:
                self.caches[name], self.specs[name], self.missing[name] = EmbeddingCache(plan.run_dir, name), \
                    w.annotator.encoder, set()
            pids = list(dict.fromkeys(it.probe_id for it in w.todo))
            cache = self.caches[name]
            self.missing[name] |= {pids[k] for k in cache.missing(pids, [self.sha(p) for p in pids])}
        self.counters = {name: _Counter() for name in self.caches}

    def sha(self, pid: str) -> str | None:
        return key_part(self.plan.images.by_id[pid].get("sha256")) or None

    def needs(self, chunk: list[str]) -> dict[tuple[str, str], list[str]]:
        """Per encoder (keyed as :class:`_Batch` keys models), the chunk's probe ids it embeds."""
        return {("clip", name): [p for p in chunk if p in todo] for name, todo in self.missing.items()}

    def model(self, name: str) -> Any:
        from benchmark.annotate.clip_labels import load_clip  # its classifiers import scikit-learn

        return self.plan.ctx.model("clip", self.specs[name], lambda spec: load_clip(spec, self.plan.ctx))

    def embed(self, batch: _Batch) -> None:
        for name in self.missing:
            pids = batch.needing("clip", name)
            if not pids:
                continue
            t0 = time.perf_counter()
            model = self.model(name)
            emb = with_prepared(model.embed_images, [batch.images[p] for p in pids], batch.prepared("clip", name))
            self.caches[name].put(pids, [self.sha(p) for p in pids], emb)
            self.caches[name].n_embedded += len(pids)
            c = self.counters[name]
            c.seconds, c.n_images = c.seconds + time.perf_counter() - t0, c.n_images + len(pids)

    def flush(self) -> None:
        for cache in self.caches.values():
            cache.flush()


def _image_order(plan: _Plan, encoders: _Encoders, items: list[dict[str, WorkItem]]) -> list[str]:
    """Every probe id some work needs pixels of, each group of images that the same models read
    spread evenly over the pass (image k of a group of n at (k + 0.5) / n; manifest order within a
    group). Suites come in long stretches (GEP's images go to CLIP only, DALL-Eval's to VQA as well):
    in manifest order the pass alternates between stretches where the main thread waits for the
    decode threads and stretches where they wait for the models; mixed batches keep both busy.
    The order changes no label (rows are written in manifest order)."""
    users: dict[str, list[int]] = {}
    for k, pids in enumerate([*encoders.missing.values(), *items]):  # each encoder's and pixel work's ids
        for p in pids:
            users.setdefault(p, []).append(k)
    groups: dict[tuple[int, ...], list[str]] = {}
    for r in plan.images.rows:
        pid = str(r["probe_id"])
        if pid in users:
            groups.setdefault(tuple(users[pid]), []).append(pid)
    placed = [((k + 0.5) / len(pids), g, pid) for g, pids in enumerate(groups.values()) for k, pid in enumerate(pids)]
    return [pid for _, _, pid in sorted(placed)]


#: Threads that decode PNGs ahead of the annotators (each decodes a whole batch; as many batches
#: are decoded ahead as there are threads). One thread could not keep up: the main thread then
#: waited on it for about a fifth of the stage's host time per image (docs/performance.md).
DECODE_THREADS = max(1, min(4, (os.cpu_count() or 1)))


def _batches(plan: _Plan, order: list[str], needs: Callable[[list[str]], dict],
             preparers: Callable[[], dict[tuple[str, str], Callable]]):
    """A :class:`_Batch` per ``batch_size`` probe ids. The next batches are decoded on worker
    threads while the caller annotates this one (PNG decoding releases the GIL), and each model
    already loaded prepares its images there too (resizing, normalising: the host work that
    would otherwise sit between the GPU's calls)."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    size = plan.ctx.batch_size
    chunks = [order[i:i + size] for i in range(0, len(order), size)]

    def decode(chunk: list[str], prepare: dict[tuple[str, str], Callable]) -> _Batch:
        images = dict(zip(chunk, plan.images.load(chunk)))
        wanted = needs(chunk)
        prepared = {key: fn([images[p] for p in wanted[key]]) for key, fn in prepare.items() if wanted.get(key)}
        return _Batch(images, wanted, prepared)

    with ThreadPoolExecutor(max_workers=DECODE_THREADS, thread_name_prefix="t2ibench-decode") as pool:
        pending = deque(pool.submit(decode, c, preparers()) for c in chunks[:DECODE_THREADS])
        for k in range(len(chunks)):
            batch = pending.popleft().result()
            if k + DECODE_THREADS < len(chunks):
                pending.append(pool.submit(decode, chunks[k + DECODE_THREADS], preparers()))
            yield batch


def _preparers(plan: _Plan, pixel_works: list[_Work], encoders: _Encoders) -> dict[tuple[str, str], Callable]:
    """``prepare_images`` of every model the image pass uses that is loaded by now, keyed as
    :class:`_Batch` keys models (read on the main thread, when a batch is handed to a decode thread)."""
    out = {}
    wanted = [(w.annotator.model_key, w.annotator.model) for w in pixel_works]
    wanted += [("clip", spec) for spec in encoders.specs.values()]
    for key, spec in wanted:
        model = plan.ctx.loaded.get((key, spec)) if isinstance(spec, str) else spec
        if callable(getattr(model, "prepare_images", None)):
            out[(key, model_name(spec))] = model.prepare_images
    return out


def _load_models(plan: _Plan, pixel_works: list[_Work], encoders: _Encoders) -> None:
    """Load every model of the image pass before its first batch is decoded, so that the decode
    threads prepare every batch's images (a model loaded on its first use left the batches
    decoded before that to the main thread)."""
    for name, todo in encoders.missing.items():
        if todo:
            encoders.model(name)
    for w in pixel_works:
        a = w.annotator
        # a spec its own load_model resolves (a plugin's annotator may load nothing through ctx)
        if a.model_key and isinstance(a.model, str) and type(a).load_model is not Annotator.load_model:
            a.load(plan.ctx)


def _annotate_batch(plan: _Plan, batch: _Batch, pixel_works: list[_Work], items: list[dict],
                    counters: dict[int, _Counter]) -> None:
    for k, w in enumerate(pixel_works):
        mine = [items[k][p] for p in batch.images if p in items[k]]
        if not mine:
            continue
        t0 = time.perf_counter()
        for it in mine:
            it.image = batch.images[it.probe_id]
        w.store.add(w.annotator.annotate(mine, plan.ctx))
        for it in mine:
            it.image = None
        c = counters[k]
        c.seconds, c.n_images = c.seconds + time.perf_counter() - t0, c.n_images + len(mine)


def _needs(pixel_works: list[_Work], items: list[dict], chunk: list[str]) -> dict[tuple[str, str], list[str]]:
    needs: dict[tuple[str, str], list[str]] = {}
    for k, w in enumerate(pixel_works):
        key = (w.annotator.model_key, model_name(w.annotator.model))
        needs.setdefault(key, [])
        needs[key] += [p for p in chunk if p in items[k] and p not in needs[key]]
    return needs


def _image_pass(plan: _Plan, progress: bool, checkpoint_every: int) -> _Encoders:
    """One pass over the images any work needs, each PNG decoded once: embed the images the
    encoders' caches lack, and run every pixel annotator on its images of the batch. Label files
    and caches are written every ``checkpoint_every`` images, so a crash loses at most that many."""
    encoders = _Encoders(plan)
    pixel_works = [w for w in plan.work if w.annotator.inputs == "pixels" and w.todo]
    items = [{it.probe_id: it for it in w.todo} for w in pixel_works]
    counters = {k: _Counter() for k in range(len(pixel_works))}
    order = _image_order(plan, encoders, items)
    t_start, since = time.perf_counter(), 0
    if order:
        _load_models(plan, pixel_works, encoders)
    bar = progress_bar(len(order), "annotate images", enabled=progress)
    try:
        def needs(chunk: list[str]) -> dict[tuple[str, str], list[str]]:
            return {**_needs(pixel_works, items, chunk), **encoders.needs(chunk)}

        for batch in _batches(plan, order, needs, lambda: _preparers(plan, pixel_works, encoders)):
            plan.decoded += len(batch.images)
            plan.ctx.batch = batch
            encoders.embed(batch)
            _annotate_batch(plan, batch, pixel_works, items, counters)
            bar.update(len(batch.images))
            since += len(batch.images)
            if since >= checkpoint_every:
                encoders.flush()
                for w in pixel_works:
                    w.store.write()
                since = 0
    finally:
        bar.close()
        plan.ctx.batch = None
        encoders.flush()
    _image_timings(plan, encoders, pixel_works, counters, time.perf_counter() - t_start, len(order))
    return encoders


def _image_timings(plan: _Plan, encoders: _Encoders, pixel_works: list[_Work], counters: dict[int, _Counter],
                   seconds: float, n_images: int) -> None:
    for name, c in encoders.counters.items():
        plan.summary.images_embedded[name] = c.n_images
        plan.timings[f"annotate/embed_images[{name}]"] = _timing(c.seconds, c.n_images, name)
    for k, w in enumerate(pixel_works):
        a = w.annotator
        plan.timings[f"annotate/{a.kind}[{a.name}]"] = _timing(counters[k].seconds, counters[k].n_images, a.name)
    if n_images:
        plan.timings["annotate/images"] = _timing(seconds, n_images, "decode and annotate",
                                                  png_decodes=plan.decoded)


def _run_embedding_work(plan: _Plan, encoders: _Encoders) -> None:
    """The annotators that read CLIP embeddings, after the image pass filled the caches: each
    gets all its images at once (GEP's classifiers are trained once per call)."""
    for w in plan.work:
        a = w.annotator
        if a.inputs != "embeddings" or not (w.todo or w.extra):
            continue
        name = model_name(a.encoder)
        t0 = time.perf_counter()
        if w.todo:
            emb = encoders.caches[name].get([it.probe_id for it in w.todo])
            for it, e in zip(w.todo, emb):
                it.embedding = e
            w.store.add(a.annotate(w.todo, plan.ctx))
        if w.extra:
            w.store.add(a.annotate_extra(w.extra, plan.ctx))
        plan.summary.images_embedded.setdefault(name, 0)
        plan.timings[f"annotate/{a.kind}[{a.name}]"] = _timing(time.perf_counter() - t0, len(w.todo), a.name)


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
    verify: bool = False,
    **options: Any,
) -> AnnotationSummary:
    """Annotate the images of ``run_dir`` (see the module docstring and docs/annotate.md).

    ``encoder``: CLIP spec for GEP (C, CC, CLS); ``vqa``: VQA spec for gender and DALL-Eval attributes; ``skin_tone``:
    ``"haar"`` / ``"whole-image"`` / a ``FaceDetector`` or ``SkinToneAnnotator``; ``detector``: the
    PaintSkills object detector (a DETR Hub ID or folder, ``builtin:tiny-detr``, or a loaded
    ``Detector``); ``options`` or ``annotators``: any other annotator option by name (a task
    folder's own, such as the CLIP encoders of an embedding annotator; a plugin's). ``None``
    takes the run's default (the tiny built-ins for a ``builtin:`` model, the papers' models
    otherwise); ``False`` or ``"none"`` turns an annotator off. Loaded model objects are
    accepted as well. ``suites`` restricts the stage to some suites of the run; ``force``
    recomputes their rows. ``verify`` first checks the folder against its files
    (:func:`benchmark.contract.run_folder_check.require_intact`, every PNG hashed; label files are left
    out: a damaged one is moved aside and computed again) and refuses one with problems.
    """
    t_start = time.perf_counter()
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if verify:
        require_intact(run_dir, "annotate", labels=False, expected=expected_problems)
    known = {k.option for k in list_annotator_kinds()}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"annotate_run() got an unexpected keyword argument {unknown[0]!r} (annotator options: "
                        f"{', '.join(sorted(known))})")
    given = {"encoder": encoder, "vqa": vqa, "skin_tone": skin_tone, "detector": detector, **options,
             **(annotators or {})}
    plan = _plan(Path(run_dir), given, suites=suites, force=force, device=device, batch_size=int(batch_size))
    try:
        encoders = _image_pass(plan, progress, checkpoint_every)
        for key, spec in [k for k in list(plan.ctx.loaded) if k[0] != "clip"]:
            plan.ctx.release(key, spec)  # the pixel annotators' models: done
        _run_embedding_work(plan, encoders)
    finally:
        for key, spec in list(plan.ctx.loaded):
            plan.ctx.release(key, spec)
    _write(plan)
    summary = plan.summary
    summary.models_loaded = list(plan.ctx.loaded_names)
    summary.png_decodes = plan.decoded
    if plan.timings:
        plan.timings["annotate/total"] = _timing(time.perf_counter() - t_start, summary.n_images, "annotate",
                                                 files_written=list(summary.files_written),
                                                 batch_size=plan.ctx.batch_size)
    _merge_timings(plan.run_dir, plan.timings)
    summary.timings = plan.timings
    if progress:
        print(summary.format(), file=sys.stderr)
    return summary
