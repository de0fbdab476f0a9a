"""The probe sheet: one row per image to make, for models the benchmark cannot run itself.

``t2ibench probes export --suites ... [--limit N] --out sheet.csv`` writes the probes of a
selection (the same selection ``t2ibench run`` makes from the same arguments) as CSV or JSON
Lines, with the exact file name each image must have, and a README beside the sheet saying
how to fill the folder. ``t2ibench run --images DIR`` then matches a folder against the same
selection (:mod:`benchmark.runner.supplied_images`). Base install only: no torch, no PIL.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

__all__ = ["SHEET_COLUMNS", "IMAGE_SUFFIXES", "file_stem", "sheet_table", "export_sheet", "selection_record"]

#: the columns of the sheet, in order
SHEET_COLUMNS = ("probe_id", "suite", "prompt", "sample_index", "seed", "file_name")
#: image files a folder may hold (matched by the sheet's file name without its suffix)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def file_stem(probe_id: str) -> str:
    """The file name (without suffix) of a probe's image: its id with ``/`` as ``__`` and any
    character a file system or a shell could trip on as ``-``."""
    return _UNSAFE.sub("-", str(probe_id).replace("/", "__")).strip("-.") or "probe"


#: the seed column of a sheet for a model that takes no seed (an image API)
NO_SEED = "not controllable"


def sheet_table(probes: pd.DataFrame, seeds: bool = True) -> pd.DataFrame:
    """The sheet's rows for ``probes`` (the limited probe table of a run), in probe order;
    ``seeds=False``: the seed column says the model takes none."""
    stems = [file_stem(p) for p in probes["probe_id"]]
    if len(set(stems)) != len(stems):  # two ids that differ only in unsafe characters
        seen: dict[str, int] = {}
        for i, s in enumerate(stems):
            seen[s] = seen.get(s, 0) + 1
            if seen[s] > 1:
                stems[i] = f"{s}-{seen[s]}"
    return pd.DataFrame({
        "probe_id": probes["probe_id"].astype(str).to_list(),
        "suite": probes["suite"].astype(str).to_list(),
        "prompt": probes["prompt"].astype(str).to_list(),
        "sample_index": [int(v) for v in probes["sample_index"]],
        "seed": [int(v) if seeds else NO_SEED for v in probes["seed"]],
        "file_name": [f"{s}.png" for s in stems],
    }, columns=list(SHEET_COLUMNS))


def _readme(sheet_name: str, table: pd.DataFrame, selection: dict) -> str:
    per_suite = table.groupby("suite", sort=False).size()
    suites = ", ".join(f"{s} ({n} images)" for s, n in per_suite.items())
    args = " ".join(["--suites", *selection["suites"]]
                    + ([f"--limit {selection['limit_per_suite']}"] if selection.get("limit_per_suite") else [])
                    + ([f"--probes {selection['probes']}"] if selection.get("probes") else []))
    return "\n".join([
        f"# How to fill a folder from `{sheet_name}`",
        "",
        f"{len(table)} images to make: {suites}.",
        "",
        "1. For every row, generate one image from `prompt` with your model (API, web tool, own sampler).",
        "   Make one image per row: rows with the same prompt and another `sample_index` are further",
        "   samples of it, as the paper asks.",
        "2. Save it in one folder under the row's `file_name` (PNG; `.jpg`, `.jpeg` or `.webp` with the",
        "   same name before the suffix are accepted too). Any size, RGB; every file a different image.",
        "   File names of your own? Give a CSV with columns `probe_id,path` (or `probe_id,sample,path`)",
        "   with `--mapping FILE` instead.",
        "3. `seed` is the seed the benchmark would use; pass it if your tool takes one. Either way the",
        "   results say the seeds were not controlled by the benchmark.",
        "4. Audit the folder (same selection as this sheet):",
        "",
        f"       t2ibench run --images FOLDER --model-name NAME --supplied-by WHO {args} --out runs/NAME",
        "",
        "   NAME is a Hub-style id (ORG/NAME or NAME: letters, digits, '.', '_', '-'); WHO says who made",
        "   the images (shown in the results and on the leaderboard).",
        "   Every file is checked first (decodable, RGB, size, duplicates, files that match no row, rows",
        "   with no file); a missing image stops the run unless `--allow-missing`, which counts it.",
        "",
        f"Probe fingerprint of this selection: `{selection['probes_fingerprint']}`",
        "",
    ])


def export_sheet(out: str | Path, probes: pd.DataFrame, selection: dict, seeds: bool = True) -> tuple[Path, Path]:
    """Write the sheet (``.csv`` or ``.jsonl``, by ``out``'s suffix) and ``<name>.README.md``
    beside it; returns both paths. ``selection``: suites, limit_per_suite, probes source and the
    probe fingerprint, repeated in the README (and, for JSON Lines, nowhere else)."""
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in (".csv", ".jsonl"):
        raise ValueError(f"--out {out}: the sheet is written as .csv or .jsonl, not {out.suffix or 'no suffix'!r}")
    table = sheet_table(probes, seeds)
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".csv":
        table.to_csv(out, index=False)
    else:
        out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in table.to_dict("records")),
                       encoding="utf-8")
    readme = out.with_name(out.stem + ".README.md")
    readme.write_text(_readme(out.name, table, selection), encoding="utf-8")
    return out, readme


def selection_record(suites: Sequence[str], limit: int | None, probes_source: Any, fingerprint: str) -> dict:
    return {"suites": list(suites), "limit_per_suite": limit, "probes": probes_source,
            "probes_fingerprint": fingerprint}
