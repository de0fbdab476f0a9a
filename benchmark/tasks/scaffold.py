"""A new paper's task folder written from the template (``benchmark/tasks/template/``): what
``t2ibench new-task NAME`` does.

The template is a package resource: every ``*.tmpl`` file below ``template/`` becomes the file
of the same path without the suffix, its ``${name}``, ``${suite}``, ``${score}``, ``${title}``
and ``${tasks_path}`` replaced (:class:`string.Template`). The folder it writes runs as it is
on ``builtin:tiny-sd``: one suite, the generic ``skin_tone`` annotator, one score whose
formula is the folder's ``scores.py``, a paper check, a citation and a README.
"""

from __future__ import annotations

import argparse
import os
import pkgutil
import shutil
import tempfile
from collections.abc import Iterator
from importlib import import_module
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from string import Template

from benchmark.cli_types import output_folder, task_name
from benchmark.registries import PAPERS, PROBE_CONFIGS, SCORE_METADATA, SUITES, TASKS

__all__ = ["TEMPLATE", "template_values", "check_new_task", "write_task_folder"]

#: the template's folder in ``benchmark.tasks`` (not a package: its files end in ``.tmpl``)
TEMPLATE = "template"
SUFFIX = ".tmpl"


def template_values(name: str, tasks_path: str | Path) -> dict[str, str]:
    """What the template's placeholders become for the paper ``name`` in ``tasks_path``."""
    return {"name": name, "suite": f"{name}_people", "score": f"{name}_darker_share",
            "title": name.replace("_", " ").title(), "tasks_path": str(Path(tasks_path).resolve())}


def check_new_task(name: str, tasks_path: str | Path) -> None:
    """Refuse (ValueError, one line) a NAME that :func:`benchmark.cli_types.task_name` refuses (not
    a lowercase Python identifier, too long), that names an existing suite or score, whose folder,
    task, paper, probe family, suite or score exists already, or whose folder exists in
    ``tasks_path``; and a ``tasks_path`` that :func:`benchmark.cli_types.output_folder` refuses."""
    try:
        task_name(name)
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"new-task: {exc}") from None
    values = template_values(name, tasks_path)
    modules = {info.name for info in pkgutil.iter_modules(import_module("benchmark.tasks").__path__)}
    taken = [(what, key) for what, names, key in (
        ("task folder or module", modules, name), ("task", TASKS, name), ("paper", PAPERS, name),
        ("probe family", PROBE_CONFIGS, name), ("suite", SUITES, name), ("score", SCORE_METADATA, name),
        ("suite", SUITES, values["suite"]), ("score", SCORE_METADATA, values["score"])) if key in names]
    if taken:
        raise ValueError(f"new-task: the {taken[0][0]} {taken[0][1]!r} exists already: choose another NAME")
    if Path(tasks_path).exists() and not Path(tasks_path).is_dir():
        raise ValueError(f"new-task: --out {tasks_path} is not a folder")
    try:
        output_folder(str(tasks_path))
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"new-task: --out {exc}") from None
    folder = Path(tasks_path) / name
    if folder.exists() or folder.is_symlink():
        raise ValueError(f"new-task: {folder} exists already: choose another NAME or --out")


def _template_files(folder: Traversable, parts: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Traversable]]:
    for item in sorted(folder.iterdir(), key=lambda t: t.name):
        if item.is_dir():
            yield from _template_files(item, (*parts, item.name))
        elif item.name.endswith(SUFFIX):
            yield (*parts, item.name[:-len(SUFFIX)]), item


def write_task_folder(name: str, tasks_path: str | Path) -> list[Path]:
    """Write ``tasks_path/name/`` from the template (checked first with :func:`check_new_task`);
    returns the files written. The folder appears whole or not at all (written beside it, then
    renamed)."""
    check_new_task(name, tasks_path)
    tasks_path = Path(tasks_path)
    tasks_path.mkdir(parents=True, exist_ok=True)
    values = template_values(name, tasks_path)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=tasks_path))
    try:
        for parts, source in _template_files(files("benchmark.tasks") / TEMPLATE):
            target = staging.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(Template(source.read_text(encoding="utf-8")).substitute(values), encoding="utf-8")
        os.rename(staging, tasks_path / name)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return sorted(p for p in (tasks_path / name).rglob("*") if p.is_file())
