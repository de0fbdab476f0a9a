"""Bodies of ``t2ibench run``, ``generate`` and ``demo``. ``benchmark.cli`` names them as
``module:function`` and imports this module only when one of them runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmark.commands.external_models import api_overrides, check_source
from benchmark.contract.model_specs import check_model_spec
from benchmark.models.api_images import check_api_endpoint
from benchmark.commands.stage_inputs import (
    annotator_args, parse_overrides, print_outcome, task_input_args, stage_batch_size,
)
from benchmark.runner import run_generation
from benchmark.runner.pipeline import run_audit
from benchmark.runner.supplied_images import run_supplied_audit
from benchmark.tasks.paper_checks import all_checks


def run(args: argparse.Namespace) -> int:
    check_source(args)
    if args.model:
        check_model_spec(args.model)  # the name rule `t2ibench validate` applies to the results
    if args.images:  # images made elsewhere
        print_outcome(_run_images(args, annotator_args(args)))
        return 0
    outcome = run_audit(args.out, args.model, args.suites, limit_per_suite=args.limit,
                        batch_size=args.batch_size, revision=args.revision, device=args.device, dtype=args.dtype,
                        overrides={**parse_overrides(args.set), **api_overrides(args)},
                        annotators=annotator_args(args),
                        n_resamples=args.n_resamples, progress=not args.quiet, probes=args.probes,
                        probes_revision=args.probes_revision, **task_input_args(args), compile=args.compile,
                        offload=args.offload)
    if outcome.main_process:
        print_outcome(outcome)
    return 0


def _run_images(args: argparse.Namespace, annotators: dict):
    """``t2ibench run --images``: see :func:`benchmark.runner.supplied_images.run_supplied_audit`."""
    if args.set or args.revision or args.dtype:
        raise ValueError("--set, --revision and --dtype set up a generator: --images audits images already made")
    return run_supplied_audit(args.out, args.images, args.model_name, args.suites, limit_per_suite=args.limit,
                              mapping=args.mapping, allow_missing=args.allow_missing, supplied_by=args.supplied_by,
                              annotators=annotators, n_resamples=args.n_resamples, batch_size=args.batch_size,
                              progress=not args.quiet, probes=args.probes, probes_revision=args.probes_revision,
                              device=args.device)


def generate(args: argparse.Namespace) -> int:
    check_model_spec(args.model)
    overrides = {**parse_overrides(args.set), **api_overrides(args)}
    if str(args.model).startswith("openai:"):  # `run` checks the endpoint in its preflight; so does `generate`
        check_api_endpoint(str(args.model).split(":", 1)[1], overrides)
    summary = run_generation(args.out, args.model, args.suites, args.limit, args.batch_size,
                             revision=args.revision, device=args.device, dtype=args.dtype,
                             overrides=overrides, progress=not args.quiet,
                             probes=args.probes, probes_revision=args.probes_revision, **task_input_args(args),
                             compile=args.compile, offload=args.offload)
    print(summary.format())
    return 0


def demo(args: argparse.Namespace) -> int:
    print("Offline audit of builtin:tiny-sd, a tiny random-weight model: its scores are meaningless and only show "
          "that every stage runs. For a real model: t2ibench run --model stable-diffusion-v1-5/stable-diffusion-v1-5 "
          "--out runs/sd15\n")
    outcome = run_audit(Path(args.out), "builtin:tiny-sd", None, limit_per_suite=args.limit,
                        batch_size=stage_batch_size(args.batch_size, 8), n_resamples=args.n_resamples,
                        progress=not args.quiet)
    print_outcome(outcome)
    checks = all_checks()
    passed = sum(c.passed for c in checks)
    print(f"\nPaper checks: {passed} of {len(checks)} printed numbers recomputed from the papers' printed inputs "
          "(`t2ibench reproduce` shows the table).")
    return 0 if passed == len(checks) else 1
