"""Run a registered dataset builder, or list them.

    python -m dataset_builders --list
    python -m dataset_builders NAME [ARGS]     # NAME --help: the builder's options
"""

from __future__ import annotations

import shutil
import sys
import textwrap

from benchmark.present.terminal import print_error
from dataset_builders import PROG, registered_builders, run_builder


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(f"usage: {PROG} NAME [ARGS] | {PROG} --list\n\n{__doc__.splitlines()[0]}")
        return 0
    if argv[:1] == ["--list"]:
        builders = registered_builders()
        width = max(map(len, builders), default=0)
        room = max(40, shutil.get_terminal_size().columns - width - 2)  # one terminal line each
        for name, spec in builders.items():
            print(f"{name:<{width}}  {textwrap.shorten(spec.description, room, placeholder=' ...', break_on_hyphens=False)}")
        return 0
    if not argv or argv[0].startswith("-"):
        print_error(f"name a dataset builder: {PROG} NAME [ARGS] ({PROG} --list lists them)")
        return 2
    return run_builder(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main())
