"""The generation stage's writer: finished batches -> PNG files, sha256 and metadata, one atomic
batch directory each (``run_folder.write_batch``), off the generating thread.

Each image of a batch is encoded (PNG) and hashed on a pool of ``threads`` threads (PIL's zlib
encoder and hashlib release the GIL, so the images of a batch are encoded in parallel, on other
cores than the one driving the accelerator); one committing thread gathers them in probe order
and writes the batch. At most **one batch is in flight**: queueing batch k+1 first waits until
batch k is on disk (or raises its error). A kill therefore loses at most two batches of images:
the one being encoded or written, and the one after it (being generated, or generated and
waiting to be queued); every batch under ``images/`` stays complete.

Bytes: each image is encoded alone with :data:`PNG_OPTIONS`, so the files (and the sha256 in
the manifest) are the same whatever the thread count, inline or in the background. zlib's
run-length strategy (``Z_RLE``, what zlib recommends for PNG image data) was chosen by
measurement (``bench/runner_overhead.py``, docs/performance.md): 3-6x less CPU per photograph
than PIL's default (zlib level 6, the runner's setting before), files within 4% of its size
(zlib level 1, slower than Z_RLE, makes them 6-21% larger), the same pixels. Runs written before
it keep their bytes; a resumed one holds batches of both, each verified by its own sha256.

Checks: each image is also checked on its encoder thread for being degenerate (one colour:
:func:`benchmark.contract.image_checks.degenerate_kind`, from PIL's extrema, without changing
it), and a batch's verdicts are appended to ``image_checks.jsonl`` before the batch is renamed
into place; the writer keeps the tally of the images it wrote (:meth:`BatchWriter.written`).
"""

from __future__ import annotations

import io
import os
import threading
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmark.contract import run_folder as rf
from benchmark.contract.digest import sha256_hex
from benchmark.contract.image_checks import DegenerateCount, degenerate_kind, record_image_checks
from benchmark.present.progress import StageTimer
from benchmark.runner.run_config import recorded_settings

__all__ = ["MAX_THREADS", "PNG_OPTIONS", "PNG_OPTIONS_BEFORE", "BatchWriter", "default_threads", "png_bytes"]

#: PIL's PNG save options of the files the runner writes: zlib's run-length strategy (lossless like
#: every setting; with it the zlib level makes no difference, 1 to 9 write the same bytes)
PNG_OPTIONS = {"compress_type": zlib.Z_RLE}
#: what the runner wrote before (PIL's default: zlib level 6, the default strategy)
PNG_OPTIONS_BEFORE: dict = {}
#: the encoder pool never grows past this (several ranks on one host each have their own pool)
MAX_THREADS = 8


def default_threads() -> int:
    """Encoder threads: the CPUs this process may use, at most :data:`MAX_THREADS`."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, cpus))


def png_bytes(image, options: dict | None = None) -> bytes:
    """``image`` (PIL) as PNG bytes, saved with PIL's PNG ``options`` (None: :data:`PNG_OPTIONS`)."""
    buf = io.BytesIO()
    image.save(buf, format="PNG", **(PNG_OPTIONS if options is None else options))
    return buf.getvalue()


def _encoded(image, options: dict, non_finite: bool) -> tuple[bytes, str, str | None]:
    data = png_bytes(image, options)
    return data, sha256_hex(data), degenerate_kind(image, non_finite)


class BatchWriter:
    """Encodes, hashes and writes finished batches (see the module docstring).

    ``overlap``: write in the background while the next batch generates (the default in
    ``generate``); without it each batch is on disk before :meth:`submit` returns (its images
    still encoded on the pool). ``threads`` (None: :func:`default_threads`) and ``png_options``
    (None: :data:`PNG_OPTIONS`) exist for benchmarks and tests.
    The ``write`` stage of ``timer`` is the wall time from queueing a batch to its commit."""

    def __init__(self, run_dir: Path, model: Any, probe_columns: list[str], n_total: int, rank: int,
                 timer: StageTimer, overlap: bool, *, threads: int | None = None, png_options: dict | None = None):
        self.run_dir, self.probe_columns, self.n_total = run_dir, probe_columns, n_total
        self.rank, self.timer = rank, timer
        self.model_id, self.revision = getattr(model, "model_id", None), getattr(model, "revision", None)
        self.settings_str = rf.settings_json(recorded_settings(getattr(model, "settings", {}) or {}))
        self.threads = int(threads or default_threads())
        self.png_options = dict(PNG_OPTIONS if png_options is None else png_options)
        self.encoders = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="t2ibench-png")
        self.committer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="t2ibench-write") if overlap else None
        self.in_flight: Future | None = None
        self._tally = DegenerateCount()  # what was written, counted by the committing thread
        self._tally_lock = threading.Lock()

    def _commit(self, idxs: list[int], rows: list[dict], encoded: list[Future], nsfw: list,
                batch_seconds: float, non_finite: bool) -> None:
        with self.timer.stage("write"):
            files, meta, kinds = [], [], []
            for i, probe, job, flag in zip(idxs, rows, encoded, nsfw):
                data, digest, kind = job.result()
                kinds.append(kind)
                name = rf.image_file_name(i, self.n_total)
                files.append((name, data))
                meta.append({"file_name": name, "probe_index": i, **{c: probe[c] for c in self.probe_columns},
                             "sha256": digest, "model_id": self.model_id, "revision": self.revision,
                             "settings": self.settings_str, "nsfw": None if flag is None else bool(flag),
                             "rank": self.rank, "batch_seconds": round(batch_seconds, 4)})
            name = rf.batch_name(idxs[0], self.n_total)
            record_image_checks(self.run_dir, name, [str(r["probe_id"]) for r in rows], kinds, non_finite)
            rf.write_batch(self.run_dir, name, files, meta, rank=self.rank)
            with self._tally_lock:
                for probe, kind, flag in zip(rows, kinds, nsfw):
                    if not flag:  # a safety checker's black image, a withheld probe's placeholder: never scored
                        self._tally.add(str(probe["probe_id"]), kind)

    def written(self) -> DegenerateCount:
        """A copy of the tally of the batches on disk: the images that would be scored (not flagged),
        and the degenerate ones among them."""
        with self._tally_lock:
            t = self._tally
            return DegenerateCount(t.n_checked, dict(t.by_kind), list(t.examples))

    def submit(self, idxs: list[int], rows: list[dict], images: list, nsfw: list, batch_seconds: float,
               non_finite: bool = False) -> None:
        """Queue one finished batch (``non_finite``: the model's output for it held NaN / inf); first
        waits for the batch before it (at most one in flight)."""
        self.wait_for_last()
        encoded = [self.encoders.submit(_encoded, image, self.png_options, non_finite) for image in images]
        if self.committer is None:
            self._commit(idxs, rows, encoded, nsfw, batch_seconds, non_finite)
        else:
            self.in_flight = self.committer.submit(self._commit, idxs, rows, encoded, nsfw, batch_seconds, non_finite)

    def wait_for_last(self) -> None:
        """Until the batch in flight is on disk (or its error raised)."""
        if self.in_flight is not None:
            done, self.in_flight = self.in_flight, None
            done.result()

    def close(self, wait_for_last: bool) -> None:
        """Wait for the last batch (raising its error when ``wait_for_last``) and stop the threads;
        a batch already generated is still written when the loop failed."""
        try:
            if wait_for_last and self.in_flight is not None:
                self.in_flight.result()
        finally:
            if self.committer is not None:
                self.committer.shutdown(wait=True)
            self.encoders.shutdown(wait=True)
