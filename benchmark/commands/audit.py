"""Bodies of ``t2ibench run``, ``generate`` and ``demo``. ``benchmark.cli`` names them as
``module:function`` and imports this module only when one of them runs. Each builds the one
:class:`~benchmark.contract.audit_request.AuditRequest` of its command line
(:func:`request_from_args`) and hands it to the runner."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmark.commands.external_models import api_overrides, check_source, parse_overrides
from benchmark.contract.audit_request import AuditRequest, ModelChoice, ProbeChoice, Runtime, SuppliedImages
from benchmark.models.lora import parse_lora_specs
from benchmark.commands.stage_inputs import annotator_args, print_outcome, task_input_args, stage_batch_size
from benchmark.runner import run_generation
from benchmark.runner.pipeline import run_audit
from benchmark.tasks.paper_checks import all_checks


def request_from_args(args: argparse.Namespace, *, annotators: bool = True) -> AuditRequest:
    """The audit request of a ``run`` / ``generate`` command line (``annotators``: the command has
    the label stage's options), validated once (a one-line ValueError names the option)."""
    images, api = getattr(args, "images", None), api_overrides(args)
    if images:  # images made elsewhere: nothing sets up a generator
        given = [f for f, v in (("--set", args.set), ("--revision", args.revision), ("--dtype", args.dtype),
                                ("--lora", args.lora), ("--unet", args.unet)) if v]
        if given:
            raise ValueError(f"{given[0]} sets up a generator: --images audits images already made")
    parse_lora_specs(args.lora)  # the syntax, before any work (the files are found and checked in preflight)
    model = None if images else ModelChoice(args.model, revision=args.revision, settings=parse_overrides(args.set),
                                            api=api, adapters=tuple(args.lora or ()),
                                            components={"unet": args.unet} if args.unet else {})
    supplied = SuppliedImages(images, args.model_name, mapping=args.mapping, allow_missing=args.allow_missing,
                              supplied_by=args.supplied_by) if images else None
    return AuditRequest(
        run_dir=Path(args.out), model=model, images=supplied,
        probes=ProbeChoice(args.probes, args.probes_revision, args.suites, args.limit, task_input_args(args)),
        runtime=Runtime(device=args.device, dtype=args.dtype, batch_size=args.batch_size,
                        compile=getattr(args, "compile", None), offload=getattr(args, "offload", None)),
        annotators=annotator_args(args) if annotators else {},
        n_resamples=args.n_resamples if annotators else 1000, progress=not args.quiet,
        pilot=getattr(args, "pilot", None), allow_degenerate=args.allow_degenerate)


def run(args: argparse.Namespace) -> int:
    check_source(args)
    outcome = run_audit(request_from_args(args))
    if outcome.main_process:
        print_outcome(outcome)
    return 0


def generate(args: argparse.Namespace) -> int:
    request = request_from_args(args, annotators=False)  # an image API's endpoint: checked first (check_api_first)
    summary = run_generation(request)
    print(summary.format())
    return 0


def demo(args: argparse.Namespace) -> int:
    print("Offline audit of builtin:tiny-sd, a tiny random-weight model: its scores are meaningless and only show "
          "that every stage runs. For a real model: t2ibench run --model stable-diffusion-v1-5/stable-diffusion-v1-5 "
          "--out runs/sd15\n")
    request = AuditRequest(run_dir=Path(args.out), model="builtin:tiny-sd",
                           probes=ProbeChoice(limit_per_suite=args.limit),
                           runtime=Runtime(batch_size=stage_batch_size(args.batch_size, 8)),
                           n_resamples=args.n_resamples, progress=not args.quiet)
    print_outcome(run_audit(request))
    checks = all_checks()
    passed = sum(c.passed for c in checks)
    print(f"\nPaper checks: {passed} of {len(checks)} printed numbers recomputed from the papers' printed inputs "
          "(`t2ibench reproduce` shows the table).")
    return 0 if passed == len(checks) else 1
