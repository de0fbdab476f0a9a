"""``t2ibench annotate-ui RUN_DIR``: serve the annotation app for a run folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmark.human.questions import QUESTION_TYPES


def _cmd_annotate_ui(args: argparse.Namespace) -> int:
    from benchmark.human import labels

    labels.read_run_manifest(args.run_dir)  # a one-line error before Gradio is imported
    if args.qualification is not None and not Path(args.qualification).is_file():
        raise ValueError(f"qualification file {args.qualification} does not exist")
    if args.port is not None and not 1 <= args.port <= 65535:
        raise ValueError(f"--port must be between 1 and 65535, got {args.port}")
    from benchmark.human.app import launch_app

    print(f"Labels are appended to {labels.answers_path(args.run_dir)}; stop with Ctrl+C (nothing is lost).")
    launch_app(args.run_dir, args.questions, args.qualification, host=args.host, port=args.port,
               attributes=args.attributes, suites=args.suites)
    return 0


def register(subparsers) -> None:
    """Add ``annotate-ui`` to the ``t2ibench`` subparsers."""
    p = subparsers.add_parser(
        "annotate-ui", help="label a run's images yourself in the browser (the papers' questions)",
        description="Serve a Gradio app that shows RUN_DIR's images one at a time with the papers' questions "
                    "and appends every answer to RUN_DIR/human_labels/answers.jsonl at once.")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run folder (with manifest.parquet)")
    p.add_argument("--questions", nargs="+", choices=QUESTION_TYPES, default=None,
                   help="question types to ask (default: all that the run's suites have)")
    p.add_argument("--attributes", nargs="+", default=None,
                   help="only these attributes (as the probes name them, e.g. 'in a dress' 'a suit')")
    p.add_argument("--suites", nargs="+", default=None, help="only images of these suites")
    p.add_argument("--qualification", default=None, metavar="FILE",
                   help="YAML/JSON qualification items with known answers, shown first (docs/human_labels.md)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 for "
                   "annotators on other machines)")
    p.add_argument("--port", type=int, default=None, help="port (default: Gradio's, 7860 or the next free one)")
    p.set_defaults(func=_cmd_annotate_ui)
