"""The annotate stage's work: one pass over the images (each PNG decoded once, on worker
threads, ahead of the models) that fills the CLIP embedding caches and runs every pixel
annotator (:func:`image_pass`), then the annotators that read embeddings
(:func:`run_embedding_work`)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable

from benchmark.annotate.label_files import key_part
from benchmark.annotate.registry import Annotator, WorkItem, model_name, with_prepared
from benchmark.annotate.embedding_cache import EmbeddingCache
from benchmark.present.progress import progress_bar
from benchmark.runner.annotate_plan import AnnotatePlan, Work
from benchmark.runner.annotate_summary import timing_entry


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

    def __init__(self, plan: AnnotatePlan):
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


def _image_order(plan: AnnotatePlan, encoders: _Encoders, items: list[dict[str, WorkItem]]) -> list[str]:
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


def _batches(plan: AnnotatePlan, order: list[str], needs: Callable[[list[str]], dict],
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


def _preparers(plan: AnnotatePlan, pixel_works: list[Work], encoders: _Encoders) -> dict[tuple[str, str], Callable]:
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


def _load_models(plan: AnnotatePlan, pixel_works: list[Work], encoders: _Encoders) -> None:
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


def _annotate_batch(plan: AnnotatePlan, batch: _Batch, pixel_works: list[Work], items: list[dict],
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


def _needs(pixel_works: list[Work], items: list[dict], chunk: list[str]) -> dict[tuple[str, str], list[str]]:
    needs: dict[tuple[str, str], list[str]] = {}
    for k, w in enumerate(pixel_works):
        key = (w.annotator.model_key, model_name(w.annotator.model))
        needs.setdefault(key, [])
        needs[key] += [p for p in chunk if p in items[k] and p not in needs[key]]
    return needs


def image_pass(plan: AnnotatePlan, progress: bool, checkpoint_every: int) -> _Encoders:
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


def _image_timings(plan: AnnotatePlan, encoders: _Encoders, pixel_works: list[Work], counters: dict[int, _Counter],
                   seconds: float, n_images: int) -> None:
    for name, c in encoders.counters.items():
        plan.summary.images_embedded[name] = c.n_images
        plan.timings[f"annotate/embed_images[{name}]"] = timing_entry(c.seconds, c.n_images, name)
    for k, w in enumerate(pixel_works):
        a = w.annotator
        plan.timings[f"annotate/{a.kind}[{a.name}]"] = timing_entry(counters[k].seconds, counters[k].n_images, a.name)
    if n_images:
        plan.timings["annotate/images"] = timing_entry(seconds, n_images, "decode and annotate",
                                                  png_decodes=plan.decoded)


def run_embedding_work(plan: AnnotatePlan, encoders: _Encoders) -> None:
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
        plan.timings[f"annotate/{a.kind}[{a.name}]"] = timing_entry(time.perf_counter() - t0, len(w.todo), a.name)
