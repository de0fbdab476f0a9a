"""``t2ibench probes export``: the probe sheet of a selection (see :mod:`benchmark.probes.sheet`)."""

from __future__ import annotations

import argparse

from benchmark.cli_types import positive_int


def add_export_command(probe_commands) -> None:
    """Add ``export`` to the ``t2ibench probes`` sub-commands."""
    p = probe_commands.add_parser("export", help="write the probe sheet (one row per image to make, with its "
                                  "file name) for a model the benchmark cannot run: an API, a web tool, your sampler")
    p.add_argument("--suites", nargs="+", help="probe suites (default: every suite of the probe set)")
    p.add_argument("--probes", metavar="SOURCE", help="the probe set: a folder from `t2ibench probes build` or a Hub "
                   "dataset ID (default: the built-in probes)")
    p.add_argument("--probes-revision", metavar="REV")
    p.add_argument("--limit", type=positive_int, help="at most N probes per suite (the same subset `t2ibench run --limit N` "
                   "audits)")
    p.add_argument("--model", metavar="SPEC", help="the model the images will come from; for an image API that "
                   "takes no seed (openai:...) the seed column says 'not controllable'")
    p.add_argument("--out", required=True, help="sheet.csv or sheet.jsonl; a README on filling the folder is "
                   "written beside it")
    p.set_defaults(func=run_export)


def run_export(args: argparse.Namespace) -> int:
    from benchmark.probes.sheet import export_sheet, selection_record
    from benchmark.runner.generate import choose_probes, probes_fingerprint

    chosen = choose_probes(args.probes, args.probes_revision, args.suites, args.limit)
    selection = selection_record(chosen.suites, args.limit, args.probes, probes_fingerprint(chosen.limited))
    seeds = not str(args.model or "").startswith("openai:")  # the OpenAI Images API takes no seed
    sheet, readme = export_sheet(args.out, chosen.limited, selection, seeds=seeds)
    print(f"wrote {sheet} ({len(chosen.limited)} images to make in {len(chosen.suites)} suite(s)) and {readme}")
    return 0
