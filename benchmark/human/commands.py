"""Bodies of ``t2ibench annotate-ui`` and ``annotate-user``; :mod:`.cli` registers their options
and names these functions, so this module is imported only when one of them runs. The app
(Gradio) is imported after the cheap checks, so a bad argument fails in one line first."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

from benchmark.contract.human_sample import sample_path
from benchmark.human import users
from benchmark.human.answers_file import answers_path
from benchmark.human.events import check_annotator
from benchmark.human.items import read_run_manifest
from benchmark.human.plan import plan_markdown, plan_rows, read_pilot
from benchmark.human.sample import run_sample


def annotate_ui(args: argparse.Namespace) -> int:
    read_run_manifest(args.run_dir)  # a one-line error before Gradio is imported
    if args.qualification is not None and not Path(args.qualification).is_file():
        raise ValueError(f"qualification file {args.qualification} does not exist")
    if args.port is not None and not 1 <= args.port <= 65535:
        raise ValueError(f"--port must be between 1 and 65535, got {args.port}")
    if args.annotator is not None and not args.no_auth:
        raise ValueError("--annotator names the single annotator of --no-auth; with a login the annotator is "
                         "the signed-in user")
    from benchmark.human.app import LOCAL_ANNOTATOR, launch_app, login_settings  # Gradio: after the cheap checks

    mode, _ = login_settings(users=args.users, oauth=args.oauth, no_auth=args.no_auth, host=args.host)
    annotator = check_annotator(args.annotator or LOCAL_ANNOTATOR)
    print({"users": f"Login: the accounts of {args.users}.",
           "oauth": "Login: Sign in with Hugging Face.",
           "local": f"No login: every answer is recorded as annotator {annotator!r}; listening on {args.host} only."
           }[mode])
    print(f"Labels are appended to {answers_path(args.run_dir)}; stop with Ctrl+C (nothing is lost).")
    if args.sample is not None:
        record = run_sample(args.run_dir, args.sample, args.sample_seed, args.questions, args.suites)
        print(f"Calibration sample: {sum(r['size'] for r in record['suites'].values())} images of "
              f"{len(record['suites'])} suite(s), seed {record['seed']}, recorded in {sample_path(args.run_dir)}.")
    launch_app(args.run_dir, args.questions, args.qualification, users=args.users, oauth=args.oauth,
               no_auth=args.no_auth, local_annotator=annotator, host=args.host, port=args.port,
               attributes=args.attributes, suites=args.suites, sample=args.sample, sample_seed=args.sample_seed)
    return 0


def label_plan(args: argparse.Namespace) -> int:
    results = read_pilot(args.run)
    targets = dict(args.half_width or [])
    rows = plan_rows(results, targets, every_score=args.all_scores)
    if not rows:
        raise ValueError(f"{args.run} has no defined headline score to plan for (--all-scores plans every entry)")
    print(plan_markdown(rows))
    print("\nLabels needed: people-labelled images of a random sample (`t2ibench annotate-ui RUN_DIR --sample N`) for a "
          "corrected 95 % interval of the target half-width; a census is people's labels of every image.")
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


def annotate_user(args: argparse.Namespace) -> int:
    if args.remove:
        users.remove_user(args.users_file, args.name)
        print(f"removed {args.name} from {args.users_file}")
        return 0
    name = users.check_user_name(args.name)
    users.set_password(args.users_file, name, _read_password(args))
    print(f"{name} can log in to `t2ibench annotate-ui RUN_DIR --users {args.users_file}` "
          f"(restart a running app to take the change)")
    return 0
