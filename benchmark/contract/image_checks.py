"""Degenerate images: blank, constant or non-finite output, counted as the images are written,
and the gate that stops an audit before scoring when too many are.

A model with NaN weights (a LoRA or UNet whose tensors are NaN, a LoRA fused at scale -1e30 or
1e308, fp16 overflow in a VAE) makes black images; diffusers turns its NaN into 0 when it casts
the image to bytes, and numpy's "invalid value encountered in cast" used to be the only sign:
such an audit was scored (a GEP score of 0 and a skin-tone MAD of 0.18, the one-hot value)
with exit 0. Images supplied as a folder or answered by an image API can be blank too (a filter
that blanks instead of refusing).

Every image the generation stage writes, whatever made it, is checked (:func:`degenerate_kind`,
from PIL's per-band extrema: one pass in C, no copy) on the writer's encoder threads:

* ``blank``: one colour, black or white (every band within :data:`FLAT_LEVELS` of 0, or of 255);
* ``constant``: one colour, any other;
* ``non-finite``: one colour, in a batch whose output held NaN or infinity (numpy reported an
  invalid value while the model made it: :class:`NonFiniteWatch`).

A batch's verdicts go to ``RUN_DIR/image_checks.jsonl`` (one line per batch, fsynced before
the batch is renamed into place, the later line of a probe winning, as ``withheld.jsonl``), so a
resumed run keeps the count. :func:`count_degenerate` counts them over the images that would be
scored (those flagged by a safety checker or withheld are left out already), checking the PNG of
any image with no verdict (a folder written before the check existed). :func:`require_usable`
is the gate: past :data:`DEGENERATE_SHARE` of the images the stage stops with one line
(:class:`DegenerateImages`), unless the user allows them (``--allow-degenerate``), in which case
the results say so (:func:`results_block`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from benchmark.contract.run_folder import RunFolderError, read_manifest
from benchmark.contract.run_folder_check import image_path_error

__all__ = ["DEGENERATE_SHARE", "FLAT_LEVELS", "IMAGE_CHECKS_FILE", "KINDS", "KIND_WORDS", "DegenerateCount",
           "DegenerateImages", "NonFiniteWatch", "count_degenerate", "degenerate_kind", "degenerate_text", "kinds_text",
           "record_image_checks", "read_image_checks", "require_usable", "results_block"]

IMAGE_CHECKS_FILE = "image_checks.jsonl"
#: the share of an audit's scored images past which it stops before scoring. A degenerate image's
#: labels are noise, and one image moves a frequency (the share of images with an attribute, of
#: men, of a skin tone: what every score is built from) by at most 1/n: 1% of them move any such
#: frequency by at most 1 point, a fraction of its 95% interval over the images a suite has (a
#: frequency near one half over 150 to 600 images: +-8 to +-4 points); a model that makes more is
#: broken or filtered, and its scores would say more about that than about its bias
DEGENERATE_SHARE = 0.01
#: grey levels (of 255) a band may span and still be one colour: what a lossy codec (JPEG, WebP)
#: leaves of a flat colour. A photograph, even of a white wall, spans tens of levels
FLAT_LEVELS = 2
KINDS = ("non-finite", "blank", "constant")
#: each kind in words, wherever a person reads it (the gate's line, results' notes, report, leaderboard)
KIND_WORDS = {"non-finite": "black from non-finite output", "blank": "blank (black or white)",
              "constant": "of one other colour"}
#: what each kind usually means, said in the gate's line
LIKELY_CAUSES = {
    "non-finite": "NaN or infinite values in the model's output (NaN weights, a LoRA or UNet whose tensors are NaN, a "
                  "LoRA scale such as -1e30, fp16 overflow: try --dtype bfloat16 or float32)",
    "blank": "black or white images (the same causes, or a filter that blanks images instead of refusing them)",
    "constant": "one-colour images (a broken decoder, or a wrapper that returns placeholders)",
}


class DegenerateImages(RunFolderError):
    """Too many degenerate images to score; the message is one line."""


# --------------------------------------------------------------------------- one image


#: where :func:`degenerate_kind` looks first (fractions of the width and height): an image whose
#: samples already span more than FLAT_LEVELS is not one colour, without a pass over its pixels
_SAMPLES = (0.1, 0.3, 0.5, 0.7, 0.9)


def _samples_differ(image: Any) -> bool:
    """Whether 25 pixels on a grid already span more than :data:`FLAT_LEVELS` in some band."""
    w, h = image.size
    pixels = [image.getpixel((int(w * fx), int(h * fy))) for fx in _SAMPLES for fy in _SAMPLES]
    bands = zip(*(p if isinstance(p, tuple) else (p,) for p in pixels))
    return any(max(band) - min(band) > FLAT_LEVELS for band in bands)


def degenerate_kind(image: Any, non_finite: bool = False) -> str | None:
    """``blank``, ``constant`` or, when ``non_finite`` (the batch's output held NaN / inf), ``non-finite``
    for an image of one colour (see the module docstring); None for any other image. Never changes it.
    A photograph is told apart by 25 pixels (:func:`_samples_differ`); only an image whose samples
    agree is read whole (PIL's per-band extrema)."""
    if image.mode not in ("RGB", "RGBA", "L", "LA"):
        image = image.convert("RGB")  # a palette's extrema are indices; 16-bit and float modes are rare
    if _samples_differ(image):
        return None
    extrema = image.getextrema()
    bands = extrema if isinstance(extrema[0], tuple) else (extrema,)
    if any(high - low > FLAT_LEVELS for low, high in bands):
        return None
    if non_finite:
        return "non-finite"
    colour = bands[:3] if image.mode.startswith("RGB") else bands[:1]
    if all(high <= FLAT_LEVELS for _, high in colour) or all(low >= 255 - FLAT_LEVELS for low, _ in colour):
        return "blank"
    return "constant"


class NonFiniteWatch:
    """``with NonFiniteWatch() as watch: model.generate(...)``: ``watch.seen`` is True when numpy met
    an invalid value (NaN or infinity cast to an integer: what a pipeline's NaN output does as it
    becomes an image) in this thread meanwhile. numpy's error state is per thread and context, so
    the writer's threads and other work are not watched; the warning numpy printed is replaced by
    the count (and the gate's line)."""

    def __init__(self) -> None:
        self.seen = False
        self._state = np.errstate(invalid="call", call=self._called)

    def _called(self, kind: str, flag: int) -> None:
        self.seen = True

    def __enter__(self) -> "NonFiniteWatch":
        self._state.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._state.__exit__(*exc)


# --------------------------------------------------------------------------- the record


def record_image_checks(run_dir: str | Path, batch: str, probe_ids: Sequence[str], kinds: Sequence[str | None],
                        non_finite: bool = False) -> None:
    """Append one batch's verdicts to ``image_checks.jsonl`` (fsynced; written before the batch is
    renamed into place, so a batch on disk always has its line)."""
    line = json.dumps({"batch": batch, "checked": [str(p) for p in probe_ids],
                       "degenerate": {str(p): k for p, k in zip(probe_ids, kinds) if k},
                       "non_finite": bool(non_finite)}, ensure_ascii=False) + "\n"
    fd = os.open(Path(run_dir) / IMAGE_CHECKS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:  # one write of one line: lines of several processes never interleave
        os.write(fd, line.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def read_image_checks(run_dir: str | Path) -> dict[str, str | None]:
    """probe_id -> its last verdict (a kind of :data:`KINDS`, or None for a good image); probes
    never checked are absent. A line cut by a kill (its batch was not written either) is skipped."""
    path = Path(run_dir) / IMAGE_CHECKS_FILE
    out: dict[str, str | None] = {}
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
            checked, found = row["checked"], row.get("degenerate") or {}
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
            continue
        for pid in checked if isinstance(checked, list) else ():
            kind = found.get(str(pid)) if isinstance(found, dict) else None
            out[str(pid)] = kind if kind in KINDS else None
    return out


# --------------------------------------------------------------------------- the count and the gate


@dataclass
class DegenerateCount:
    """The degenerate images among the ``n_checked`` images a run would score."""

    n_checked: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)  # a few probe ids, for the line
    n_checked_late: int = 0  # images with no verdict, checked now from their PNG files
    n_unchecked: int = 0  # images whose files could not be read (a folder without its images)

    def add(self, probe_id: str, kind: str | None) -> None:
        """Count one more image and its verdict (None: a good image)."""
        self.n_checked += 1
        if kind:
            self.by_kind[kind] = self.by_kind.get(kind, 0) + 1
            if len(self.examples) < 3:
                self.examples.append(probe_id)

    @property
    def n_degenerate(self) -> int:
        return sum(self.by_kind.values())

    @property
    def share(self) -> float:
        return self.n_degenerate / self.n_checked if self.n_checked else 0.0

    def kinds_text(self) -> str:
        return kinds_text(self.by_kind)

    def line(self, where: str) -> str:
        """What the gate says (one line); ``where``: which images were counted ("images in RUN_DIR")."""
        causes = "; ".join(LIKELY_CAUSES[k] for k in KINDS if self.by_kind.get(k))
        return (f"{self.n_degenerate:,} of {self.n_checked:,} {where} are degenerate ({self.kinds_text()}; "
                f"e.g. {', '.join(self.examples[:2])}), more than the {DEGENERATE_SHARE:.0%} that stops an audit "
                f"before scoring; likely causes: {causes}; fix the model and audit into a new --out folder, or "
                "pass --allow-degenerate to score them anyway (the results are marked)")


def _late_verdicts(run_dir: Path, rows: Iterable[Mapping]) -> dict[str, str | None]:
    """Verdicts of images that have none, checked from their PNG files and recorded per batch; an
    image whose file cannot be read (no image_path, a path out of the folder, a missing or broken
    file: ``t2ibench verify`` names them) gets none."""
    from PIL import Image

    by_batch: dict[str, list[tuple[str, str | None]]] = {}
    for row in rows:
        rel = row.get("image_path")
        if image_path_error(rel) is not None or not (run_dir / rel).is_file():
            continue
        try:
            with Image.open(run_dir / rel) as image:
                kind = degenerate_kind(image)
        except (OSError, ValueError, Image.DecompressionBombError):
            continue
        by_batch.setdefault(str(row.get("batch") or "unknown"), []).append((str(row["probe_id"]), kind))
    out: dict[str, str | None] = {}
    for batch, found in by_batch.items():
        record_image_checks(run_dir, batch, [p for p, _ in found], [k for _, k in found])
        out.update(found)
    return out


def count_degenerate(run_dir: str | Path, manifest: Any = None) -> DegenerateCount:
    """The degenerate images among the images of RUN_DIR's manifest that would be scored (not
    flagged ``nsfw``: a safety checker's black images and the placeholders of withheld probes are
    left out of every score already). ``manifest``: the frame, when the caller has read it."""
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir) if manifest is None else manifest
    if "nsfw" in manifest.columns:
        manifest = manifest[manifest["nsfw"].ne(True).to_numpy()]
    verdicts = read_image_checks(run_dir)
    unchecked = [r for r in manifest.to_dict("records") if str(r["probe_id"]) not in verdicts]
    verdicts.update(_late_verdicts(run_dir, unchecked) if unchecked else {})
    count = DegenerateCount(n_checked_late=sum(str(r["probe_id"]) in verdicts for r in unchecked))
    for pid in manifest["probe_id"]:
        if str(pid) in verdicts:
            count.add(str(pid), verdicts[str(pid)])
        else:
            count.n_unchecked += 1
    return count


def require_usable(run_dir: str | Path, *, allow: bool = False, manifest: Any = None) -> DegenerateCount:
    """The count of :func:`count_degenerate`; :class:`DegenerateImages` (one line) when it is past
    :data:`DEGENERATE_SHARE` and ``allow`` is False."""
    count = count_degenerate(run_dir, manifest)
    if count.share > DEGENERATE_SHARE and not allow:
        raise DegenerateImages(count.line(f"images in {run_dir}"))
    return count


def kinds_text(by_kind: Mapping[str, Any]) -> str:
    """``2 blank (black or white), 1 black from non-finite output`` ("" when none)."""
    return ", ".join(f"{int(by_kind[k]):,} {KIND_WORDS[k]}" for k in KINDS if isinstance(by_kind.get(k), int)
                     and by_kind[k] > 0)


def degenerate_text(block: Any) -> str | None:
    """results.json ``run.degenerate_images`` in words (None when it counts none, or is absent):
    ``3 of 1,000 images are degenerate (3 blank (black or white)), under the 1% that stops an audit
    before scoring: scored with the others``; past the share, ``... scored with --allow-degenerate:
    the scores describe these images as they are``."""
    if not isinstance(block, Mapping) or not isinstance(block.get("n_degenerate"), int) or block["n_degenerate"] <= 0:
        return None
    threshold = block.get("threshold") if isinstance(block.get("threshold"), (int, float)) else DEGENERATE_SHARE
    share = block.get("share") if isinstance(block.get("share"), (int, float)) else 1.0
    why = ("scored with --allow-degenerate: the scores describe these images as they are" if share > threshold else
           f"under the {threshold:.0%} that stops an audit before scoring: scored with the others")
    kinds = kinds_text(block.get("by_kind") if isinstance(block.get("by_kind"), Mapping) else {})
    return (f"{block['n_degenerate']:,} of {int(block.get('n_checked') or 0):,} images are degenerate"
            f"{f' ({kinds})' if kinds else ''}, {why}")


def results_block(count: DegenerateCount, allowed: bool) -> dict:
    """results.json ``run.degenerate_images``: images checked, degenerate ones (by kind) and their
    share, the share that stops an audit, whether they were scored because the user allowed it,
    and the images that could not be checked (their files could not be read)."""
    return {"n_checked": int(count.n_checked), "n_degenerate": int(count.n_degenerate),
            "share": round(count.share, 6), "by_kind": {k: int(count.by_kind.get(k, 0)) for k in KINDS},
            "threshold": DEGENERATE_SHARE, "allowed": bool(allowed), "n_unchecked": int(count.n_unchecked)}
