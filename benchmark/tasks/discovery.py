"""Finding the task folders: every package under ``benchmark/tasks/`` (and under the folders
of ``$T2IBENCH_TASKS_PATH``) is a task folder, imported once, then its ``task`` module (when it
has one); importing them registers its suites, annotators, scores and task.

A folder's ``inputs.py``, when it has one, declares what a run of the paper takes from the
command line: its run inputs (:class:`benchmark.tasks.inputs.TaskInput`) and its annotator
kinds. :func:`folder_declarations` imports only those modules (and the folders'
``__init__.py``, which must stay light in a folder with an ``inputs.py``), so that the
command line generates its options without importing pandas or a model library.

The suite, annotator and score registries sit below the tasks, so they call
:func:`import_task_folders` by name (``import_module``) before their first lookup, as they
imported their built-in modules before the tasks had folders.
"""

from __future__ import annotations

import pkgutil
from importlib import import_module
from pathlib import Path
from types import ModuleType

from benchmark.annotate.kinds import LOADING, load_builtin_annotators
from benchmark.cli_types import TASKS_PATH_ENV, task_search_path

__all__ = ["TASKS_PATH_ENV", "BUILTIN_ORDER", "DECLARATIONS", "TASK_MODULE", "task_folders", "import_task_folders",
           "folder_declarations", "registration_rank"]

#: the built-in folders in the order their suites, tasks and scores have always been listed
#: (results.json and the report keep that order); any other folder follows, by name
BUILTIN_ORDER = ("gep", "dalleval", "pst", "mcas", "generated_bias", "paintskills")

#: a folder's light module declaring its run inputs and annotator kinds (read by the command line)
DECLARATIONS = "inputs"
#: a folder's module that registers its task (imported after the folder)
TASK_MODULE = "task"

_imported = False
_done = False
_folders: list[str] = []


def _search_path() -> list[str]:
    package = import_module("benchmark.tasks")
    for folder in task_search_path():  # the command line finds the folders' commands on the same path
        if folder not in package.__path__:
            package.__path__.append(folder)  # `import benchmark.tasks.<name>` then finds it there
    return list(package.__path__)


def task_folders() -> list[str]:
    """Names of the task folders (subpackages of ``benchmark.tasks``), built-in ones first."""
    found = {info.name for info in pkgutil.iter_modules(_search_path()) if info.ispkg}
    rank = {name: i for i, name in enumerate(BUILTIN_ORDER)}
    return sorted(found, key=lambda name: (rank.get(name, len(rank)), name))


def import_task_folders() -> None:
    """Import every task folder once (later calls return at once; another thread's call waits
    until the folders are imported, :data:`benchmark.annotate.kinds.LOADING`)."""
    global _imported, _done
    if _done:
        return
    with LOADING:
        if _imported:  # done, or this thread is importing them (a folder asking a registry)
            return
        _imported = True
        load_builtin_annotators()  # the generic kinds first, so kinds are listed in the same order whoever asks first
        _folders[:] = task_folders()
        for name in _folders:
            import_module(f"benchmark.tasks.{name}")
            if _folder_file(name, TASK_MODULE):
                import_module(f"benchmark.tasks.{name}.{TASK_MODULE}")
        _done = True


def _folder_file(name: str, module: str) -> bool:
    """Whether task folder ``name`` has ``module``.py (looked up on disk: nothing imported)."""
    return any((Path(root) / name / f"{module}.py").is_file() for root in _search_path())


def folder_declarations() -> list[ModuleType]:
    """The ``inputs`` modules of the task folders that have one, in folder order. Imports those
    modules only (and their folders' light ``__init__.py``), not the folders' probes, annotators
    or scorers: what ``t2ibench --help`` reads."""
    return [import_module(f"benchmark.tasks.{name}.{DECLARATIONS}") for name in task_folders()
            if _folder_file(name, DECLARATIONS)]


def registration_rank(module: str) -> tuple[int, int]:
    """Sort key of something registered by ``module``: the generic modules of the package first,
    then the task folders in folder order, then plugins. The registries list their entries by
    it (stable, so registration order breaks ties), whichever module was imported first."""
    import_task_folders()
    parts = module.split(".")
    if parts[:2] == ["benchmark", "tasks"] and len(parts) > 2 and parts[2] in _folders:
        return (1, _folders.index(parts[2]))
    return (0, 0) if parts[0] == "benchmark" else (2, 0)
