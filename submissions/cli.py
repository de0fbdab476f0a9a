"""``t2ibench validate``, ``submit``, ``init-results`` and ``push-metric``: checking results
and publishing them (and the metric modules) on the Hub. See docs/submit.md."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

import benchmark
from benchmark.cli_types import output_folder
from benchmark.hub.access import HubFile, commit_files
from submissions import queue_cli

EXIT_OK, EXIT_PROBLEMS, EXIT_UNREADABLE = 0, 1, 2


# --------------------------------------------------------------------------- validate


def validate_file(name: str, *, allow_demo: bool) -> tuple[int, list[str]]:
    """(exit status, output lines) of ``t2ibench validate`` for one file; never raises.

    Status 0: valid; 1: problems, or refused by a reading rule (size, depth, big integer,
    duplicate key, NaN); 2: not readable as a JSON object at all (missing, not JSON, an array).
    """
    from submissions.validate import (DEMO_NOTE, UnreadableResults, already_accepted, check_results, is_demo,
                                      load_results_file, one_line)

    label = one_line(name)
    accepted = already_accepted(name, allow_demo=allow_demo)
    if accepted:  # a contents table accepted these very bytes with these checks
        return EXIT_OK, [f"{label}: {accepted}"]
    from benchmark.tasks.folder_record import missing_task_folder

    missing = missing_task_folder(name)  # made with a task folder from outside the package, not loaded here
    if missing:
        return EXIT_PROBLEMS, [f"{label}: {one_line(missing)}"]
    try:
        doc = load_results_file(name)
        problems = check_results(doc, allow_demo=allow_demo)
    except UnreadableResults as exc:
        return (EXIT_PROBLEMS if exc.refused else EXIT_UNREADABLE), [f"{label}: {one_line(exc.reason)}"]
    except Exception as exc:  # a bug must not stop the files after this one
        return EXIT_PROBLEMS, [f"{label}: could not be checked ({type(exc).__name__}: {one_line(exc)})"]
    if problems:
        return EXIT_PROBLEMS, [f"{label}: {problem}" for problem in problems]
    return EXIT_OK, [f"{label}: ok" + (f" ({DEMO_NOTE})" if is_demo(doc) else "")]


def _cmd_validate(args: argparse.Namespace) -> int:
    status = EXIT_OK
    for name in args.files:
        code, lines = validate_file(name, allow_demo=args.allow_demo)
        # a file that cannot be read at all is an error (stderr); problems found are the report (stdout)
        print("\n".join(lines), flush=True, file=sys.stderr if code == EXIT_UNREADABLE else sys.stdout)
        status = max(status, code)
    return status


# --------------------------------------------------------------------------- submit


def _cmd_submit(args: argparse.Namespace) -> int:
    from submissions.submit import (
        SubmissionRefused,
        format_dry_run,
        plan_submission,
        send_submission,
    )

    from submissions.validate import one_line

    try:
        plan = plan_submission(args.run_dir, results_repo=args.repo, images_repo=args.push_images, demo=args.demo,
                               to_folder=args.to_folder, model_card=args.model_card, card_file=args.card_file,
                               token=args.token)
    except SubmissionRefused as exc:
        for problem in exc.problems:
            print(f"{one_line(exc.source)}: {problem}", file=sys.stderr)
        print(f"t2ibench submit: refused, {len(exc.problems)} problem(s) above "
              "(`t2ibench validate` lists the same)", file=sys.stderr)
        return EXIT_PROBLEMS
    if args.dry_run:
        print(format_dry_run(plan, verbose=args.verbose), end="")
        return EXIT_OK
    outcome = send_submission(plan, token=args.token)
    if plan.demo:
        print("demo submission: built-in tiny model, meaningless scores")
    if outcome.images_url:
        print(f"images pushed: {outcome.images_url}")
    if outcome.pr_url:
        print(f"pull request: {outcome.pr_url}")
    if outcome.card_pr_url:
        print(f"model card pull request: {outcome.card_pr_url}")
    if outcome.local_path:
        print(f"wrote {outcome.local_path}")
    return EXIT_OK


# --------------------------------------------------------------------------- plain commits (results card, metric Spaces)


def _print_commit(repo_id: str, repo_type: str, files: list[HubFile], message: str) -> None:
    print("DRY RUN: nothing is sent.\n")
    print(f"1. commit to {repo_type} {repo_id} (repo type {repo_type}, created if absent, branch main, "
          f"{len(files)} file{'' if len(files) == 1 else 's'})")
    print(f"    commit message: {message}")
    for f in files:
        print(f"    add {f.path_in_repo}  ({f.size} bytes, sha256 {f.sha256})")


def _cmd_init_results(args: argparse.Namespace) -> int:
    from submissions.submit import results_repo_card

    files = [HubFile("README.md", results_repo_card(args.repo))]
    message = "Results dataset card (t2i-bias-benchmark)"
    if args.dry_run:
        _print_commit(args.repo, "dataset", files, message)
        print(f"\n--- README.md\n{files[0].data().decode('utf-8')}", end="")
        return EXIT_OK
    url = commit_files(args.repo, files, repo_type="dataset", create_repo=True, commit_message=message,
                       token=args.token)
    print(f"results dataset ready: {url}")
    return EXIT_OK


def metrics_root() -> Path:
    """``metrics/`` of the checkout (beside the ``benchmark`` package)."""
    root = Path(benchmark.__file__).resolve().parent.parent / "metrics"
    if not root.is_dir():
        raise ValueError(f"no metrics/ folder at {root}: run push-metric from a checkout of t2i-bias-benchmark")
    return root


def metric_space_files(name: str) -> list[HubFile]:
    """The files of ``metrics/<name>`` as a Space, after checking its README's Space header."""
    root = metrics_root()
    folder = root / name
    known = sorted(p.name for p in root.iterdir() if (p / "README.md").is_file())
    if not (folder / f"{name}.py").is_file():
        raise ValueError(f"no metric module {name!r} in {root}; known: {', '.join(known)}")
    text = (folder / "README.md").read_text(encoding="utf-8") if (folder / "README.md").is_file() else ""
    head = text.split("---", 2)
    header = yaml.safe_load(head[1]) if text.startswith("---") and len(head) == 3 else None
    if not isinstance(header, dict):
        raise ValueError(f"{folder / 'README.md'} has no YAML header: a Space needs one (sdk, app_file)")
    if header.get("sdk") != "gradio" or not (folder / str(header.get("app_file", ""))).is_file():
        raise ValueError(f"{folder / 'README.md'}: the Space header needs `sdk: gradio` and an existing `app_file`")
    paths = [p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
    return sorted((HubFile(p.relative_to(folder).as_posix(), p) for p in paths), key=lambda f: f.path_in_repo)


def _cmd_push_metric(args: argparse.Namespace) -> int:
    files = metric_space_files(args.name)
    message = f"evaluate module {args.name} from t2i-bias-benchmark"
    if args.dry_run:
        _print_commit(args.repo, "space", files, message)
        print("    (Space SDK: gradio)")
        return EXIT_OK
    url = commit_files(args.repo, files, repo_type="space", create_repo=True, space_sdk="gradio",
                       commit_message=message, token=args.token)
    print(f"pushed metrics/{args.name} to {url}; load it with evaluate.load({args.repo!r})")
    return EXIT_OK


# --------------------------------------------------------------------------- registration


def register(subparsers) -> None:
    """Add this module's commands to the ``t2ibench`` subparsers."""
    val = subparsers.add_parser("validate", help="check results.json files (schema, ranges, CIs, demo models)")
    val.add_argument("files", nargs="+", metavar="FILE", help="results.json files or run folders")
    val.add_argument("--allow-demo", action="store_true",
                     help="accept runs of built-in tiny models (marked as demo: meaningless scores)")
    val.set_defaults(func=_cmd_validate)

    sub = subparsers.add_parser("submit", help="validate a run's results and open a pull request on the Hub "
                                "results dataset (and/or copy them into a local results folder)")
    sub.add_argument("run_dir", metavar="RUN_DIR", help="run folder (or its results.json)")
    sub.add_argument("--repo", metavar="ORG/RESULTS", help="Hub results dataset to open the pull request on")
    sub.add_argument("--dry-run", action="store_true", help="print what would be sent (a summary); send nothing")
    sub.add_argument("--verbose", action="store_true", help="with --dry-run: list every file and print the "
                     "results file itself")
    sub.add_argument("--demo", action="store_true", help="allow a built-in tiny model's run, marked as demo")
    sub.add_argument("--push-images", metavar="ORG/NAME", help="first push the run's images as this Hub dataset")
    sub.add_argument("--to-folder", metavar="DIR", type=output_folder, help="also write the file under DIR (e.g. submissions/results) "
                     "for the local leaderboard")
    sub.add_argument("--model-card", action="store_true", help="also open a pull request on the audited model's "
                     "repository adding the headline scores to its card's model-index (needs --repo, a Hub model "
                     "and a published probe set; never for demos)")
    sub.add_argument("--card-file", metavar="README", help="with --model-card: the model's current README.md, read "
                     "from this file instead of the Hub (offline dry runs)")
    sub.add_argument("--token", help="Hugging Face token (default: HF_TOKEN or the saved login)")
    sub.set_defaults(func=_cmd_submit)

    init = subparsers.add_parser("init-results", help="create the Hub results dataset with its card (maintainers)")
    init.add_argument("repo", metavar="ORG/RESULTS", help="the Hub results dataset to create")
    init.add_argument("--dry-run", action="store_true", help="print exactly what would be sent; send nothing")
    init.add_argument("--token", help="Hugging Face token (default: HF_TOKEN or the saved login)")
    init.set_defaults(func=_cmd_init_results)

    pm = subparsers.add_parser("push-metric", help="publish metrics/NAME as an evaluate Space on the Hub")
    pm.add_argument("name", metavar="NAME",
                    help="the evaluate module to publish: a folder of metrics/ (an unknown name lists them)")
    pm.add_argument("--repo", required=True, metavar="ORG/NAME", help="the Space to create or update")
    pm.add_argument("--dry-run", action="store_true", help="print exactly what would be sent; send nothing")
    pm.add_argument("--token", help="Hugging Face token (default: HF_TOKEN or the saved login)")
    pm.set_defaults(func=_cmd_push_metric)
    queue_cli.register(subparsers)  # request, worker
