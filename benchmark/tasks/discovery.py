"""Finding the task folders: every package under ``benchmark/tasks/`` (and under the folders
of ``$T2IBENCH_TASKS_PATH``) is a task folder, imported once; importing it registers its
suites, annotators, scores and task.

The suite, annotator and score registries sit below the tasks, so they call
:func:`import_task_folders` by name (``import_module``) before their first lookup, as they
imported their built-in modules before the tasks had folders.
"""

from __future__ import annotations

import os
import pkgutil
from importlib import import_module

from benchmark.annotate.registry import load_builtin_annotators
from benchmark.cli_types import TASKS_PATH_ENV

__all__ = ["TASKS_PATH_ENV", "BUILTIN_ORDER", "task_folders", "import_task_folders", "registration_rank"]

#: the built-in folders in the order their suites, tasks and scores have always been listed
#: (results.json and the report keep that order); any other folder follows, by name
BUILTIN_ORDER = ("gep", "dalleval", "pst", "mcas", "generated_bias", "paintskills")

_imported = False
_folders: list[str] = []


def _search_path() -> list[str]:
    package = import_module("benchmark.tasks")
    for extra in os.environ.get(TASKS_PATH_ENV, "").split(os.pathsep):
        if extra and extra not in package.__path__:
            package.__path__.append(extra)  # `import benchmark.tasks.<name>` then finds it there
    return list(package.__path__)


def task_folders() -> list[str]:
    """Names of the task folders (subpackages of ``benchmark.tasks``), built-in ones first."""
    found = {info.name for info in pkgutil.iter_modules(_search_path()) if info.ispkg}
    rank = {name: i for i, name in enumerate(BUILTIN_ORDER)}
    return sorted(found, key=lambda name: (rank.get(name, len(rank)), name))


def import_task_folders() -> None:
    """Import every task folder once (later calls return at once)."""
    global _imported
    if _imported:
        return
    _imported = True
    load_builtin_annotators()  # the generic kinds first, so kinds are listed in the same order whoever asks first
    _folders[:] = task_folders()
    for name in _folders:
        import_module(f"benchmark.tasks.{name}")


def registration_rank(module: str) -> tuple[int, int]:
    """Sort key of something registered by ``module``: the generic modules of the package first,
    then the task folders in folder order, then plugins. The registries list their entries by
    it (stable, so registration order breaks ties), whichever module was imported first."""
    import_task_folders()
    parts = module.split(".")
    if parts[:2] == ["benchmark", "tasks"] and len(parts) > 2 and parts[2] in _folders:
        return (1, _folders.index(parts[2]))
    return (0, 0) if parts[0] == "benchmark" else (2, 0)
