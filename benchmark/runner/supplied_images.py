"""Audit a folder of images made elsewhere (``t2ibench run --images DIR --model-name NAME``).

The folder is matched to the probes of the selection (the rows of ``t2ibench probes export``
with the same arguments): by the sheet's file names, or by a CSV ``probe_id,path`` (or
``probe_id,sample,path``) mapping. Every file is checked before anything is written
(decodable, RGB, size, duplicate bytes, files that match no probe, probes with no file); a
probe with no file stops the run with one line naming it unless ``allow_missing``, which
gives it a placeholder flagged like a safety checker's refusal and counts it
(:mod:`benchmark.contract.withheld`). The images are then copied into a normal run folder by the
generation stage (manifest with sha256, so ``verify`` and resume work), and annotated,
scored and reported as usual.
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import pandas as pd

from benchmark.contract.digest import sha256_hex, sha256_hex_chunks
from benchmark.contract import run_folder as rf
from benchmark.contract.image_provenance import (MAX_PIXELS, MIN_SIDE, check_scorable_image, load_scorable_image,
                                                 supplied_provenance)
from benchmark.contract.audit_request import AuditRequest
from benchmark.models.generation_output import GenerationOutput
from benchmark.probes.sheet import IMAGE_SUFFIXES, selection_record, sheet_table
from benchmark.runner.finish import AuditOutcome, finish_audit
from benchmark.runner.generate import generate
from benchmark.runner.probe_choice import choose_probes, probes_fingerprint
from benchmark.runner.run_config import check_resume
from benchmark.runner.preflight import plan_for
from benchmark.contract.withheld import placeholder_image

__all__ = ["SuppliedImage", "SuppliedFolder", "SuppliedImagesModel", "match_folder", "check_folder",
           "folder_fingerprint", "check_image", "check_scorable_image", "load_scorable_image", "MIN_SIDE",
           "MAX_PIXELS"]


@dataclass
class SuppliedImage:
    probe_id: str
    path: Path
    sha256: str
    size: tuple[int, int] = (0, 0)


@dataclass
class SuppliedFolder:
    """The folder matched to the probes: a file per probe (``found``), the probes with none."""

    folder: Path
    found: dict[str, SuppliedImage] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    expected_name: dict[str, str] = field(default_factory=dict)  # probe_id -> the sheet's file name

    def sizes(self) -> dict[tuple[int, int], int]:
        out: dict[tuple[int, int], int] = {}
        for im in self.found.values():
            out[im.size] = out.get(im.size, 0) + 1
        return out


def _refuse(problem: str, paths: list, what: str) -> None:
    more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
    raise ValueError(f"{problem}: {paths[0]}{more}; {what}")


def _match_by_name(folder: Path, sheet: pd.DataFrame) -> dict[str, Path]:
    by_stem = {Path(n).stem: pid for pid, n in zip(sheet["probe_id"], sheet["file_name"])}
    found: dict[str, Path] = {}
    unmatched, doubled = [], []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES):
        pid = by_stem.get(path.stem)
        if pid is None:
            unmatched.append(path.relative_to(folder))
        elif pid in found:
            doubled.append(path.relative_to(folder))
        else:
            found[pid] = path
    if unmatched:
        _refuse(f"{len(unmatched)} image file(s) in {folder} match no probe of this selection", unmatched,
                "name each as the sheet's file_name (t2ibench probes export with the same --suites/--limit), "
                "or give a --mapping CSV")
    if doubled:
        _refuse("two files for the same probe", doubled, "keep one image per probe")
    return found


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` lies in ``folder`` once ``..`` and symbolic links are resolved."""
    try:
        path.resolve().relative_to(folder.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def _match_by_mapping(folder: Path, mapping: Path, probes: pd.DataFrame) -> dict[str, Path]:
    """CSV rows ``probe_id,path`` or ``probe_id,sample,path`` (probe_id then names the prompt, the
    id without its ``/NN`` sample suffix); paths relative to ``folder``."""
    ids = set(probes["probe_id"])
    by_prompt = {(str(p).rsplit("/", 1)[0], int(s)): p for p, s in zip(probes["probe_id"], probes["sample_index"])}
    try:
        with open(mapping, newline="", encoding="utf-8-sig") as fh:  # a BOM (Excel's "CSV UTF-8") is dropped
            rows = list(csv.DictReader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise ValueError(f"--mapping {mapping} cannot be read as CSV ({type(err).__name__})") from None
    if not rows or not {"probe_id", "path"} <= set(rows[0]):
        raise ValueError(f"--mapping {mapping} needs the columns probe_id,path (or probe_id,sample,path)")
    found: dict[str, Path] = {}
    for line, row in enumerate(rows, start=2):
        pid = str(row["probe_id"]).strip()
        sample = str(row.get("sample") or "").strip()
        if pid not in ids and sample.isdigit():
            pid = by_prompt.get((pid, int(sample)), pid)
        if pid not in ids:
            raise ValueError(f"--mapping {mapping} line {line}: probe {pid!r} is not in this selection")
        if pid in found:
            raise ValueError(f"--mapping {mapping} line {line}: probe {pid!r} is mapped twice")
        raw = str(row["path"] or "").strip()
        path = folder / raw
        if not raw or PurePosixPath(raw).is_absolute() or PureWindowsPath(raw).is_absolute() \
                or PureWindowsPath(raw).drive or not _inside(path, folder):
            raise ValueError(f"--mapping {mapping} line {line}: path {raw!r} is not inside {folder}: paths are "
                             "relative to the --images folder, without '..'")
        if not path.is_file():
            raise ValueError(f"--mapping {mapping} line {line}: {path} is not a file")
        found[pid] = path
    return found


def check_image(path: Path) -> tuple[str, tuple[int, int]]:
    """(sha256 of the file's bytes, (width, height)); a one-line ValueError when the file is
    not an image the benchmark can score (:func:`benchmark.contract.image_provenance.check_scorable_image`:
    the size is read from the header before anything is decoded)."""
    data = path.read_bytes()
    size = check_scorable_image(data, label=str(path))
    return sha256_hex(data), size


def match_folder(folder: str | Path, probes: pd.DataFrame, mapping: str | Path | None = None) -> SuppliedFolder:
    """Match ``folder`` to ``probes`` (the limited selection) and check every file; raises a
    one-line ValueError on the first problem. Missing probes are returned, not refused."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"--images {folder} is not a folder")
    sheet = sheet_table(probes)
    paths = _match_by_mapping(folder, Path(mapping), probes) if mapping else _match_by_name(folder, sheet)
    out = SuppliedFolder(folder=folder, expected_name=dict(zip(sheet["probe_id"], sheet["file_name"])))
    first_of: dict[str, str] = {}
    for pid in probes["probe_id"]:
        if pid not in paths:
            out.missing.append(pid)
            continue
        sha, size = check_image(paths[pid])
        if sha in first_of:
            raise ValueError(f"{paths[pid]} has the same bytes as the image of {first_of[sha]}: every probe needs "
                             "its own image")
        first_of[sha] = pid
        out.found[pid] = SuppliedImage(pid, paths[pid], sha, size)
    return out


def check_folder(supplied: SuppliedFolder, allow_missing: bool) -> None:
    """The refusal of a folder with probes that have no file, unless ``allow_missing``."""
    if supplied.missing and not allow_missing:
        pid = supplied.missing[0]
        more = f" and {len(supplied.missing) - 1} more" if len(supplied.missing) > 1 else ""
        raise ValueError(f"{supplied.folder} has no image for probe {pid} (file {supplied.expected_name[pid]}){more}; "
                         "add it, or pass --allow-missing to audit without it (counted as missing in the results)")
    if not supplied.found:
        raise ValueError(f"{supplied.folder} has no image for any probe of this selection")


def folder_fingerprint(supplied: SuppliedFolder) -> str:
    """sha256 over (probe_id, sha256 of its file) of every supplied image, and the missing ids:
    a resume refuses a folder that changed since the run began."""
    return sha256_hex_chunks([*(f"{pid}\x1f{supplied.found[pid].sha256}\x1e".encode() for pid in sorted(supplied.found)),
                              *(f"{pid}\x1fmissing\x1e".encode() for pid in sorted(supplied.missing))])


class SuppliedImagesModel:
    """A "model" whose images are the supplied files: the generation stage writes them into the
    run folder as it writes a generator's (atomic batches, manifest, resume)."""

    is_builtin = False
    revision = None

    def __init__(self, name: str, supplied: SuppliedFolder, provenance: dict | None = None):
        self.model_id = name
        self.supplied = supplied
        self.provenance = provenance  # recorded in run_config.json (benchmark.contract.image_provenance)
        self.settings: dict[str, Any] = {"kind": "images supplied"}
        sizes = supplied.sizes()
        self._placeholder_size = max(sizes, key=sizes.get) if sizes else (512, 512)

    def generate_probes(self, rows: list[dict]):
        images, flags, withheld = [], [], []
        for row in rows:
            item = self.supplied.found.get(row["probe_id"])
            if item is None:
                images.append(placeholder_image(self._placeholder_size))
                flags.append(True)
                withheld.append({"probe_id": row["probe_id"], "reason": "missing",
                                 "message": f"no file {self.supplied.expected_name.get(row['probe_id'])}"})
                continue
            images.append(load_scorable_image(item.path))
            flags.append(None)
        return GenerationOutput(images=images, nsfw=flags, withheld=withheld)


def _check_supplied_by(run_dir: Path, supplied_by: str | None) -> None:
    """Who supplied the images is part of the run's identity: a rerun into the folder with another
    ``--supplied-by`` is refused (before the folder's images are read), never silently ignored."""
    recorded = (rf.read_run_config(run_dir) or {}).get("provenance")
    if not isinstance(recorded, dict) or "supplied_by" not in recorded:
        return
    asked = supplied_provenance(supplied_by=supplied_by, selection={}, folder_sha256="", n_supplied=0,
                                n_missing=0, matched_by="")["supplied_by"]
    if recorded.get("supplied_by") != asked:
        raise rf.RunFolderError(f"{run_dir} was started with --supplied-by {str(recorded.get('supplied_by'))!r}, "
                                f"not {asked!r}: who made the images is part of the run; rerun with the same "
                                "--supplied-by, or choose another --out folder")


def _check_resume(run_dir: Path, provenance: dict) -> None:
    recorded = (rf.read_run_config(run_dir) or {}).get("provenance")
    if recorded and recorded.get("images_sha256") != provenance["images_sha256"]:
        raise rf.RunFolderError(f"{run_dir} was started from other images (the folder's files changed since); "
                                "choose another --out folder")


def plan_supplied(request: AuditRequest, supplied: SuppliedFolder, chosen: Any) -> Any:
    """The plan printed before the images are copied, with the annotators checked (one line)."""
    sizes = ", ".join(f"{w}x{h} ({n})" for (w, h), n in sorted(supplied.sizes().items(), key=lambda kv: -kv[1]))
    settings = {"images": str(supplied.folder), "sizes": sizes}
    if supplied.missing:
        settings["missing (counted)"] = f"{len(supplied.missing)}, e.g. {supplied.missing[0]}"
    return plan_for(request, chosen, model=request.images.model_name,
                    pipeline="images supplied; seeds not controlled by the benchmark", settings=settings)


def run_supplied_audit(request: AuditRequest):
    """Check the folder ``request.images`` against the selection, print the plan, copy the images
    into ``request.run_dir`` and run annotate, score and report. Nothing is written when a check
    fails."""
    run_dir, given = request.run_dir, request.images
    _check_supplied_by(run_dir, given.supplied_by)
    chosen = choose_probes(request.probes, run_dir=run_dir)
    supplied = match_folder(given.folder, chosen.limited, given.mapping)
    check_folder(supplied, given.allow_missing)
    limit = request.probes.limit_per_suite
    selection = selection_record(chosen.suites, limit, request.probes.source, probes_fingerprint(chosen.limited))
    provenance = supplied_provenance(supplied_by=given.supplied_by, selection=selection,
                                     folder_sha256=folder_fingerprint(supplied), n_supplied=len(supplied.found),
                                     n_missing=len(supplied.missing),
                                     matched_by="mapping" if given.mapping else "file name")
    check_resume(request, chosen)
    _check_resume(run_dir, provenance)
    plan = plan_supplied(request, supplied, chosen)
    if request.progress:
        print(plan.format(), file=sys.stderr)
    model = SuppliedImagesModel(given.model_name, supplied, provenance)
    gen = generate(request, model, chosen)
    outcome = AuditOutcome(run_dir=run_dir, stage_seconds={"copy images": sum(gen.timings.values())})
    return finish_audit(request, outcome)
