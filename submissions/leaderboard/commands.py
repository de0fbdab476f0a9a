"""Bodies of ``t2ibench leaderboard`` and ``leaderboard build-contents`` (options in
:mod:`submissions.leaderboard.cli`), imported only when one of them runs. The app (Gradio) is
imported after the cheap checks, so a bad argument fails in one line first."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmark.present.text import count_text
from submissions.leaderboard import board_model, results_files
from submissions.leaderboard.contents import BuildStats, build_contents, download_contents


def build_contents_table(args: argparse.Namespace) -> int:
    stats = BuildStats()
    path, n = build_contents(args.results_dir, stats, progress=True)
    refused = ""
    if stats.refused:
        shown = "; ".join(f"{rel} ({why})" for rel, why in stats.refused[:3])
        refused = (f"; {len(stats.refused)} entr{'y' if len(stats.refused) == 1 else 'ies'} not read: {shown}"
                   + (" ..." if len(stats.refused) > 3 else ""))
    conflicts = (f" ({count_text(stats.conflicts, 'other file')} of the same row key, conflicts not shown)"
                 if stats.conflicts else "")
    print(f"wrote {path}: {count_text(n, 'file')}, {count_text(stats.rows, 'row')}{conflicts}, {stats.skipped} skipped "
          f"({stats.read} read, {stats.hashed} touched but unchanged, {stats.kept} unchanged, "
          f"{stats.dropped} gone){refused}")
    return 0


def leaderboard(args: argparse.Namespace) -> int:
    if args.results is None and args.repo is None:
        raise ValueError("give --results DIR or --repo ORG/NAME (see `t2ibench leaderboard --help`)")
    if args.revision and not args.repo:
        raise ValueError("--revision applies to --repo only")
    if args.requests is not None and not board_model.is_dataset_id(args.requests):
        raise ValueError(f"--requests takes a Hub dataset id ORG/NAME, got {args.requests!r}")
    if args.results is not None:
        kwargs = {"results_dir": Path(args.results)}
    else:
        # Download before starting the server, so that offline / no such dataset is one line here.
        if download_contents(args.repo, args.revision) is None:
            results_files.download_results(args.repo, args.revision)
        kwargs = {"repo": args.repo, "revision": args.revision}

    from submissions.leaderboard.app import build_app, launch  # Gradio: after the cheap checks

    demo = build_app(**kwargs, requests_dir=args.requests_folder, requests_repo=args.requests)
    queue = args.requests_folder or args.requests
    print(f"t2ibench leaderboard: results from {args.results or args.repo}"
          + (f", requests queue {queue} (Submit tab)" if queue else "") + "; Ctrl+C stops the server")
    launch(demo, host=args.host, port=args.port)
    return 0
