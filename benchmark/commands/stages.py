"""Bodies of the stages run one by one on a run folder: ``annotate``, ``score``, ``verify``,
``report``. ``benchmark.cli`` names them as ``module:function`` and imports this module only
when one of them runs."""

from __future__ import annotations

import argparse

from benchmark.commands.stage_inputs import annotator_args, existing_run, stage_batch_size
from benchmark.contract.run_folder_check import ANNOTATE_REPAIRS, inspect_run_folder
from benchmark.runner.annotate import DEFAULT_BATCH_SIZE, annotate_run
from benchmark.runner.expected import expected_problems
from benchmark.runner.preflight import check_stage_inputs
from benchmark.runner.report import write_report
from benchmark.runner.score import score_run
from benchmark.present.terminal import print_error


def annotate(args: argparse.Namespace) -> int:
    run_dir = existing_run(args.run_dir)
    check_stage_inputs(run_dir, "annotate")
    summary = annotate_run(run_dir, device=args.device, force=args.force, progress=not args.quiet,
                           suites=args.suites,
                           batch_size=stage_batch_size(args.batch_size, DEFAULT_BATCH_SIZE),
                           annotators=annotator_args(args), verify=True)
    if args.quiet:  # with progress on, the stage prints its own summary line
        print(summary)
    return 0


def score(args: argparse.Namespace) -> int:
    run_dir = existing_run(args.run_dir)
    check_stage_inputs(run_dir, "score")
    results = score_run(run_dir, n_resamples=args.n_resamples, verify=True, allow_degenerate=args.allow_degenerate)
    suites = results.get("suites", [])
    if not any(s.get("status") == "scored" for s in suites):
        reasons = sorted({str(s.get("reason") or s.get("status")) for s in suites})
        print_error(f"nothing scored in {run_dir}: {'; '.join(reasons) or 'no suites'} "
                    f"(`t2ibench annotate {run_dir}` writes the label files)")
        return 1
    partial = [s for s in suites if s.get("status") != "scored" or s.get("reason")]
    if partial and not args.allow_partial:  # fewer entries than the run's suites define
        shown = "; ".join(f"{s.get('name')} ({s.get('reason') or s.get('status')})" for s in partial)
        print_error(f"{len(partial)} of {len(suites)} suites of {run_dir} not fully scored: {shown}; wrote "
                    f"{run_dir / 'results.json'} with them missing (`t2ibench annotate {run_dir}` writes missing "
                    "label files; --allow-partial accepts partial results)")
        return 1
    print(f"wrote {run_dir / 'results.json'}" + (f" ({len(partial)} of {len(suites)} suites not fully scored, "
                                                 "--allow-partial)" if partial else ""))
    return 0


def verify(args: argparse.Namespace) -> int:
    check = inspect_run_folder(existing_run(args.run_dir, damaged_config_ok=True), expected=expected_problems)
    if check.ok:
        print(f"OK {check.run_dir}: {check.summary()} match their records")
        return 0
    width = max(len(p.kind) for p in check.problems)
    force = " --force" if any(p.kind == "label-schema" for p in check.problems) else ""
    for p in check.problems:
        print(f"{p.kind:<{width}}  {p.line()}")
    print(f"{len(check.problems)} problem{'s' if len(check.problems) > 1 else ''} in {check.run_dir} "
          f"(checked {check.summary()}); "
          + ("no command repairs run_config.json: restore it, or start the run again in another folder"
             if any(p.kind == "run-config" for p in check.problems) else
             f"`t2ibench annotate {check.run_dir}{force}` repairs {'it' if len(check.problems) == 1 else 'them'}"
             if all(p.kind in ANNOTATE_REPAIRS for p in check.problems) else
             f"`t2ibench run` with the run's arguments repairs the images and the manifest, "
             f"`t2ibench annotate {check.run_dir}{force}` the label files"))
    return 1


def report(args: argparse.Namespace) -> int:
    run_dir = existing_run(args.run_dir)
    check_stage_inputs(run_dir, "report")
    print(f"wrote {write_report(run_dir)}")
    return 0
