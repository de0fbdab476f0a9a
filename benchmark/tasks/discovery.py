"""Finding the task folders: every package under ``benchmark/tasks/`` (and under the folders
of ``$T2IBENCH_TASKS_PATH``) is a task folder, imported once, then its ``task`` module (when it
has one), whose ``REGISTRATIONS`` (:class:`benchmark.registries.Registrations`) declares
everything the folder adds to the registries: its paper, scores, suites, probe config,
annotator kinds, dataset builders, evaluate modules and task. Importing a folder registers
nothing; the loader registers each folder's declarations in folder order.

A folder's ``inputs.py``, when it has one, declares what a run of the paper takes from the
command line: its run inputs (:class:`benchmark.tasks.inputs.TaskInput`) and its annotator
kinds. :func:`folder_declarations` imports only those modules (and the folders'
``__init__.py``, which must stay light in a folder with an ``inputs.py``), so that the
command line generates its options without importing pandas or a model library.

:func:`import_task_folders` is the registries' loader: ``benchmark/__init__.py`` installs it
(:func:`benchmark.registries.install_loader`), and :func:`benchmark.registries.load` calls it
once, from the command line, a library entry point or a registry's first read. The registries
sit below the tasks and never import this module.
"""

from __future__ import annotations

import pkgutil
from importlib import import_module
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType

from benchmark.cli_types import TASKS_PATH_ENV, task_search_path
from benchmark.registries import FOLDERS, register_all
from benchmark.tasks.registry import PLUGIN_ENTRY_POINTS

__all__ = ["TASKS_PATH_ENV", "BUILTIN_ORDER", "DECLARATIONS", "TASK_MODULE", "REGISTRATIONS", "task_folders",
           "import_task_folders", "folder_declarations"]

#: the built-in folders in the order their suites, tasks and scores have always been listed
#: (results.json and the report keep that order); any other folder follows, by name
BUILTIN_ORDER = ("gep", "dalleval", "pst", "mcas", "generated_bias", "paintskills")

#: a folder's light module declaring its run inputs and annotator kinds (read by the command line)
DECLARATIONS = "inputs"
#: a folder's module that declares its task and everything the folder registers (``REGISTRATIONS``)
TASK_MODULE = "task"
#: the name of that declaration in the task module
REGISTRATIONS = "REGISTRATIONS"


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
    """The registries' loader, after the package's generic entries: import every task folder and
    its ``task`` module and register the module's ``REGISTRATIONS`` at the folder's place (folder
    order), then import the ``t2ibench.plugins`` entry points. Call :func:`benchmark.load_tasks`
    (once only, thread-safe) rather than this."""
    for index, name in enumerate(task_folders()):
        import_module(f"benchmark.tasks.{name}")
        if _folder_file(name, TASK_MODULE):
            declared = getattr(import_module(f"benchmark.tasks.{name}.{TASK_MODULE}"), REGISTRATIONS, None)
            if declared is not None:
                register_all(declared, (FOLDERS, index))
    for ep in entry_points(group=PLUGIN_ENTRY_POINTS):
        ep.load()


def _folder_file(name: str, module: str) -> bool:
    """Whether task folder ``name`` has ``module``.py (looked up on disk: nothing imported)."""
    return any((Path(root) / name / f"{module}.py").is_file() for root in _search_path())


def folder_declarations() -> list[ModuleType]:
    """The ``inputs`` modules of the task folders that have one, in folder order. Imports those
    modules only (and their folders' light ``__init__.py``), not the folders' probes, annotators
    or scorers: what ``t2ibench --help`` reads."""
    return [import_module(f"benchmark.tasks.{name}.{DECLARATIONS}") for name in task_folders()
            if _folder_file(name, DECLARATIONS)]
