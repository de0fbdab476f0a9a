"""What the stage commands share: reading a run folder named on the command line, the
``--set`` and annotator options, the summary printed after an audit."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmark.annotate.registry import list_annotator_kinds
from benchmark.cli_types import AUTO
from benchmark.contract.run_folder import CONFIG_FILE, RunFolderError, read_run_config
from benchmark.runner.preflight import check_run_config_format
from benchmark.present.terminal import print_results_summary


def annotator_args(args: argparse.Namespace) -> dict:
    """Annotator options: the named flags (``args.annotator_flags``, set by the parser that defines
    them), then ``--annotator OPTION=MODEL`` (a plugin's too)."""
    out = {flag: getattr(args, flag, None) for flag in args.annotator_flags}
    for v in getattr(args, "annotator", None) or []:
        key, sep, raw = v.partition("=")
        if not sep or not key:
            raise ValueError(f"--annotator takes OPTION=MODEL (e.g. vqa=Salesforce/blip2-opt-2.7b), got {v!r}")
        out[key.strip().replace("-", "_")] = raw.strip()
    known = {k.option for k in list_annotator_kinds()} | {x for k in list_annotator_kinds() for x in k.settings}
    unknown = [k for k, v in out.items() if v is not None and k not in known]
    if unknown:
        raise ValueError(f"unknown annotator option {unknown[0]!r}; options: {', '.join(sorted(known))}")
    return out


def task_input_args(args: argparse.Namespace) -> dict:
    """The task inputs of a run by name (``args.task_inputs``, set by the parser that generated
    their options from the task folders' declarations)."""
    return {name: getattr(args, name) for name in args.task_inputs}


def print_outcome(outcome) -> None:
    print_results_summary(json.loads(outcome.results_path.read_text()))
    times = ", ".join(f"{k} {v:.1f} s" for k, v in outcome.stage_seconds.items())
    print(f"\nresults: {outcome.results_path}\nreport:  {outcome.report_path}\ntime:    {times}")


def stage_batch_size(value: int | str, default: int) -> int:
    """A stage that sizes its batches by a fixed number (annotate, the demo) reads ``auto`` as its
    default; generation resolves ``auto`` itself (:mod:`benchmark.runner.batch_size`)."""
    return default if value == AUTO else int(value)


def existing_run(path: str, *, damaged_config_ok: bool = False) -> Path:
    """The run folder ``path`` names, refused (one line) when its run_config.json is of a format
    this version does not read. ``damaged_config_ok``: a run_config.json that is not a run
    configuration at all passes here (``verify`` reports it as a problem of the folder)."""
    run_dir = Path(path)
    if not (run_dir / CONFIG_FILE).is_file():
        raise ValueError(f"{run_dir} is not a run folder (no run_config.json); make one with `t2ibench run`")
    if damaged_config_ok:
        try:
            read_run_config(run_dir)
        except RunFolderError:
            return run_dir
    check_run_config_format(run_dir)
    return run_dir
