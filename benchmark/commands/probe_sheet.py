"""Body of ``t2ibench probes export`` (options in :mod:`benchmark.commands.probe_export`), imported
only when the command runs."""

from __future__ import annotations

import argparse

from benchmark.probes.sheet import export_sheet, selection_record
from benchmark.runner.generate import choose_probes, probes_fingerprint


def export(args: argparse.Namespace) -> int:
    chosen = choose_probes(args.probes, args.probes_revision, args.suites, args.limit)
    selection = selection_record(chosen.suites, args.limit, args.probes, probes_fingerprint(chosen.limited))
    seeds = not str(args.model or "").startswith("openai:")  # the OpenAI Images API takes no seed
    sheet, readme = export_sheet(args.out, chosen.limited, selection, seeds=seeds)
    print(f"wrote {sheet} ({len(chosen.limited)} images to make in {len(chosen.suites)} suite(s)) and {readme}")
    return 0
