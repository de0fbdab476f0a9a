"""``t2ibench probes export``: the probe sheet of a selection (see :mod:`benchmark.probes.sheet`).
Options only: the body is :func:`benchmark.commands.probe_sheet.export`, imported when it runs."""

from __future__ import annotations

from benchmark.cli_types import output_file, positive_int


def add_export_command(probe_commands) -> None:
    """Add ``export`` to the ``t2ibench probes`` sub-commands."""
    p = probe_commands.add_parser("export", help="write the probe sheet (one row per image to make, with its "
                                  "file name) for a model the benchmark cannot run: an API, a web tool, your sampler")
    p.add_argument("--suites", nargs="+", help="probe suites (default: every suite of the probe set)")
    p.add_argument("--probes", metavar="SOURCE", help="the probe set: a folder from `t2ibench probes build` or a Hub "
                   "dataset ID (default: the built-in probes)")
    p.add_argument("--probes-revision", metavar="REV", help="with a Hub dataset ID: the revision to export "
                   "(branch, tag or commit)")
    p.add_argument("--limit", type=positive_int, help="at most N probes per suite (the same subset `t2ibench run --limit N` "
                   "audits)")
    p.add_argument("--model", metavar="SPEC", help="the model the images will come from, checked as `t2ibench run` "
                   "checks it (no key, no download); for an image API that takes no seed (openai:...) the seed column "
                   "says 'not controllable'")
    p.add_argument("--out", required=True, type=output_file, help="sheet.csv or sheet.jsonl; a README on filling the folder is "
                   "written beside it")
    p.set_defaults(func="benchmark.commands.probe_sheet:export")
