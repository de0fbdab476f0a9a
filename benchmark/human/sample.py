"""The calibration sample of a run folder as the annotation app serves it: which images may be
asked about (:func:`eligible_images`), drawing and recording the sample once
(:func:`run_sample`, the record: :mod:`benchmark.contract.human_sample`), and the app's queue
in the sample's order (:func:`sample_items`).

``t2ibench annotate-ui RUN_DIR --sample N`` draws N images per suite (seeded, recorded in
``RUN_DIR/human_labels/sample.json``) and asks only about them, in the sample's random order; a
second start with the same options serves the same sample and resumes where each annotator stopped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from benchmark.contract.human_sample import Eligible, check_suite, draw_sample, read_sample, sample_path, write_sample
from benchmark.human.items import Item, build_items, read_run_manifest

__all__ = ["DEFAULT_SEED", "eligible_images", "run_sample", "sample_items"]

DEFAULT_SEED = 0


def eligible_images(run_dir: str | Path, question_types: Sequence[str] | None = None,
                    suites: Sequence[str] | None = None) -> dict[str, list[Eligible]]:
    """suite -> the images the app asks about (any question of ``question_types``; images flagged
    NSFW are never shown), each with its prompt (the sample's stratum) and the manifest's sha256."""
    manifest = read_run_manifest(run_dir).set_index("probe_id", drop=False)
    out: dict[str, list[Eligible]] = {}
    seen: set[str] = set()
    for it in build_items(run_dir, question_types, suites=suites):
        if it.probe_id in seen:
            continue
        seen.add(it.probe_id)
        row = manifest.loc[it.probe_id]
        out.setdefault(it.suite, []).append(Eligible(it.probe_id, str(row.get("prompt", "")), str(row.get("sha256", ""))))
    return out


def run_sample(run_dir: str | Path, size: int, seed: int = DEFAULT_SEED,
               question_types: Sequence[str] | None = None, suites: Sequence[str] | None = None) -> dict:
    """RUN_DIR's calibration sample of ``size`` images per suite: drawn and recorded on first use;
    the recorded one when it was drawn with the same size, seed and question types and still
    matches the run's images. A one-line ``ValueError`` otherwise (people may have labelled the
    recorded sample: a new one is drawn only after its record is deleted)."""
    populations = eligible_images(run_dir, question_types, suites)
    if not populations:
        raise ValueError(f"{run_dir} has no images with the questions asked: nothing to sample")
    record, problem = read_sample(run_dir)
    types = None if question_types is None else sorted(question_types)
    if record is None and problem is None:
        record = draw_sample(populations, size, seed, types)
        write_sample(run_dir, record)
        return record
    if problem is not None:
        raise ValueError(f"{sample_path(run_dir)} cannot be used ({problem}); move it away to draw a new sample")
    asked = (record.get("size_per_suite"), record.get("seed"), record.get("question_types"))
    if asked != (int(size), int(seed), types):
        raise ValueError(f"{run_dir} already has a calibration sample ({record.get('size_per_suite')} images per suite, "
                         f"seed {record.get('seed')}, questions {record.get('question_types') or 'all'}); serve it with "
                         f"the same --sample / --sample-seed / --questions, or move {sample_path(run_dir)} away to draw "
                         "another (answers already given to it then count for agreement only)")
    for suite, images in populations.items():
        why = check_suite(record, suite, images)
        if why:
            raise ValueError(f"{sample_path(run_dir)}: {why}")
    return record


def sample_items(items: Sequence[Item], record: dict) -> list[Item]:
    """The items about the sample's images, in the sample's order (each image's questions together)."""
    order: dict[str, int] = {}
    for rec in (record.get("suites") or {}).values():
        for pid in rec.get("probe_ids") or []:
            order.setdefault(pid, len(order))
    chosen = [it for it in items if it.probe_id in order]
    return sorted(chosen, key=lambda it: order[it.probe_id])  # stable: an image's questions keep their order
