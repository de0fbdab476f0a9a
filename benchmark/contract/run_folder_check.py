"""Does a run folder still match what its stages wrote? (``t2ibench verify RUN_DIR``)

:func:`check_run_folder` reads the folder without changing it and returns its problems in a
fixed order, the first problem first:

1. ``batch``: a batch directory the runner cannot have written: no or unreadable
   ``metadata.jsonl``, a row without probe id / file name / sha256, a file name that is not a
   plain PNG name, a probe in two batches, a batch not named by its first probe;
   ``file-outside``: a ``metadata.jsonl``, ``manifest.parquet`` or label file (or the sha256
   record beside one) that resolves outside RUN_DIR (a symlink out);
2. ``manifest``: ``manifest.parquet`` missing or unreadable, or a row added, dropped or edited
   (any metadata column, ``batch`` or ``image_path``) compared with the ``metadata.jsonl`` rows
   it is built from; ``image-outside``: a manifest ``image_path`` that leaves ``images/``;
3. ``metadata-sha256``: a batch's ``metadata.jsonl`` whose bytes are not those recorded beside
   it (``metadata.sha256``) when the batch was written: an ``nsfw`` flag or a
   ``model_id`` edited there and in the manifest alike;
4. ``image-outside`` / ``image-missing`` / ``image-sha256``: per metadata row in probe order, the
   PNG resolves outside ``RUN_DIR/images`` (a symlink out), is missing, or its bytes do not hash
   to the recorded sha256 (truncated, replaced, or swapped with another image's);
5. ``orphan-image``: a PNG under ``images/`` that no ``metadata.jsonl`` row lists;
6. ``label-missing``: a label file whose sha256 record (``<file>.sha256``) is left without it
   (deleted); ``label-unreadable``: a ``labels/*.parquet`` file that cannot be read;
   ``label-sha256``: one whose bytes are not those recorded (``<file>.sha256``) when the annotate
   stage wrote it. (``label-schema``, a label file without the columns and types its stage
   writes, e.g. two files swapped with their records, and ``label-missing`` / ``label-rows``, a
   label file deleted with its record, or rows dropped and the record rewritten, against the
   rows the run's annotators owe its images, are found by ``benchmark.runner.expected``.)
7. ``timings``: the run has label files but ``timings.json`` is missing, is not a JSON object,
   or lacks the ``annotate/total`` entry the annotate stage writes when it finishes (the score
   stage reads it to know that annotation finished).

Each PNG is read once (streamed through sha256). The repairs are elsewhere:
``t2ibench run`` (:mod:`benchmark.runner.repair`) regenerates what generation wrote, the
annotate stage rebuilds label files and records ``annotate/total`` in ``timings.json``.
"""

from __future__ import annotations

import json
import mmap
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable

from benchmark.contract import run_folder as rf
from benchmark.contract.digest import file_sha256
from benchmark.contract.written_hashes import SUFFIX, sidecar_path, written_hash_problem

__all__ = ["PROBLEM_KINDS", "LABEL_KINDS", "ANNOTATE_REPAIRS", "ANNOTATE_TOTAL", "Problem", "FolderCheck", "BatchScan", "inspect_run_folder",
           "check_run_folder", "require_intact", "scan_batch_dirs", "image_path_error", "label_file_error",
           "hash_png"]

# In the order they are reported.
PROBLEM_KINDS = ("run-config", "batch", "file-outside", "manifest", "probe-missing", "row-mismatch", "metadata-sha256",
                 "image-outside", "image-missing", "image-sha256", "orphan-image", "label-missing", "label-unreadable",
                 "label-schema", "label-sha256", "label-rows", "timings")
#: kinds of a label file (the annotate stage computes it again); ``label-schema`` and ``label-rows``
#: come from the layer that knows the label files' columns and the annotators
#: (``benchmark.runner.expected``), ``label-missing`` from both
LABEL_KINDS = ("label-missing", "label-unreadable", "label-schema", "label-sha256", "label-rows")
#: what ``t2ibench annotate RUN_DIR`` repairs: the label files and the record that annotation finished
ANNOTATE_REPAIRS = (*LABEL_KINDS, "timings")
#: the entry of ``timings.json`` the annotate stage writes when it finishes
ANNOTATE_TOTAL = "annotate/total"
_PNG_NAME = re.compile(r"^(\d+)\.png$")
_PNG_END = b"IEND\xaeB`\x82"  # the last 8 bytes of every complete PNG (IEND chunk type and CRC)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a run folder: ``where`` is a path relative to RUN_DIR (or a probe id)."""

    kind: str
    where: str
    message: str
    probe_id: str | None = None
    batch: str | None = None  # the batch directory it concerns, where there is one
    behind: bool = False      # only the manifest lagging behind the batches (an unfinished generation)

    def line(self) -> str:
        probe = f" (probe {self.probe_id})" if self.probe_id and self.probe_id != self.where else ""
        return f"{self.where}{probe}: {self.message}"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "where": self.where, "message": self.message, "probe_id": self.probe_id,
                "batch": self.batch}


@dataclass
class BatchScan:
    """One ``images/b*/`` directory as found: its readable rows and what is wrong with it."""

    name: str
    path: Path
    rows: list[dict] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


@dataclass
class FolderCheck:
    """What :func:`inspect_run_folder` looked at, and the problems found (report order)."""

    run_dir: Path
    problems: list[Problem] = field(default_factory=list)
    n_batches: int = 0
    n_images: int = 0          # metadata rows
    n_hashed: int = 0          # PNG files read through sha256
    label_files: list[str] = field(default_factory=list)
    manifest_checked: bool = False
    expected_checked: bool = False  # against the probe list and run_config.json (runner.expected)
    not_expected_why: str | None = None  # why that comparison could not be made here

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        what = [f"{_count(self.n_images, 'image')} in {_count(self.n_batches, 'batch', 'batches')}"]
        if self.n_hashed:
            what.append(f"sha256 of {_count(self.n_hashed, 'PNG file')}")
        if self.manifest_checked:
            what.append(rf.MANIFEST_FILE)
        what.append(_count(len(self.label_files), "label file"))
        if self.expected_checked:
            what.append(f"{rf.CONFIG_FILE} and the probe list it asks for")
        elif self.not_expected_why:
            what.append(f"(the probe list was not checked: {self.not_expected_why})")
        return ", ".join(what)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


# --------------------------------------------------------------------------- small checks


def image_path_error(rel: Any) -> str | None:
    """Why a manifest ``image_path`` cannot be an image of the run (None when it can): it must be
    a relative path ``images/<batch>/<file>.png`` without ``..``."""
    if not isinstance(rel, str) or not rel:
        return f"image_path {rel!r} is not a path"
    if rel.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", rel):
        return f"image_path {rel!r} is absolute: it points outside the run folder"
    parts = PurePosixPath(rel.replace("\\", "/")).parts
    if ".." in parts:
        return f"image_path {rel!r} climbs out with '..': it points outside the run folder"
    if len(parts) != 3 or parts[0] != rf.IMAGES_DIR:
        return f"image_path {rel!r} is not images/<batch>/<file>.png"
    return None


def resolves_inside(path: Path, root: Path) -> bool:
    """True when ``path`` (symlinks followed) lies inside ``root`` (itself resolved)."""
    try:
        path.resolve().relative_to(root)
        return True
    except (ValueError, OSError, RuntimeError):  # elsewhere, or a symlink loop
        return False


def hash_png(path: Path) -> tuple[str, int | None]:
    """(sha256 hex digest, bytes after the last PNG end chunk: 0 for a complete PNG, None when
    the file holds no end chunk, i.e. it was cut short). The end chunk is looked for in a memory
    map of the file, so a large file is never read into memory."""
    sha = file_sha256(path)
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        if not size:  # an empty file cannot be mapped
            return sha, None
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            found = mapped.rfind(_PNG_END)
    return sha, None if found < 0 else size - found - len(_PNG_END)


def label_file_error(path: Path) -> str | None:
    """Why a label parquet file cannot be read (None when every row group reads)."""
    import pyarrow.parquet as pq

    try:
        pq.read_table(path)
    except Exception as exc:  # pyarrow raises several kinds (ArrowInvalid, OSError...) for damaged files
        return f"cannot be read ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'})"
    return None


# --------------------------------------------------------------------------- batches


def _batch_dirs(run_dir: Path) -> list[Path]:
    root = rf.images_dir(run_dir)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and rf._BATCH_RE.match(p.name))


def _scan_one(batch_dir: Path) -> BatchScan:
    scan = BatchScan(batch_dir.name, batch_dir)
    rel = f"{rf.IMAGES_DIR}/{batch_dir.name}"
    meta = batch_dir / rf.METADATA_FILE

    def bad(msg: str, probe_id: str | None = None) -> None:
        scan.problems.append(Problem("batch", f"{rel}/{rf.METADATA_FILE}" if meta.exists() else rel, msg,
                                     probe_id, batch_dir.name))

    if not meta.is_file():
        bad(f"{rel} has no {rf.METADATA_FILE}: the runner did not finish writing it")
        return scan
    try:
        lines = meta.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        bad(f"cannot be read ({exc})")
        return scan
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            bad(f"line {n} is not JSON ({exc.msg})")
            continue
        if not isinstance(row, dict) or not all(isinstance(row.get(k), str) and row.get(k)
                                                for k in ("probe_id", "file_name", "sha256")):
            bad(f"line {n} lacks probe_id, file_name or sha256")
            continue
        m = _PNG_NAME.match(row["file_name"])
        if not m:
            bad(f"line {n}: file_name {row['file_name']!r} is not a plain PNG name", row["probe_id"])
            continue
        if not isinstance(row.get("probe_index"), int) or int(m.group(1)) != row["probe_index"]:
            bad(f"line {n}: file_name {row['file_name']!r} does not match probe_index {row.get('probe_index')!r}",
                row["probe_id"])
            continue
        scan.rows.append(row)
    if scan.rows and min(r["probe_index"] for r in scan.rows) != int(batch_dir.name[1:]):
        bad(f"{rel} lacks the row of its first probe (probe_index {int(batch_dir.name[1:])}): "
            f"a metadata row was removed")
    return scan


def scan_batch_dirs(run_dir: str | Path) -> list[BatchScan]:
    """Every ``images/b*/`` directory, read tolerantly (problems collected, nothing raised); a
    probe found in two batches is a problem of the later one."""
    scans = [_scan_one(d) for d in _batch_dirs(Path(run_dir))]
    seen: dict[str, str] = {}
    for scan in scans:
        for row in scan.rows:
            pid = row["probe_id"]
            if pid in seen:
                scan.problems.append(Problem("batch", f"{rf.IMAGES_DIR}/{scan.name}/{rf.METADATA_FILE}",
                                             f"probe is also in {rf.IMAGES_DIR}/{seen[pid]}", pid, scan.name))
            else:
                seen[pid] = scan.name
    return scans


# --------------------------------------------------------------------------- files outside, batch records


def _outside(root: Path, path: Path) -> bool:
    return (path.is_symlink() or path.exists()) and not resolves_inside(path, root)


def _outside_problems(run_dir: Path, scans: list[BatchScan]) -> list[Problem]:
    """``file-outside``: a file the later stages read (or the sha256 record beside it) that
    resolves outside RUN_DIR: metadata.jsonl, manifest.parquet, label files."""
    root = run_dir.resolve()
    out = []
    for scan in scans:
        meta = scan.path / rf.METADATA_FILE
        for path in (meta, scan.path / rf.METADATA_RECORD):
            if _outside(root, path):
                out.append(Problem("file-outside", path.relative_to(run_dir).as_posix(),
                                   "resolves outside the run folder (a symlink out)", None, scan.name))
                break
    if _outside(root, run_dir / rf.MANIFEST_FILE):
        out.append(Problem("file-outside", rf.MANIFEST_FILE, "resolves outside the run folder (a symlink out)"))
    for path in label_files(run_dir):
        rel = path.relative_to(run_dir).as_posix()
        if _outside(root, path):
            out.append(Problem("file-outside", rel, "resolves outside the run folder (a symlink out)"))
        elif _outside(root, sidecar_path(path)):
            out.append(Problem("file-outside", rel, f"its recorded sha256 ({sidecar_path(path).name}) resolves "
                               "outside the run folder (a symlink out)"))
    return out


def _metadata_record_problems(run_dir: Path, scans: list[BatchScan], skip: set[str]) -> list[Problem]:
    """``metadata-sha256``: a batch's metadata.jsonl that is not the file the runner wrote."""
    out = []
    for scan in scans:
        meta = scan.path / rf.METADATA_FILE
        if scan.name in skip or scan.problems or not meta.is_file():
            continue  # already reported (no metadata, an unreadable row, a file outside)
        edited = written_hash_problem(meta, scan.path / rf.METADATA_RECORD)
        if edited:
            out.append(Problem("metadata-sha256", f"{rf.IMAGES_DIR}/{scan.name}/{rf.METADATA_FILE}",
                               edited.replace("the file was edited", "a row was edited (an nsfw flag, a "
                                              "model_id...)"), None, scan.name))
    return out


# --------------------------------------------------------------------------- manifest


def comparable(value: Any) -> Any:
    """A value as it compares after a parquet round trip (arrays -> tuples, NaN -> None)."""
    value = rf.plain_value(value)
    if isinstance(value, list):
        return tuple(comparable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, comparable(v)) for k, v in value.items()))
    return value


def _same(a: Any, b: Any) -> bool:
    if type(a) is type(b) and (a is None or isinstance(a, (str, int))):  # most cells: no normalising needed
        return a == b
    return comparable(a) == comparable(b)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _manifest_problems(run_dir: Path, rows: list[dict]) -> list[Problem]:
    """The manifest against the metadata rows (with ``batch`` and ``image_path`` added)."""
    path = run_dir / rf.MANIFEST_FILE
    if not path.is_file():
        return [Problem("manifest", rf.MANIFEST_FILE, "missing: the generation stage did not finish",
                        behind=True)] if rows else []
    try:
        import pandas as pd

        manifest = pd.read_parquet(path)
    except Exception as exc:
        return [Problem("manifest", rf.MANIFEST_FILE, f"cannot be read ({type(exc).__name__})")]
    if "probe_id" not in manifest.columns:
        return [Problem("manifest", rf.MANIFEST_FILE, "has no probe_id column")]
    out: list[Problem] = []
    records = manifest.to_dict("records")
    by_id: dict[str, dict] = {}
    for r in records:
        pid = str(r["probe_id"])
        if pid in by_id:
            out.append(Problem("manifest", rf.MANIFEST_FILE, "lists this probe twice", pid))
        by_id[pid] = r
    expected = {r["probe_id"]: r for r in rows}
    columns = set(manifest.columns)
    lacking = sorted({k for r in rows for k in r} - columns)
    if lacking:
        out.append(Problem("manifest", rf.MANIFEST_FILE, f"lacks column {lacking[0]!r} of {rf.METADATA_FILE}"))
    for row in rows:  # probe order
        pid = row["probe_id"]
        got = by_id.get(pid)
        if got is None:
            out.append(Problem("manifest", rf.MANIFEST_FILE, f"lacks the row of {row['image_path']} "
                               f"(a row was dropped, or the generation stage did not finish)", pid, row["batch"],
                               behind=True))
            continue
        if "image_path" in got and got["image_path"] != row["image_path"] and image_path_error(got["image_path"]):
            out.append(Problem("image-outside", rf.MANIFEST_FILE, image_path_error(got["image_path"]), pid,
                               row["batch"]))
            continue
        diffs = [c for c in row if c in columns and not _same(got.get(c), row[c])]
        if diffs:
            c = diffs[0]
            more = f" (and {len(diffs) - 1} more columns)" if len(diffs) > 1 else ""
            out.append(Problem("manifest", rf.MANIFEST_FILE, f"{c} is {_shown(comparable(got.get(c)))} but "
                               f"{row['batch']}/{rf.METADATA_FILE} says {_shown(comparable(row[c]))}{more}",
                               pid, row["batch"]))
    for r in records:
        pid = str(r["probe_id"])
        if pid not in expected:
            err = image_path_error(r.get("image_path")) if "image_path" in r else None
            kind, msg = ("image-outside", err) if err else \
                ("manifest", "has a row that no metadata.jsonl lists (a row was added, or its batch removed)")
            out.append(Problem(kind, rf.MANIFEST_FILE, msg, pid))
    return out


# --------------------------------------------------------------------------- images


def _image_problems(run_dir: Path, rows: list[dict], verify_sha256: bool, check: FolderCheck) -> list[Problem]:
    root = rf.images_dir(run_dir).resolve()
    recorded = {r["sha256"]: r["image_path"] for r in rows}
    out: list[Problem] = []
    for row in rows:
        rel, pid, batch = row["image_path"], row["probe_id"], row["batch"]
        path = run_dir / rel
        if path.is_symlink() or path.exists():
            if not resolves_inside(path, root):
                out.append(Problem("image-outside", rel, "resolves outside the run's images/ folder (a symlink out)",
                                   pid, batch))
                continue
        if not path.is_file():
            out.append(Problem("image-missing", rel, f"listed in {batch}/{rf.METADATA_FILE} but missing", pid, batch))
            continue
        if not verify_sha256:
            continue
        try:
            sha, after_end = hash_png(path)
        except OSError as exc:
            out.append(Problem("image-missing", rel, f"cannot be read ({exc.strerror or exc})", pid, batch))
            continue
        check.n_hashed += 1
        if sha == row["sha256"]:
            continue
        if sha in recorded and recorded[sha] != rel:
            why = f"holds the bytes of {recorded[sha]} (images swapped)"
        elif after_end is None:
            why = "is truncated (no PNG end chunk)"
        elif after_end:
            why = f"has {after_end} bytes appended after the PNG's end chunk"
        else:
            why = "was replaced or edited"
        out.append(Problem("image-sha256", rel, f"bytes do not match the sha256 in {rf.METADATA_FILE}: the file {why}",
                           pid, batch))
    return out


def _orphans(run_dir: Path, rows: Iterable[dict]) -> list[Problem]:
    root = rf.images_dir(run_dir)
    if not root.is_dir():
        return []
    listed = {r["image_path"] for r in rows}
    out = []
    for path in sorted(root.rglob("*.png")):
        rel = path.relative_to(run_dir).as_posix()
        if rel not in listed:
            parts = path.relative_to(root).parts
            batch = parts[0] if len(parts) == 2 and rf._BATCH_RE.match(parts[0]) else None
            out.append(Problem("orphan-image", rel, f"no {rf.METADATA_FILE} row lists this PNG", None, batch))
    return out


# --------------------------------------------------------------------------- labels


def label_files(run_dir: str | Path) -> list[Path]:
    root = Path(run_dir) / rf.LABELS_DIR
    return sorted(root.glob("*.parquet")) if root.is_dir() else []


def _label_problems(run_dir: Path, check: FolderCheck, skip: set[str]) -> list[Problem]:
    out = []
    root = run_dir / rf.LABELS_DIR
    for record in sorted(root.glob(f"*.parquet{SUFFIX}")) if root.is_dir() else []:
        path = record.with_name(record.name[:-len(SUFFIX)])
        if not (path.exists() or path.is_symlink()):
            out.append(Problem("label-missing", path.relative_to(run_dir).as_posix(), f"missing: the annotate stage "
                               f"wrote it (its recorded sha256, {record.name}, is there) and it was deleted"))
    for path in label_files(run_dir):
        rel = path.relative_to(run_dir).as_posix()
        check.label_files.append(rel)
        if rel in skip:  # outside the run folder: reported, not read
            continue
        err = label_file_error(path)
        if err:
            out.append(Problem("label-unreadable", rel, err))
            continue
        edited = written_hash_problem(path)
        if edited:
            out.append(Problem("label-sha256", rel, edited))
    return out


def timings_document(run_dir: str | Path) -> tuple[dict | None, str | None]:
    """(RUN_DIR's timings.json as a JSON object, None) or (None, why it cannot be: missing, not
    JSON, not an object)."""
    path = Path(run_dir) / rf.TIMINGS_FILE
    if not path.is_file():
        return None, "missing"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None, f"is not valid JSON ({str(exc).splitlines()[0][:80]})"
    return (doc, None) if isinstance(doc, dict) else (None, "is not a JSON object")


def _timings_problems(run_dir: Path, has_labels: bool) -> list[Problem]:
    """``timings``: label files without the record that the annotate stage finished."""
    if not has_labels:
        return []
    doc, why = timings_document(run_dir)
    if doc is not None and isinstance(doc.get(ANNOTATE_TOTAL), dict):
        return []
    what = why or f"has no {ANNOTATE_TOTAL!r} entry"
    return [Problem("timings", rf.TIMINGS_FILE, f"{what}, so the score stage cannot tell that annotation finished "
                    "(the label files are there)")]


# --------------------------------------------------------------------------- the check


#: ``(run_dir, rows) -> (problems, why the check could not run or None)``: a check of the folder
#: against what its run asked for, given by the layer that can rebuild probe lists (the runner)
ExpectedCheck = Callable[[Path, list], tuple[list, "str | None"]]


def inspect_run_folder(run_dir: str | Path, *, verify_sha256: bool = True, manifest: bool = True,
                       labels: bool = True, scans: list[BatchScan] | None = None,
                       expected: ExpectedCheck | None = None) -> FolderCheck:
    """Check RUN_DIR (see the module docstring); raises ``RunFolderError`` when it is not a run
    folder at all (no ``run_config.json``). ``scans``: the batches as
    :func:`scan_batch_dirs` just read them (read here otherwise). ``expected``: also against
    what the run was asked for: ``expected(run_dir, rows) -> (problems, why not checked)``
    (:func:`benchmark.runner.expected.expected_problems`: verify, annotate, score pass it)."""
    run_dir = Path(run_dir)
    if not (run_dir / rf.CONFIG_FILE).is_file():
        raise rf.RunFolderError(f"{run_dir} is not a run folder (no {rf.CONFIG_FILE}); make one with `t2ibench run`")
    check = FolderCheck(run_dir)
    scans = scan_batch_dirs(run_dir) if scans is None else scans
    rows: list[dict] = []
    seen: set[str] = set()
    for scan in scans:
        check.problems += scan.problems
        for row in scan.rows:
            if row["probe_id"] in seen:
                continue  # reported as a batch problem; its image is checked once
            seen.add(row["probe_id"])
            rows.append({**row, "batch": scan.name, "image_path": f"{rf.IMAGES_DIR}/{scan.name}/{row['file_name']}"})
    rows.sort(key=lambda r: r["probe_index"])
    check.n_batches, check.n_images = len(scans), len(rows)
    outside = _outside_problems(run_dir, scans)
    if not labels:
        outside = [p for p in outside if not p.where.startswith(f"{rf.LABELS_DIR}/")]
    check.problems += outside
    outside_at = {p.batch or p.where for p in outside}
    if manifest:
        check.manifest_checked = True
        check.problems += _manifest_problems(run_dir, rows)
    found: list[Problem] = []
    if expected is not None:
        found, check.not_expected_why = expected(run_dir, rows)
        check.expected_checked = check.not_expected_why is None
        check.problems = ([p for p in found if p.kind == "run-config"] + check.problems
                          + [p for p in found if p.kind != "run-config" and p.kind not in LABEL_KINDS])
    check.problems += _metadata_record_problems(run_dir, scans, outside_at)
    check.problems += _image_problems(run_dir, rows, verify_sha256, check)
    check.problems += _orphans(run_dir, rows)
    if labels:
        label_found = _label_problems(run_dir, check, outside_at)
        damaged = outside_at | {p.where for p in label_found}
        expected_labels = {}  # one problem per file: a file's own damage first, then its columns, then its rows
        for p in found:
            if p.kind in LABEL_KINDS and p.where not in damaged:
                expected_labels.setdefault(p.where, p)
        check.problems += sorted(label_found + list(expected_labels.values()),
                                 key=lambda p: (p.where, LABEL_KINDS.index(p.kind)))
        check.problems += _timings_problems(run_dir, bool(check.label_files or label_found))
    return check


def check_run_folder(run_dir: str | Path, *, verify_sha256: bool = True,
                     expected: ExpectedCheck | None = None) -> list[Problem]:
    """The problems of RUN_DIR in report order (empty when it matches its files and, with
    ``expected``, what its run asked for)."""
    return inspect_run_folder(run_dir, verify_sha256=verify_sha256, expected=expected).problems


def require_intact(run_dir: str | Path, stage: str, *, labels: bool = True,
                   expected: ExpectedCheck | None = None) -> FolderCheck:
    """Refuse (one-line ``RunFolderError``) a run folder with problems, before ``stage`` works on
    it; ``labels=False`` leaves the label files out (the annotate stage rebuilds them itself)."""
    check = inspect_run_folder(run_dir, labels=labels, expected=expected)
    if check.problems:
        first = check.problems[0]
        more = f" (and {len(check.problems) - 1} more)" if len(check.problems) > 1 else ""
        fix = (f"`t2ibench annotate {run_dir} --force` rebuilds it" if first.kind == "label-schema"
               else f"`t2ibench annotate {run_dir}` repairs it" if first.kind in ANNOTATE_REPAIRS
               else "no command repairs it: restore the file or start the run again in another folder"
               if first.kind == "run-config" else "`t2ibench run` with the run's arguments repairs it")
        raise rf.RunFolderError(f"{stage} refused: {run_dir} does not match its files: {first.line()}{more}; "
                                f"{fix}, `t2ibench verify {run_dir}` lists every problem")
    return check
