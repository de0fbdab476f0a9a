"""``t2ibench annotate-ui RUN_DIR``: serve the annotation app for a run folder behind a login;
``t2ibench annotate-user USERS_FILE NAME``: add an annotator account (or change its password)."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

from benchmark.human.questions import QUESTION_TYPES


def _cmd_annotate_ui(args: argparse.Namespace) -> int:
    from benchmark.human import labels

    labels.read_run_manifest(args.run_dir)  # a one-line error before Gradio is imported
    if args.qualification is not None and not Path(args.qualification).is_file():
        raise ValueError(f"qualification file {args.qualification} does not exist")
    if args.port is not None and not 1 <= args.port <= 65535:
        raise ValueError(f"--port must be between 1 and 65535, got {args.port}")
    if args.annotator is not None and not args.no_auth:
        raise ValueError("--annotator names the single annotator of --no-auth; with a login the annotator is "
                         "the signed-in user")
    from benchmark.human.app import LOCAL_ANNOTATOR, launch_app, login_settings

    mode, _ = login_settings(users=args.users, oauth=args.oauth, no_auth=args.no_auth, host=args.host)
    annotator = labels.check_annotator(args.annotator or LOCAL_ANNOTATOR)
    print({"users": f"Login: the accounts of {args.users}.",
           "oauth": "Login: Sign in with Hugging Face.",
           "local": f"No login: every answer is recorded as annotator {annotator!r}; listening on {args.host} only."
           }[mode])
    print(f"Labels are appended to {labels.answers_path(args.run_dir)}; stop with Ctrl+C (nothing is lost).")
    launch_app(args.run_dir, args.questions, args.qualification, users=args.users, oauth=args.oauth,
               no_auth=args.no_auth, local_annotator=annotator, host=args.host, port=args.port,
               attributes=args.attributes, suites=args.suites)
    return 0


def _read_password(args: argparse.Namespace) -> str:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    if not sys.stdin.isatty():
        raise ValueError("no terminal to ask for the password: pipe it in with --password-stdin")
    first = getpass.getpass(f"Password for {args.name}: ")
    if getpass.getpass("Again: ") != first:
        raise ValueError("the two passwords differ")
    return first


def _cmd_annotate_user(args: argparse.Namespace) -> int:
    from benchmark.human import users

    if args.remove:
        users.remove_user(args.users_file, args.name)
        print(f"removed {args.name} from {args.users_file}")
        return 0
    name = users.check_user_name(args.name)
    users.set_password(args.users_file, name, _read_password(args))
    print(f"{name} can log in to `t2ibench annotate-ui RUN_DIR --users {args.users_file}` "
          f"(restart a running app to take the change)")
    return 0


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
    p.add_argument("--port", type=int, default=None, help="port (default: Gradio's, 7860 or the next free one)")
    p.set_defaults(func=_cmd_annotate_ui)

    u = subparsers.add_parser(
        "annotate-user", help="add an annotator account for annotate-ui --users (or change its password)",
        description="Add NAME to USERS_FILE (created if missing, owner-only) with a scrypt hash of the password "
                    "asked on the terminal, or change NAME's password; --remove deletes the account.")
    u.add_argument("users_file", metavar="USERS_FILE", help="the annotators file (YAML) to create or update")
    u.add_argument("name", metavar="NAME", help="the annotator name recorded with every answer")
    u.add_argument("--password-stdin", action="store_true", help="read the password from one line of stdin")
    u.add_argument("--remove", action="store_true", help="remove NAME instead")
    u.set_defaults(func=_cmd_annotate_user)
