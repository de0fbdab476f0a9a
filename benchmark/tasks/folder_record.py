"""What a run records of the task folders it used from outside the package, and the line that
says where to point when one of them is not found again.

A suite registered by a folder of ``$T2IBENCH_TASKS_PATH`` (or by a plugin module), or scored
by such a folder's task, makes ``t2ibench run`` record that folder in run_config.json
``task_folders``: its name, path and content hash (:func:`tree_sha256`). The later stages of
the run (annotate, score, report, verify; ``validate`` of its results.json) in a shell where
the folder is not on the search path cannot know its suites or scores: they say, in one line,
which folder to point at (:func:`missing_task_folder`) instead of failing on an unknown name.
Runs that use only the built-in folders record nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterable, Mapping

from benchmark.cli_types import TASKS_PATH_ENV
from benchmark.contract.digest import file_sha256, sha256_hex
from benchmark.contract.run_folder import CONFIG_FILE, RunFolderError, read_run_config
from benchmark.registries import SUITES
from benchmark.tasks.discovery import task_folders
from benchmark.tasks.registry import task_of_family

__all__ = ["RECORD_KEY", "tree_sha256", "outside_task_folders", "missing_folder_line", "missing_task_folder",
           "without_local_paths"]

#: the key of run_config.json that lists them
RECORD_KEY = "task_folders"
#: where the built-in task folders are (a folder elsewhere is recorded)
PACKAGE_TASKS = Path(__file__).resolve().parent
_SHOWN = 12  # hex digits of a hash shown in a message


def tree_sha256(folder: str | Path) -> str:
    """sha256 of a folder's files (``__pycache__`` and ``*.pyc`` left out): of one line
    ``relative/path NUL sha256-of-the-file`` per file, in path order."""
    root = Path(folder)
    lines = [f"{p.relative_to(root).as_posix()}\0{file_sha256(p)}\n" for p in sorted(root.rglob("*"))
             if p.is_file() and "__pycache__" not in p.relative_to(root).parts and p.suffix != ".pyc"]
    return sha256_hex("".join(lines).encode("utf-8"))


def _record(module: str) -> dict | None:
    """The record of the task folder or plugin module ``module`` belongs to; None when it is
    part of the package."""
    parts = module.split(".")
    if parts[:2] == ["benchmark", "tasks"] and len(parts) > 2:
        init = getattr(sys.modules.get(".".join(parts[:3])), "__file__", None)
        folder = Path(init).resolve().parent if init else PACKAGE_TASKS / parts[2]
        if folder.parent == PACKAGE_TASKS:
            return None
        return {"kind": "task folder", "name": parts[2], "path": str(folder), "sha256": tree_sha256(folder)}
    file = getattr(sys.modules.get(module), "__file__", None)
    if parts[0] == "benchmark" or not file:
        return None
    return {"kind": "plugin", "name": module, "path": str(Path(file).resolve()), "sha256": file_sha256(file)}


def outside_task_folders(suites: Iterable[str]) -> list[dict]:
    """The records (kind, name, path, sha256) of the task folders and plugin modules from outside
    the package that registered ``suites`` or the tasks scoring them, in suite order."""
    found: dict[str, dict] = {}
    for suite in suites:
        spec = SUITES.get(str(suite))
        if spec is None:
            continue
        task = task_of_family(spec.family)
        for module in (spec.build.__module__, task.score.__module__ if task else None):
            record = _record(module) if module else None
            if record is not None:
                found.setdefault(record["path"], record)
    return list(found.values())


def missing_folder_line(run_config: Mapping[str, Any]) -> str | None:
    """One line naming what to point at for the first task folder (or plugin) the run recorded
    that is not found here; None when every one is."""
    for record in run_config.get(RECORD_KEY) or []:
        if not isinstance(record, Mapping):
            continue
        name, path, digest = str(record.get("name")), str(record.get("path")), str(record.get("sha256"))[:_SHOWN]
        local = Path(path).is_absolute()  # a published run config holds the file or folder name only
        used = f"{name} from {path}" if local else name
        if record.get("kind") == "plugin":
            if name not in sys.modules:
                root = Path(path).parents[name.count(".") + (Path(path).name == "__init__.py")] if local else None
                return (f"this run used plugin {used} (sha256 {digest}...): pass --plugin {name} with "
                        f"{root or 'the folder holding its package'} on PYTHONPATH")
        elif name not in task_folders():
            where = f"={Path(path).parent}" if local else f" to the folder holding {name}/"
            return f"this run used task folder {used} (sha256 {digest}...): set {TASKS_PATH_ENV}{where}"
    return None


def without_local_paths(run_config: Mapping[str, Any]) -> dict:
    """``run_config`` for publishing: each recorded outside task folder or plugin keeps its name,
    kind and content hash, and its path on this machine becomes its last part (a folder or file
    name), which says nothing of the machine and is all another one can use."""
    config = dict(run_config)
    records = config.get(RECORD_KEY)
    if isinstance(records, list):
        config[RECORD_KEY] = [{**r, "path": Path(str(r.get("path", ""))).name} if isinstance(r, Mapping) else r
                              for r in records]
    return config


def missing_task_folder(where: str | Path) -> str | None:
    """:func:`missing_folder_line` of the run folder ``where`` (or of the run folder holding the
    file ``where``, e.g. its results.json); None when there is no readable run_config.json."""
    path = Path(where)
    run_dir = path if path.is_dir() else path.parent
    try:
        config = read_run_config(run_dir) if (run_dir / CONFIG_FILE).is_file() else None
    except RunFolderError:
        return None
    return missing_folder_line(config) if config else None
