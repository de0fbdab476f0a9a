"""``t2ibench leaderboard``: start the leaderboard app locally on a results folder or a Hub
results dataset."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers) -> None:
    """Add ``leaderboard`` to the ``t2ibench`` subparsers."""
    p = subparsers.add_parser("leaderboard", help="start the leaderboard app (Gradio) on results files")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--results", metavar="DIR", help="folder read recursively: results files (*.json) and run "
                     "folders (their results.json)")
    src.add_argument("--repo", metavar="ORG/NAME", help="Hub results dataset (downloaded with snapshot_download)")
    p.add_argument("--revision", help="revision of the Hub results dataset")
    p.add_argument("--requests-folder", metavar="DIR", help="the requests queue (a local requests folder) whose "
                   "FINISHED requests decide which rows were evaluated by the maintainers' workers; without it "
                   "every row is self-reported")
    p.add_argument("--port", type=int, help="port (default: Gradio's, 7860 or the next free one)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 to share)")
    p.set_defaults(func=_cmd_leaderboard)


def _cmd_leaderboard(args: argparse.Namespace) -> int:
    from submissions.leaderboard import data

    if args.port is not None and not 1 <= args.port <= 65535:
        raise ValueError(f"--port must be between 1 and 65535, got {args.port}")
    if args.revision and not args.repo:
        raise ValueError("--revision applies to --repo only")
    if args.results is not None:
        folder = Path(args.results)
        if not folder.is_dir():
            raise ValueError(f"{folder} is not a folder of results files")
        kwargs = {"results_dir": folder}
    else:
        # Download before starting the server, so that offline / no such dataset is one line here.
        data.download_results(args.repo, args.revision)
        kwargs = {"repo": args.repo, "revision": args.revision}

    if args.requests_folder is not None:
        if not Path(args.requests_folder).is_dir():
            raise ValueError(f"--requests-folder: {args.requests_folder} is not a folder")
        kwargs["requests_dir"] = Path(args.requests_folder)

    from submissions.leaderboard.app import build_app, launch

    demo = build_app(**kwargs)
    print(f"t2ibench leaderboard: results from {args.results or args.repo}; Ctrl+C stops the server")
    launch(demo, host=args.host, port=args.port)
    return 0
