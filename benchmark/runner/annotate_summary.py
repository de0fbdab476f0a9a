"""What an annotate call reports: :class:`AnnotationSummary` (files written, rows, images left
out and why, models loaded) and the ``annotate/...`` entries it merges into ``timings.json``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.contract import run_folder as rf
from benchmark.contract.run_folder_check import ANNOTATE_TOTAL, timings_document
from benchmark.contract.withheld import REASONS as WITHHELD_REASONS
from benchmark.present.text import excluded_text


LEFT_OUT = (*WITHHELD_REASONS, "nsfw")  # keys of AnnotationSummary.skipped: images left out of every score


@dataclass
class AnnotationSummary:
    """What one call of :func:`annotate_run` did."""

    run_dir: Path
    files_written: list[str] = field(default_factory=list)   # label files (re)written by this call
    files_up_to_date: list[str] = field(default_factory=list)  # complete for these annotators: not touched
    rows: dict[str, int] = field(default_factory=dict)       # rows per label file after this call
    new_rows: dict[str, int] = field(default_factory=dict)   # rows computed by this call
    n_images: int = 0                                        # images in scope (not nsfw)
    # "nsfw" (safety checker), a withheld reason ("refused" by an image API, "missing", "too large"...),
    # "no annotator: <suite>", "<x> disabled"
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

# --------------------------------------------------------------------------- timings


def record_fields(summary: AnnotationSummary, suites: list[str]) -> dict:
    """``annotate/total``'s record of a call: the annotators it used (run option -> model name(s);
    None: turned off) and the suites it covered, which verify compares the label files with."""
    return {"annotators": json.loads(json.dumps(summary.annotators, default=str)), "suites": list(suites)}


def annotate_record(run_dir: Path) -> dict | None:
    """``timings.json`` ``annotate/total`` (the last annotate call that finished), None when the
    file is missing or damaged or has none."""
    doc, _ = timings_document(run_dir)
    entry = (doc or {}).get(ANNOTATE_TOTAL)
    return entry if isinstance(entry, dict) else None


def merge_timings(run_dir: Path, entries: dict[str, dict]) -> None:
    if not entries:
        return
    path = run_dir / rf.TIMINGS_FILE
    current = timings_document(run_dir)[0] or {}  # a damaged file is rewritten
    current.update(entries)
    rf.write_json_atomic(path, current)


def timing_entry(seconds: float, n_images: int, annotator: str, **extra) -> dict:
    return {"seconds": round(float(seconds), 4), "n_images": int(n_images),
            "images_per_second": round(n_images / seconds, 3) if seconds > 0 and n_images else None,
            "annotator": annotator, **extra}
