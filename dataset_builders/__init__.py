"""Builders of the benchmark's Hub datasets, each registered by the code that builds it
(:data:`benchmark.registries.DATASET_BUILDERS`): a task folder declares its own datasets in its
``task.py``'s ``REGISTRATIONS`` (``DatasetBuilderSpec(NAME, DESCRIPTION, MODULE)``), the package its
generic ones (probe sets, human labels); a plugin calls ``register_dataset_builder``.

    python -m dataset_builders --list                 # the registered builders, one a line
    python -m dataset_builders NAME --out DIR ...     # run one (NAME --help: its options)
    python -m dataset_builders.NAME --out DIR ...     # the same, for the builders with a module here

The Hub-layout folder contract (parquet shards + card) is :mod:`benchmark.hub.dataset_layout`.
"""

from __future__ import annotations

from pathlib import Path

import benchmark
from benchmark.cli_types import CommandLineParser
from benchmark.hub.access import HubError
from benchmark.present.terminal import print_error
from benchmark.registries import DATASET_BUILDERS, DatasetBuilderSpec

PROG = "python -m dataset_builders"


def builder_main(prog: str, description: str, add_arguments, run, argv: list[str] | None = None) -> int:
    """``python -m dataset_builders.NAME``: parse ``argv`` (a usage error, such as an ``--out``
    inside a run folder, is one line and exit status 2), ``run(args)``, and on bad input or a Hub
    failure print one ``t2ibench: error: ...`` line and return 2."""
    parser = CommandLineParser(prog=prog, description=description)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (ValueError, HubError) as exc:
        print_error(exc)
        return 2


def registered_builders() -> dict[str, DatasetBuilderSpec]:
    """Every registered dataset builder, the task folders (and ``$T2IBENCH_TASKS_PATH``'s) loaded."""
    benchmark.load_tasks()
    return dict(DATASET_BUILDERS)


def run_builder(name: str, argv: list[str] | None = None, prog: str | None = None) -> int:
    """Run the dataset builder registered as ``name`` on ``argv``; an unknown name is one
    ``t2ibench: error: ...`` line naming the known ones, and 2."""
    builders = registered_builders()
    if name not in builders:
        print_error(f"unknown dataset builder {name!r}; the builders are: {', '.join(builders) or 'none'} "
                    f"({PROG} --list describes them)")
        return 2
    spec = builders[name]
    return builder_main(prog or f"{PROG} {name}", spec.description, spec.add_arguments, spec.run, argv)


def builder_command(module_file: str):
    """``main(argv=None) -> exit status`` of ``python -m dataset_builders.NAME`` (``module_file``'s
    stem): the builder registered under that name, with that command as its usage line."""
    name = Path(module_file).stem

    def main(argv: list[str] | None = None) -> int:
        return run_builder(name, argv, prog=f"{PROG}.{name}")

    return main
