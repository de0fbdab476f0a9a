"""Body of ``t2ibench probes export`` (options in :mod:`benchmark.commands.probe_export`), imported
only when the command runs."""

from __future__ import annotations

import argparse

from benchmark.contract.model_specs import check_model_spec
from benchmark.probes.sheet import export_sheet, selection_record
from benchmark.contract.audit_request import ProbeChoice
from benchmark.runner.probe_choice import choose_probes, probes_fingerprint


def sheet_model_takes_seeds(spec: str | None) -> bool:
    """Whether the images of ``spec`` can follow the sheet's seeds: False for an image API (the
    OpenAI Images API takes no seed). The spec is checked as ``t2ibench run`` checks it, without
    a key or a download: the naming rule of the results, the spec's syntax, and an API model's
    name (a misspelt ``openai:dalle-2`` is refused here, not only by ``run``)."""
    if spec is None:
        return True
    from benchmark.models.api_images import API_MODELS
    from benchmark.models.errors import MalformedSpecError
    from benchmark.models.text_to_image import parse_text_to_image_spec

    check_model_spec(spec)
    kind, value = parse_text_to_image_spec(spec)
    if kind == "openai" and value not in API_MODELS:  # run's check (api_images.check_api_model) says the same
        raise MalformedSpecError(f"unknown OpenAI image model {value!r}: use openai:{', openai:'.join(API_MODELS)}")
    return kind != "openai"


def export(args: argparse.Namespace) -> int:
    seeds = sheet_model_takes_seeds(args.model)
    chosen = choose_probes(ProbeChoice(args.probes, args.probes_revision, args.suites, args.limit))
    selection = selection_record(chosen.suites, args.limit, args.probes, probes_fingerprint(chosen.limited))
    try:
        sheet, readme = export_sheet(args.out, chosen.limited, selection, seeds=seeds)
    except OSError as exc:
        raise ValueError(f"--out {args.out}: cannot write the sheet ({exc.strerror or type(exc).__name__})") from None
    print(f"wrote {sheet} ({len(chosen.limited)} images to make in {len(chosen.suites)} suite(s)) and {readme}")
    return 0
