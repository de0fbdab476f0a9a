"""The leaderboard's image browser: a model's images with their prompts and labels.

Two sources: the run folder, when the results file is a run's ``results.json`` (its
``manifest.parquet`` and ``images/``, labelled from ``labels/`` and ``scores/`` as the report
labels its grids), and the Hub dataset the submission pushed (``submission.images_dataset``,
a run folder pushed as is), streamed with ``datasets.load_dataset``. Images left out of every
score (flagged ``nsfw`` in the manifest: refused by the image API, not supplied, or flagged by
the safety checker) are never shown.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd

from benchmark.contract.run_folder import MANIFEST_FILE
from benchmark.tasks.of_run import report_sections
from benchmark.runner.report_images import label_lines

MAX_IMAGES = 24  # per page of the browser
THUMB_PX = 256


def image_source(sub) -> tuple[str, Any] | None:
    """("run", run folder) when the results sit in a run folder with a manifest, ("hub", repo id)
    when the submission pushed its images, else None."""
    if sub.run_dir is not None and (Path(sub.run_dir) / MANIFEST_FILE).is_file():
        return ("run", Path(sub.run_dir))
    if sub.images_dataset:
        return ("hub", sub.images_dataset)
    return None


_manifests: dict[tuple[str, int], pd.DataFrame] = {}


def _manifest(run_dir: Path) -> pd.DataFrame:
    path = run_dir / MANIFEST_FILE
    key = (str(path), path.stat().st_mtime_ns)
    if key not in _manifests:
        _manifests.clear()  # one run at a time is browsed
        _manifests[key] = pd.read_parquet(path)
    return _manifests[key]


def run_suites(run_dir: Path) -> list[str]:
    return list(dict.fromkeys(str(s) for s in _manifest(Path(run_dir))["suite"].dropna()))


def _thumb(image) -> Any:
    image = image.convert("RGB")
    image.thumbnail((THUMB_PX, THUMB_PX))
    return image


def run_images(run_dir: Path, results: dict, suite: str | None, search: str = "",
               limit: int = MAX_IMAGES) -> list[tuple[Any, str]]:
    """(PIL thumbnail, caption) of up to ``limit`` images of ``suite`` whose prompt contains
    ``search``; the caption is the prompt and the image's labels."""
    from PIL import Image

    run_dir = Path(run_dir)
    frame = _manifest(run_dir)
    if suite:
        frame = frame[frame["suite"] == suite]
    if search:
        frame = frame[frame["prompt"].astype(str).str.contains(search, case=False, regex=False)]
    if "nsfw" in frame.columns:
        frame = frame[frame["nsfw"].ne(True)]
    lines_of = label_lines(run_dir, results, {s: f.task for f in report_sections(run_dir, results) for s in f.suites})
    out = []
    for row in frame.head(limit).to_dict("records"):
        path = run_dir / str(row.get("image_path") or "")
        if not path.is_file():
            continue
        with Image.open(path) as img:
            out.append((_thumb(img), " · ".join([str(row.get("prompt", ""))] + lines_of(row))))
    return out


def hub_images(repo: str, suite: str | None, search: str = "", limit: int = MAX_IMAGES,
               load: Callable | None = None) -> list[tuple[Any, str]]:
    """(PIL thumbnail, prompt) of up to ``limit`` images of ``suite`` from the Hub images
    dataset ``repo`` (streamed: only those rows are downloaded); ValueError (one line) when the
    dataset cannot be read (offline, no connection, no such dataset)."""
    if load is None:
        from datasets import load_dataset as load
    try:
        ds = load(repo, split="train", streaming=True)
        out = []
        for row in ds:
            if suite and row.get("suite") != suite:
                continue
            if search and search.lower() not in str(row.get("prompt", "")).lower():
                continue
            if row.get("nsfw") is True or row.get("image") is None:
                continue
            out.append((_thumb(row["image"]), str(row.get("prompt", ""))))
            if len(out) >= limit:
                break
        return out
    except Exception as exc:  # datasets raises many kinds; the page shows one line
        raise ValueError(f"cannot read images dataset {repo}: {type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")) from None
