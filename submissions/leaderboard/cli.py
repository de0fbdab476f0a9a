"""``t2ibench leaderboard``: start the leaderboard app locally on a results folder or a Hub
results dataset (with a requests queue: the "Submit a model" tab too); ``t2ibench leaderboard
build-contents DIR`` rebuilds the folder's contents table."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmark.cli_types import existing_folder, port


def register(subparsers) -> None:
    """Add ``leaderboard`` to the ``t2ibench`` subparsers."""
    p = subparsers.add_parser("leaderboard", help="start the leaderboard app (Gradio) on results files",
                              description="Start the leaderboard app on a results folder or a Hub results "
                              "dataset; with a requests queue (--requests-folder / --requests) it shows the "
                              "'Submit a model' tab too. `t2ibench leaderboard build-contents DIR` rebuilds the "
                              "contents table the app reads in one read.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--results", metavar="DIR", type=existing_folder, help="folder read recursively: results "
                     "files (*.json) and run folders (their results.json), through DIR/contents when present")
    src.add_argument("--repo", metavar="ORG/NAME", help="Hub results dataset (its contents table, else its JSON "
                     "files, downloaded)")
    p.add_argument("--revision", help="revision of the Hub results dataset")
    queue = p.add_mutually_exclusive_group()
    queue.add_argument("--requests-folder", metavar="DIR", type=existing_folder,
                       help="a local requests queue: adds the 'Submit a model' tab, and its FINISHED requests "
                       "decide which rows were evaluated by the maintainers' workers (without a queue every row "
                       "is self-reported)")
    queue.add_argument("--requests", metavar="ORG/NAME", help="a Hub requests dataset: adds the 'Submit a "
                       "model' tab and decides which rows were evaluated, as --requests-folder does")
    p.add_argument("--port", type=port, help="port (default: Gradio's, 7860 or the next free one)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0 to share)")
    p.set_defaults(func=_cmd_leaderboard)
    sub = p.add_subparsers(dest="leaderboard_command", metavar="build-contents")
    build = sub.add_parser("build-contents", help="(re)build DIR/contents/contents.parquet from the results files",
                           description="Read and check every results file under DIR once and write the "
                           "contents table (DIR/contents/contents.parquet) the app reads in one read; the JSON "
                           "files stay the source of truth.")
    build.add_argument("results_dir", metavar="DIR", type=existing_folder, help="results folder")
    build.set_defaults(func=_cmd_build_contents)


def _cmd_build_contents(args: argparse.Namespace) -> int:
    from submissions.leaderboard.contents import build_contents, load_board

    path, n = build_contents(args.results_dir)
    board = load_board(args.results_dir)
    print(f"wrote {path}: {n} files, {len(board.submissions)} shown, {len(board.skipped)} skipped")
    return 0


def _cmd_leaderboard(args: argparse.Namespace) -> int:
    from submissions.leaderboard import data

    if args.results is None and args.repo is None:
        raise ValueError("give --results DIR or --repo ORG/NAME (see `t2ibench leaderboard --help`)")
    if args.revision and not args.repo:
        raise ValueError("--revision applies to --repo only")
    if args.requests is not None and not data.REPO_ID.match(args.requests):
        raise ValueError(f"--requests takes a Hub dataset id ORG/NAME, got {args.requests!r}")
    if args.results is not None:
        kwargs = {"results_dir": Path(args.results)}
    else:
        from submissions.leaderboard.contents import download_contents

        # Download before starting the server, so that offline / no such dataset is one line here.
        if download_contents(args.repo, args.revision) is None:
            data.download_results(args.repo, args.revision)
        kwargs = {"repo": args.repo, "revision": args.revision}

    from submissions.leaderboard.app import build_app, launch

    demo = build_app(**kwargs, requests_dir=args.requests_folder, requests_repo=args.requests)
    queue = args.requests_folder or args.requests
    print(f"t2ibench leaderboard: results from {args.results or args.repo}"
          + (f", requests queue {queue} (Submit tab)" if queue else "") + "; Ctrl+C stops the server")
    launch(demo, host=args.host, port=args.port)
    return 0
