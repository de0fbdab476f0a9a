"""The options of ``t2ibench probes build`` and ``python -m dataset_builders.probes``: kept
apart from the builder so that help and usage errors load no table library."""

from __future__ import annotations

import argparse

from benchmark.cli_types import output_folder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, type=output_folder,
                        help="folder to write (replaced if it is a dataset folder)")
    parser.add_argument("--suites", nargs="+", help="suites to build (default: all)")
    parser.add_argument("--config", action="append", default=[], metavar="FAMILY=PATH",
                        help="YAML config replacing a probe family's default (the families: `t2ibench probes list`)")
    parser.add_argument("--push-to-hub", metavar="ORG/NAME", help="publish the folder as a Hub dataset")
    parser.add_argument("--create-pr", action="store_true", help="with --push-to-hub: open a pull request")
