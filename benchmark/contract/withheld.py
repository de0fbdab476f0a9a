"""Probes whose image the model withheld or the user did not supply, and why.

Such a probe still gets a row in the run folder, as a safety checker's refusal does: a black
placeholder image flagged ``nsfw`` so that every stage leaves it out of every score, plus a
line in ``withheld.jsonl`` with the reason: ``refused`` (an image API's content-policy
refusal, with its message), ``missing`` (no file for it in the folder of ``--images
--allow-missing``), or one of :data:`UNSCORABLE`, an image the API returned that the benchmark
itself does not score (:class:`benchmark.contract.image_provenance.UnscorableImage`: ``too large``
for the size asked or the pixel limit, ``tiny``, ``transparent``, ``not colour``). The score stage
counts them by reason (results.json ``run.n_withheld``) instead of calling them safety-checker
flags, and keeps the benchmark's own refusals apart from the API's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Mapping

WITHHELD_FILE = "withheld.jsonl"
#: why the benchmark itself withholds an image it was given (its rule for images from elsewhere)
UNSCORABLE = ("too large", "tiny", "transparent", "not colour")
REASONS = ("refused", "missing", *UNSCORABLE)


def placeholder_image(size: tuple[int, int]):
    """A black RGB image, what diffusers returns for an image its safety checker refused."""
    from PIL import Image

    return Image.new("RGB", size, (0, 0, 0))


def record_withheld(run_dir: str | Path, entries: Iterable[Mapping]) -> None:
    """Append ``{"probe_id", "reason", "message"}`` lines (fsynced before the batch is written;
    a later line for the same probe replaces an earlier one)."""
    lines = []
    for e in entries:
        if e.get("reason") not in REASONS:
            raise ValueError(f"withheld reason must be one of {REASONS}, got {e.get('reason')!r}")
        lines.append(json.dumps({"probe_id": str(e["probe_id"]), "reason": e["reason"],
                                 "message": str(e.get("message") or "")}, ensure_ascii=False) + "\n")
    if not lines:
        return
    path = Path(run_dir) / WITHHELD_FILE
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(lines))
        fh.flush()
        os.fsync(fh.fileno())


def read_withheld(run_dir: str | Path) -> dict[str, dict]:
    """probe_id -> its last withheld record (empty when the run has none)."""
    path = Path(run_dir) / WITHHELD_FILE
    out: dict[str, dict] = {}
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by a kill: its batch was not written either, so the probe is redone
            out[str(row.get("probe_id"))] = row
    return out


def withheld_counts(run_dir: str | Path, flagged_probe_ids: Iterable[str]) -> dict[str, int]:
    """Per reason, how many of the flagged (nsfw) images of the manifest are withheld ones."""
    records = read_withheld(run_dir)
    counts = {r: 0 for r in REASONS}
    for pid in flagged_probe_ids:
        rec = records.get(str(pid))
        if rec is not None and rec.get("reason") in counts:
            counts[rec["reason"]] += 1
    return counts
