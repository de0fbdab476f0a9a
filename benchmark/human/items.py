"""The items to label in a run folder: one question about one image, as the image's task asks
it (``Task.human_questions``), and the app's way through them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from benchmark.contract.run_folder import IMAGES_DIR, MANIFEST_FILE, read_manifest
from benchmark.human import questions as q
from benchmark.contract.times import utc_iso_ms
from benchmark.human.question_types import QUESTION_TYPES
from benchmark.human.replay import done_item_ids
from benchmark.probes.registry import default_config_path, load_config
from benchmark.tasks import Task
from benchmark.tasks.of_run import tasks_of_run


@dataclass(frozen=True)
class Item:
    """One question about one image."""

    item_id: str
    probe_id: str
    suite: str
    question_type: str
    question_key: str
    question: str
    image_path: str  # absolute path of the PNG
    options: tuple[str, ...]
    qualification: bool = False
    instructions: tuple[str, ...] = ()  # the paragraphs shown with the question (its task's)
    image_sha256: str | None = None  # the manifest's sha256 of the image (recorded with each answer)


def item_id_for(probe_id: str, question_type: str, question_key: str) -> str:
    return f"{probe_id}|{question_type}|{question_key}"


def _row_items(row: dict, image: str, types: set[str], attributes: set[str] | None, task: Task | None,
               config: dict) -> list[Item]:
    """The questions the row's task asks about its image (none when no task asks any), of the
    chosen ``types``, attribute questions limited to ``attributes``."""
    if task is None or task.human_questions is None:
        return []
    suite, pid = row["suite"], row["probe_id"]
    sha = row.get("sha256") if isinstance(row.get("sha256"), str) and len(row.get("sha256")) == 64 else None
    return [Item(item_id_for(pid, hq.question_type, hq.key), pid, suite, hq.question_type, hq.key, hq.text, image,
                 q.options_for(hq.question_type, task), instructions=q.instructions_for(hq.question_type, task),
                 image_sha256=sha)
            for hq in task.human_questions(row, config)
            if hq.question_type in types and (hq.question_type != "attribute" or attributes is None
                                              or hq.key in attributes)]


def _check_types(question_types) -> set[str]:
    if question_types is None:
        return set(QUESTION_TYPES)
    types = [question_types] if isinstance(question_types, str) else list(question_types)
    unknown = [t for t in types if t not in QUESTION_TYPES]
    if unknown or not types:
        raise ValueError(f"unknown question types {unknown}; expected some of {list(QUESTION_TYPES)}")
    return set(types)


def read_run_manifest(run_dir: str | Path) -> pd.DataFrame:
    """The run's manifest; a one-line ``ValueError`` if RUN_DIR is not a run folder."""
    if not (Path(run_dir) / MANIFEST_FILE).is_file():
        raise ValueError(f"{run_dir} is not a run folder (no {MANIFEST_FILE}); run `t2ibench generate` first")
    return read_manifest(run_dir)


def build_items(run_dir: str | Path, question_types: Sequence[str] | None = None, *,
                attributes: Sequence[str] | None = None, suites: Sequence[str] | None = None) -> list[Item]:
    """The questions to ask about RUN_DIR's images, in probe order, each image's questions together.

    Each image's task says what is asked (``Task.human_questions``), with the answer options
    and instructions of its ``human_validation``: e.g. GEP asks "Do you see a person [a]?"
    for each attribute of the probe's ``annotated_attributes``, PST the single question or
    left and right of a pair, DALL-Eval gender, skin tone and its 15 attributes.
    ``attributes`` limits the attribute questions. Images flagged nsfw are never shown.
    """
    types = _check_types(question_types)
    manifest = read_run_manifest(run_dir)
    if suites is not None:
        unknown = set(suites) - set(manifest["suite"])
        if unknown:
            raise ValueError(f"suites {sorted(unknown)} are not in {run_dir}; it has {sorted(set(manifest['suite']))}")
        manifest = manifest[manifest["suite"].isin(list(suites))]
    attrs = None if attributes is None else set(attributes)
    task_of = {s: task for task, its in tasks_of_run(run_dir, list(dict.fromkeys(manifest["suite"]))) for s in its}
    families = dict.fromkeys(t.family for t in task_of.values())
    configs = {f: load_config(f) if default_config_path(f).is_file() else {} for f in families}
    root = Path(run_dir).resolve()
    items: list[Item] = []
    for row in manifest.to_dict("records"):
        if row.get("nsfw") is True:
            continue
        task = task_of.get(row["suite"])
        items.extend(_row_items(row, str(root / row["image_path"]), types, attrs, task,
                                configs.get(task.family, {}) if task else {}))
    return items


def run_item_ids(run_dir: str | Path) -> set[str]:
    """Every item id the app can ask about RUN_DIR's images (all question types, suites and attributes)."""
    return {it.item_id for it in build_items(run_dir)}


def image_in_run(run_dir: str | Path, image_path: str | Path) -> Path | None:
    """``image_path`` resolved (symlinks and ``..``) if it is a file inside ``RUN_DIR/images/``, else None."""
    root = (Path(run_dir) / IMAGES_DIR).resolve()
    try:
        path = (Path(run_dir) / image_path).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte
        return None
    return path if path.is_relative_to(root) and path != root and path.is_file() else None


def next_item(run_dir: str | Path, annotator: str, items: Sequence[Item]) -> Item | None:
    """The first of ``items`` that ``annotator`` has neither answered nor skipped (None when all are done)."""
    done = done_item_ids(run_dir, annotator)
    return next((it for it in items if it.item_id not in done), None)


def event_for(item: Item, event: str, annotator: str, answer: str | None = None, *, session: str = "") -> dict:
    """The event recording ``annotator``'s ``event`` on ``item`` (pass it to :func:`benchmark.human.answers_file.append_event`)."""
    ev = {"event": event, "item_id": item.item_id, "probe_id": item.probe_id, "suite": item.suite,
          "question_type": item.question_type, "question_key": item.question_key, "question": item.question,
          "answer": answer, "annotator": annotator, "time": utc_iso_ms(), "qualification": item.qualification,
          "session": session}
    if item.image_sha256 and not item.qualification:
        ev["image_sha256"] = item.image_sha256
    return ev
