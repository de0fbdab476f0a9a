"""The report's image grids: a few of the run's images per suite, laid out as the papers compare
them, each with its labels under it.

Layouts come from each suite's task (:class:`benchmark.tasks.ImageLayout`): a GEP prompt pair
side by side (woman / man for one context, GEP Sec. 3), a DALL-Eval profession for each gender
indicator (man / woman / person), PST pairs in both orders, MCAS targets per category,
PaintSkills prompts per count N or relation. Labels come from the run's label files and detail
tables: perceived gender, attribute answers, Monk Skin Tone, the detector's answer (right or
wrong), a target's MCAS.

Images are downscaled with PIL to JPEG thumbnails in ``report/thumbnails/`` and referenced by
relative path, so the report folder is self-contained: copy it anywhere and it still shows
them. Images left out of every score are never shown: a placeholder of an image the image API
refused or a supplied folder lacked (``withheld.jsonl``), or an image the safety checker
flagged; the cell says which, in :data:`benchmark.present.text.EXCLUDED_WHY`'s words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from benchmark.annotate.label_files import LABEL_FILES
from benchmark.contract.run_folder import MANIFEST_FILE
from benchmark.contract.withheld import read_withheld
from benchmark.present.text import excluded_why
from benchmark.tasks import ImageLayout

THUMB_DIR = "thumbnails"
THUMB_PX = 144  # longest side of a thumbnail (shown at 120 px)
MAX_IMAGES = 8  # per suite
MAX_PER_GROUP = 4  # images side by side in one group
# Estimators whose 0/1 attribute labels are shown, best first (C / CC labels are raw cosine cuts).
ATTRIBUTE_ESTIMATORS = ("human", "CLS", "vqa closed-set", "vqa generate", "vqa", "CC", "C")


DEFAULT_LAYOUT = ImageLayout("Images")


@dataclass
class Thumb:
    src: str | None  # path relative to report/ (None: not shown, see note)
    prompt: str
    caption: str
    labels: list[str] = field(default_factory=list)
    note: str = ""


@dataclass
class GridRow:
    """A group of images shown side by side (a prompt pair, a profession, a count N)."""

    title: str
    thumbs: list[Thumb]


@dataclass
class Grid:
    suite: str
    title: str
    rows: list[GridRow]
    n_images: int  # images of the suite in the run

    @property
    def n_shown(self) -> int:
        return sum(len(r.thumbs) for r in self.rows)


# --------------------------------------------------------------------------- labels


def _read(path: Path) -> pd.DataFrame | None:
    try:
        return pd.read_parquet(path) if path.is_file() else None
    except Exception:  # a label file being rewritten or of another version: grids without it
        return None


def _detail(run_dir: Path, results: Mapping, name: str) -> pd.DataFrame | None:
    rel = (results.get("details") or {}).get(name)
    return _read(run_dir / rel) if isinstance(rel, str) else None


def _present(v: Any) -> bool:
    if v is None:
        return False
    try:
        return not (isinstance(v, float) and math.isnan(v)) and v is not pd.NA and str(v) != ""
    except TypeError:
        return True


def _plain(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


class Labels:
    """The run's labels per probe id, written as short lines for one image."""

    def __init__(self, run_dir: Path, results: Mapping) -> None:
        self.gender = self._by_probe(_read(LABEL_FILES["gender"].path(run_dir)))
        self.attributes = self._by_probe(_read(LABEL_FILES["attributes"].path(run_dir)))
        self.skin = self._by_probe(_read(LABEL_FILES["skin_tone"].path(run_dir)))

    @staticmethod
    def _by_probe(frame: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
        if frame is None or "probe_id" not in frame.columns or frame.empty:
            return {}
        return {str(k): g for k, g in frame.groupby("probe_id", sort=False)}

    def lines(self, row: Mapping) -> list[str]:
        pid = str(row["probe_id"])
        out = []
        out += self._gender(self.gender.get(pid))
        out += self._attributes(self.attributes.get(pid), row)
        out += self._skin(self.skin.get(pid))
        return out

    @staticmethod
    def _first_annotator(frame: pd.DataFrame) -> pd.DataFrame:
        if "annotator" not in frame.columns or frame["annotator"].nunique() <= 1:
            return frame
        human = frame[frame["annotator"].astype(str).str.startswith("human")]
        return human if len(human) else frame[frame["annotator"] == frame["annotator"].iloc[0]]

    def _gender(self, g: pd.DataFrame | None) -> list[str]:
        if g is None or "label" not in g.columns:
            return []
        g = self._first_annotator(g)
        by_person = {str(p): str(lab) for p, lab in zip(g.get("person", ["single"] * len(g)), g["label"])}
        if set(by_person) >= {"left", "right"}:
            return [f"perceived: left {by_person['left']}, right {by_person['right']}"]
        return [f"perceived gender: {next(iter(by_person.values()))}"] if by_person else []

    def _attributes(self, a: pd.DataFrame | None, row: Mapping) -> list[str]:
        if a is None or not {"attribute", "label", "estimator"} <= set(a.columns):
            return []
        ests = [e for e in ATTRIBUTE_ESTIMATORS if e in set(a["estimator"])] or list(dict.fromkeys(a["estimator"]))
        a = a[a["estimator"] == ests[0]]
        est = ests[0]
        asked = row.get("attribute")
        if _present(asked) and row.get("setting") == "explicit":  # the prompt asks for this attribute
            mine = a[a["attribute"] == asked]
            if len(mine):
                return [f"{asked}? {'yes' if int(mine['label'].iloc[0]) == 1 else 'no'} ({est})"]
        yes = [str(x) for x, lab in zip(a["attribute"], a["label"]) if _present(lab) and int(lab) == 1]
        if not yes:
            return [f"attributes ({est}): none of {len(a)}"]
        more = f" +{len(yes) - 3}" if len(yes) > 3 else ""
        return [f"attributes ({est}): {', '.join(yes[:3])}{more}"]

    @staticmethod
    def _skin(s: pd.DataFrame | None) -> list[str]:
        if s is None or "face_found" not in s.columns:
            return []
        r = s.iloc[0]
        if not bool(r["face_found"]) or not _present(r.get("mst")):
            return ["skin tone: no face found"]
        return [f"skin tone: MST {int(r['mst'])}"]


# --------------------------------------------------------------------------- grids


def _member_rank(layout: ImageLayout, value: Any) -> tuple:
    v = str(value)
    return (layout.order.index(v) if v in layout.order else len(layout.order), v)


def choose_rows(frame: pd.DataFrame, layout: ImageLayout) -> list[tuple[str, pd.DataFrame]]:
    """The grid's groups as (title, rows), at most :data:`MAX_IMAGES` images in all: groups with
    the most distinct members first (complete pairs before halves), then probe order; in each,
    one image per member value, in the layout's order."""
    frame = frame.reset_index(drop=True).assign(_pos=lambda f: range(len(f)))
    group_cols = [c for c in layout.group if c in frame.columns]
    if len(group_cols) < len(layout.group) or not group_cols:
        return [("", frame.head(MAX_IMAGES).drop(columns="_pos"))]
    groups = []
    for key, g in frame.groupby(group_cols, sort=False, dropna=False):
        if layout.member and layout.member in g.columns:
            g = g.drop_duplicates(layout.member)
            g = g.iloc[sorted(range(len(g)), key=lambda i: _member_rank(layout, g[layout.member].iloc[i]))]
        values = key if isinstance(key, tuple) else (key,)
        groups.append((layout.row_title.format(*(_plain(v) for v in values)), g.head(MAX_PER_GROUP)))
    groups.sort(key=lambda tg: (-len(tg[1]), int(tg[1]["_pos"].min())))
    out, n = [], 0
    for t, g in groups:
        if n + len(g) > MAX_IMAGES:
            break
        out.append((t, g.drop(columns="_pos")))
        n += len(g)
    return out


def _caption(row: Mapping, layout: ImageLayout) -> str:
    parts = [_plain(row[c]) for c in layout.caption if c in row and _present(row[c])]
    return " | ".join(parts) if parts else str(row.get("prompt", ""))


def _thumbnail(src: Path, dest: Path) -> None:
    from PIL import Image

    with Image.open(src) as img:
        img = img.convert("RGB")
        img.thumbnail((THUMB_PX, THUMB_PX))
        img.save(dest, format="JPEG", quality=82, optimize=True)


def label_lines(run_dir: Path, results: Mapping, task_of: Mapping[str, Any] | None = None):
    """``row -> [lines]`` written under an image: its labels from the label files, then its
    task's own lines (``TaskReport.image_labels``: e.g. the detector's verdict, a target's MCAS)."""
    labels = Labels(Path(run_dir), results)
    extra = {}
    for suite, task in (task_of or {}).items():
        report = getattr(task, "report", None)
        if report is not None and report.image_labels is not None:
            extra[suite] = report.image_labels(lambda name: _detail(Path(run_dir), results, name))
    return lambda row: labels.lines(row) + (extra[row["suite"]](row) if row.get("suite") in extra else [])


def layout_of(task: Any, rows: pd.DataFrame) -> ImageLayout:
    """The suite's layout from its task's report (a plain grid when it has none)."""
    report = getattr(task, "report", None)
    layout = report.layout(rows) if report is not None and report.layout is not None else None
    return layout or DEFAULT_LAYOUT


def image_grids(run_dir: str | Path, results: Mapping, out_dir: str | Path,
                task_of: Mapping[str, Any] | None = None) -> list[Grid]:
    """One grid per suite with images in RUN_DIR's manifest, thumbnails written to
    ``out_dir/thumbnails/``, laid out by the suite's task (``task_of``: suite -> task); [] when
    the run has no manifest (a bare results file)."""
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    manifest = _read(run_dir / MANIFEST_FILE)
    if manifest is None or not {"probe_id", "suite", "image_path"} <= set(manifest.columns):
        return []
    lines_of = label_lines(run_dir, results, task_of)
    thumbs_dir = out_dir / THUMB_DIR
    thumbs_dir.mkdir(parents=True, exist_ok=True)
    order = [s.get("name") for s in results.get("suites", [])]
    suites = sorted(manifest["suite"].dropna().unique(), key=lambda s: (order.index(s) if s in order else 99, s))
    withheld = read_withheld(run_dir)  # placeholders: refused by the image API, or not supplied
    grids = []
    for suite in suites:
        frame = manifest[manifest["suite"] == suite]
        layout = layout_of((task_of or {}).get(suite), frame)
        rows = []
        for title, chosen in choose_rows(frame, layout):
            thumbs = []
            for r in chosen.to_dict("records"):
                thumb = Thumb(None, str(r.get("prompt", "")), _caption(r, layout), lines_of(r))
                src = run_dir / str(r["image_path"])
                if r.get("nsfw") is True:
                    reason = (withheld.get(str(r.get("probe_id"))) or {}).get("reason") or "nsfw"
                    thumb.note, thumb.labels = f"{excluded_why(reason)}: not shown, not scored", []
                elif not src.is_file():
                    thumb.note = "image file missing"
                else:
                    name = f"{suite}-{sum(len(x.thumbs) for x in rows) + len(thumbs):02d}.jpg"
                    try:
                        _thumbnail(src, thumbs_dir / name)
                        thumb.src = f"{THUMB_DIR}/{name}"
                    except OSError as exc:
                        thumb.note = f"image unreadable ({type(exc).__name__})"
                thumbs.append(thumb)
            rows.append(GridRow(title, thumbs))
        grids.append(Grid(suite, layout.title, rows, int(len(frame))))
    return grids
