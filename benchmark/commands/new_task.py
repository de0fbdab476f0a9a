"""``t2ibench new-task NAME``: its options (light: read to build the parser) and its body, which
writes the folder with :func:`benchmark.tasks.scaffold.write_task_folder`."""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path

from benchmark.cli_types import TASKS_PATH_ENV, output_folder, task_name

#: where NAME/ goes without --out and without $T2IBENCH_TASKS_PATH
DEFAULT_TASKS_PATH = "tasks"


def register(subparsers) -> None:
    """Add ``new-task`` to the ``t2ibench`` subparsers."""
    p = subparsers.add_parser(
        "new-task", help="write a task folder for a new paper from the template, ready to run on builtin:tiny-sd",
        description="Write DIR/NAME/, a new paper's task folder (citation, metadata, probes, task, a score whose "
                    "formula is the folder's scores.py, a paper check, README) that runs at once: point "
                    f"${TASKS_PATH_ENV} at DIR (the command prints the line) and `t2ibench run --model "
                    "builtin:tiny-sd --suites NAME_people --limit 4 --out RUN` audits with it.")
    p.add_argument("name", metavar="NAME", type=task_name, help="the paper's key, a lowercase Python identifier of "
                   "at most 40 characters (the folder, its probe family, task and paper), e.g. toy; not the name of "
                   "an existing suite or score")
    p.add_argument("--out", metavar="DIR", type=output_folder, help=f"the folder of task folders to write NAME/ in (default: the first "
                   f"folder of ${TASKS_PATH_ENV}, else ./{DEFAULT_TASKS_PATH})")
    p.set_defaults(func=f"{__name__}:new_task")


def _named() -> list[str]:
    return [p for p in os.environ.get(TASKS_PATH_ENV, "").split(os.pathsep) if p]


def _tasks_path(out: str | None) -> Path:
    named = _named()
    return Path(out or (named[0] if named else DEFAULT_TASKS_PATH))


def environment_line(tasks_path: Path) -> str | None:
    """The shell line that makes ``tasks_path`` a folder of task folders (None: it is one already)."""
    named = _named()
    where = str(tasks_path.resolve())
    if where in {str(Path(p).resolve()) for p in named}:
        return None
    return f"export {TASKS_PATH_ENV}={shlex.quote(os.pathsep.join([where, *named]))}"


def new_task(args: argparse.Namespace) -> int:
    from benchmark.tasks.scaffold import template_values, write_task_folder

    tasks_path = _tasks_path(args.out)
    written = write_task_folder(args.name, tasks_path)
    values = template_values(args.name, tasks_path)
    print(f"wrote {tasks_path / args.name}/ ({len(written)} files): suite {values['suite']}, score {values['score']}")
    line = environment_line(tasks_path)
    print(line if line else f"${TASKS_PATH_ENV} names {values['tasks_path']} already")
    print(f"t2ibench run --model builtin:tiny-sd --suites {values['suite']} --limit 4 --out runs/{args.name}")
    return 0
