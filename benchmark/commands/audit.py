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
from benchmark.models.quantization import parse_quantization
from benchmark.commands.stage_inputs import annotator_args, print_outcome, task_input_args, stage_batch_size
from benchmark.runner import run_generation
from benchmark.runner.pipeline import run_audit
from benchmark.runner.preflight import preflight
from benchmark.tasks.paper_checks import all_checks


def request_from_args(args: argparse.Namespace, *, annotators: bool = True) -> AuditRequest:
    """The audit request of a ``run`` / ``generate`` command line (``annotators``: the command has
    the label stage's options), validated once (a one-line ValueError names the option)."""
    images, api = getattr(args, "images", None), api_overrides(args)
    if images:  # images made elsewhere: nothing sets up a generator
        given = [f for f, v in (("--set", args.set), ("--revision", args.revision), ("--dtype", args.dtype),
                                ("--lora", args.lora), ("--unet", args.unet), ("--base", args.base),
                                ("--quantize", args.quantize)) if v]
        if given:
            raise ValueError(f"{given[0]} sets up a generator: --images audits images already made")
    if images and getattr(args, "dry_run", False):
        raise ValueError("--dry-run plans the images a model would make (--model); --images audits images already "
                         "made (`t2ibench probes export` writes the sheet they follow)")
    parse_lora_specs(args.lora)  # the syntax, before any work (the files are found and checked in preflight)
    parse_quantization(getattr(args, "quantize", None))
    model = None if images else ModelChoice(args.model, revision=args.revision, settings=parse_overrides(args.set),
                                            api=api, adapters=tuple(args.lora or ()),
                                            components={"unet": args.unet} if args.unet else {}, base=args.base,
                                            quantization=args.quantize, lora_unet_only=args.lora_unet_only,
                                            lora_trigger=getattr(args, "lora_trigger", None))
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
    request = request_from_args(args)
    if args.dry_run:
        return dry_run(request)
    outcome = run_audit(request)
    if outcome.main_process:
        print_outcome(outcome)
    return 0


def dry_run(request: AuditRequest) -> int:
    """``--dry-run``: every check of the run, then the whole plan on stdout (every setting with its
    source, the adapters and what their cards say, the warnings, annotators, images); nothing is
    written: no run folder, no file in it (caches outside it may fill: the built-in model's build,
    a Hub model's model_index.json)."""
    plan = preflight(request)
    print(plan.format())
    state = "is left as it is" if request.run_dir.exists() else "is not created"
    print(f"dry run: nothing written ({request.run_dir} {state}); run the same command without --dry-run to audit")
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
