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

The stage is split by concern: ``annotate_plan`` (what to do), ``annotate_pass`` (doing it) and
``annotate_summary`` (what is reported); this module runs them and writes the label files.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Sequence

from benchmark.annotate.label_files import LABEL_FILES, read_labels
from benchmark.annotate.registry import default_annotators, list_annotator_kinds
from benchmark.contract.leftovers import remove_leftovers
from benchmark.contract.run_folder_check import require_intact
from benchmark.runner.expected import expected_problems
from benchmark.runner.annotate_pass import image_pass, run_embedding_work
from benchmark.runner.annotate_plan import AnnotatePlan, make_plan
from benchmark.runner.annotate_summary import (
    AnnotationSummary, annotate_record, merge_timings, record_fields, timing_entry,
)

__all__ = ["AnnotationSummary", "DEFAULT_BATCH_SIZE", "LABEL_FILES", "annotate_run", "default_annotators",
           "read_labels"]

DEFAULT_BATCH_SIZE = 32


def _write(plan: AnnotatePlan) -> None:
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

    ``annotators`` or keyword ``options``: each annotator option by name (``t2ibench annotate
    --help`` lists them): ``encoder``, the CLIP spec of the attribute-existence labels; ``vqa``,
    the VQA spec of gender and attribute questions; ``skin_tone``: ``"haar"`` / ``"whole-image"``
    / a ``FaceDetector`` or ``SkinToneAnnotator``; ``detector``: the scene probes' object detector
    (a DETR Hub ID or folder, ``builtin:tiny-detr``, or a loaded ``Detector``); a task folder's
    own, such as the CLIP encoders of an embedding annotator; a plugin's. ``None``
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
    remove_leftovers(run_dir)  # a label file or embedding cache staged by a stopped stage
    if verify:
        require_intact(run_dir, "annotate", labels=False, expected=expected_problems)
    known = {k.option for k in list_annotator_kinds()}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"annotate_run() got an unexpected keyword argument {unknown[0]!r} (annotator options: "
                        f"{', '.join(sorted(known))})")
    given = {"encoder": None, "vqa": None, "skin_tone": None, "detector": None, **options, **(annotators or {})}
    plan = make_plan(Path(run_dir), given, suites=suites, force=force, device=device, batch_size=int(batch_size))
    try:
        encoders = image_pass(plan, progress, checkpoint_every)
        for key, spec in [k for k in list(plan.ctx.loaded) if k[0] != "clip"]:
            plan.ctx.release(key, spec)  # the pixel annotators' models: done
        run_embedding_work(plan, encoders)
    finally:
        for key, spec in list(plan.ctx.loaded):
            plan.ctx.release(key, spec)
    _write(plan)
    summary = plan.summary
    summary.models_loaded = list(plan.ctx.loaded_names)
    summary.png_decodes = plan.decoded
    # what verify and the score stage read: that annotation finished, with which annotators on which
    # suites; a call that computed nothing writes it too when it is missing or damaged (a rate of
    # none), and updates which annotators it names
    record, fields = annotate_record(plan.run_dir), record_fields(summary, plan.scope)
    if plan.timings or record is None:
        plan.timings["annotate/total"] = timing_entry(time.perf_counter() - t_start,
                                                      summary.n_images if plan.timings else 0, "annotate",
                                                      files_written=list(summary.files_written),
                                                      batch_size=plan.ctx.batch_size, **fields)
    changed = {} if plan.timings or all(record.get(k) == v for k, v in fields.items()) else \
        {"annotate/total": {**record, **fields}}  # the last rate measured, this call's annotators
    merge_timings(plan.run_dir, {**plan.timings, **changed})
    summary.timings = plan.timings
    if progress:
        print(summary.format(), file=sys.stderr)
    return summary
