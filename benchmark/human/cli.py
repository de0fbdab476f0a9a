"""``t2ibench annotate-ui RUN_DIR``: serve the annotation app for a run folder behind a login;
``t2ibench annotate-user USERS_FILE NAME``: add an annotator account (or change its password);
``t2ibench label-plan RUN``: how many people's labels a target interval needs.
Options only: the bodies are in :mod:`.commands`, imported when a command runs."""

from __future__ import annotations

import argparse

from benchmark.cli_types import output_file, port, positive_int, seed
from benchmark.human.question_types import QUESTION_TYPES


def half_width(raw: str) -> tuple[str, float]:
    """``0.05`` (every score) or ``NAME=0.05`` (one score): the target half-width of its interval."""
    name, _, value = raw.rpartition("=")
    try:
        w = float(value)
    except ValueError:
        w = -1.0
    if not w > 0 or w != w or w == float("inf"):
        raise argparse.ArgumentTypeError(f"a half-width is a positive number, or NAME=number; got {raw!r}")
    return (name or "*"), w

#: The module holding the command bodies, imported only when a command runs (like an entry point).
BODIES = f"{__package__}.commands"


def register(subparsers) -> None:
    """Add ``annotate-ui`` and ``annotate-user`` to the ``t2ibench`` subparsers."""
    p = subparsers.add_parser(
        "annotate-ui", help="label a run's images yourself in the browser (the papers' questions)",
        description="Serve a Gradio app that shows RUN_DIR's images one at a time with the papers' questions "
                    "and appends every answer to RUN_DIR/human_labels/answers.jsonl at once. Annotators log "
                    "in: --users (accounts from `t2ibench annotate-user`), --oauth (Hugging Face, on a Space) "
                    "or --no-auth (one local annotator, 127.0.0.1 only).")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run folder (with manifest.parquet)")
    p.add_argument("--users", default=None, metavar="USERS_FILE",
                   help="annotator accounts (NAME:scrypt-hash lines; add one with `t2ibench annotate-user`)")
    p.add_argument("--oauth", action="store_true",
                   help="Sign in with Hugging Face (on a Space; the default when SPACE_ID is set)")
    p.add_argument("--no-auth", action="store_true",
                   help="no login: a single annotator on this machine (serves on 127.0.0.1 only)")
    p.add_argument("--annotator", default=None, metavar="NAME",
                   help="with --no-auth, the name the answers are recorded under (default: local)")
    p.add_argument("--questions", nargs="+", choices=QUESTION_TYPES, default=None,
                   help="question types to ask (default: all that the run's suites have)")
    p.add_argument("--attributes", nargs="+", default=None,
                   help="only these attributes (as the probes name them, e.g. 'in a dress' 'a suit')")
    p.add_argument("--suites", nargs="+", default=None, help="only images of these suites")
    p.add_argument("--sample", type=positive_int, default=None, metavar="N",
                   help="serve a calibration sample: N images per suite drawn at random (seeded, stratified by prompt) "
                        "and recorded in RUN_DIR/human_labels/sample.json before anyone labels them; `t2ibench score` "
                        "corrects every score with people's labels of it (docs/human_correction.md)")
    p.add_argument("--sample-seed", type=seed, default=0, metavar="SEED", help="seed of the sample (default 0)")
    p.add_argument("--qualification", default=None, metavar="FILE",
                   help="YAML/JSON qualification items with known answers, shown first (docs/human_labels.md)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0 for "
                   "annotators on other machines, with --users)")
    p.add_argument("--port", type=port, default=None, help="port (default: Gradio's, 7860 or the next free one)")
    p.set_defaults(func=f"{BODIES}:annotate_ui")

    u = subparsers.add_parser(
        "annotate-user", help="add an annotator account for annotate-ui --users (or change its password)",
        description="Add NAME to USERS_FILE (created if missing, owner-only) with a scrypt hash of the password "
                    "asked on the terminal, or change NAME's password; --remove deletes the account.")
    u.add_argument("users_file", metavar="USERS_FILE", type=output_file, help="the annotators file (YAML) to create or update")
    u.add_argument("name", metavar="NAME", help="the annotator name recorded with every answer")
    u.add_argument("--password-stdin", action="store_true", help="read the password from one line of stdin")
    u.add_argument("--remove", action="store_true", help="remove NAME instead")
    u.set_defaults(func=f"{BODIES}:annotate_user")

    lp = subparsers.add_parser(
        "label-plan", help="how many people's labels give each headline score a target interval",
        description="From a pilot (RUN scored after people labelled part of its calibration sample) or, before any "
                    "label, from the automatic intervals: per headline score, the people-labelled images a "
                    "corrected interval of the target half-width needs, and what people's labels alone would need "
                    "(docs/human_correction.md).")
    lp.add_argument("run", metavar="RUN", help="a scored run folder, or its results.json")
    lp.add_argument("--half-width", type=half_width, action="append", default=None, metavar="[NAME=]W",
                    help="target half-width of the 95 %% interval, for every score or one score NAME (repeatable); "
                         "default: 5 %% of each score's range")
    lp.add_argument("--all-scores", action="store_true", help="every score entry, not only the headline ones")
    lp.set_defaults(func=f"{BODIES}:label_plan")
