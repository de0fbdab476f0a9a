"""``t2ibench annotate-ui RUN_DIR``: serve the annotation app for a run folder behind a login;
``t2ibench annotate-user USERS_FILE NAME``: add an annotator account (or change its password).
Options only: the bodies are in :mod:`.commands`, imported when a command runs."""

from __future__ import annotations

from benchmark.cli_types import output_file, port
from benchmark.human.question_types import QUESTION_TYPES

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
