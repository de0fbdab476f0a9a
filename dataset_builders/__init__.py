"""Builders of the benchmark's Hub datasets: probes, PaintSkills renders, human labels.

Each is ``python -m dataset_builders.NAME --out DIR [--push-to-hub ORG/NAME]``; the
Hub-layout folder contract (parquet shards + card) is :mod:`benchmark.hub.dataset_layout`.
"""

from __future__ import annotations

from benchmark.hub.access import HubError
from benchmark.present.terminal import print_error


def builder_main(prog: str, description: str, add_arguments, run, argv: list[str] | None = None) -> int:
    """``python -m dataset_builders.NAME``: parse ``argv``, ``run(args)``, and on bad input or a
    Hub failure print one ``t2ibench: error: ...`` line and return 2."""
    import argparse

    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (ValueError, HubError) as exc:
        print_error(exc)
        return 2
