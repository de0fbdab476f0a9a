"""``t2ibench compare`` (options: :mod:`benchmark.compare.cli`): check every output before any
work, compare the runs (each folder checked as ``t2ibench verify`` checks it), print and write
the comparison, say which ``--limit`` left prompts one image, and gate.

Exit status: 0; 1 when a score named by ``--fail-if-worse`` is significantly worse; 3 when one
could not be compared (the gate fails closed; ``--allow-missing`` lets such a score pass with a
note); 2 on bad input (one line, before any work).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmark.cli_types import output_file
from benchmark.compare import compare_runs
from benchmark.compare.comparison import Comparison
from benchmark.compare.paired import has_direction
from benchmark.compare.present import comparison_markdown, detect_lines, plot_comparison, print_comparison, write_json
from benchmark.compare.runs import HUB_PREFIX
from benchmark.commands.detect import simulated_detect
from benchmark.commands.mdd import simulated_mdd
from benchmark.contract.atomic import write_bytes_atomic
from benchmark.contract.run_folder import MANIFEST_FILE
from benchmark.contract.run_folder_check import resolves_inside
from benchmark.runner.expected import expected_probes, expected_problems
from benchmark.runner.planning import MDD_PAIRS
from benchmark.runner.probe_choice import limit_probes, prompt_key
from benchmark.scores.design import single_image_warnings
from benchmark.scores.metadata import SCORE_METADATA

EXIT_WORSE = 1
EXIT_NOT_COMPARED = 3


def _gate_names(names: list[str] | None) -> list[str] | None:
    """The scores ``--fail-if-worse`` names ([] for `all`), checked: known, and with a direction."""
    if not names:
        return None
    if "all" in names:
        return []
    for option_name in names:
        if option_name not in SCORE_METADATA:
            raise ValueError(f"--fail-if-worse: unknown score {option_name!r}; `t2ibench scores` lists them, or use "
                             "all")
        if not has_direction(SCORE_METADATA[option_name]):
            raise ValueError(f"--fail-if-worse: {option_name} has no better direction (it is described, never "
                             "worse); gate on a score that has one")
    return names


def _outputs(args: argparse.Namespace) -> dict[str, Path]:
    """The files compare will write, checked before any work: writable, not folders, never one of
    the runs' files nor inside a run folder."""
    out = Path(args.out) if args.out else None
    paths = {"json": out, "markdown": Path(args.markdown) if args.markdown else (out.with_suffix(".md") if out else None),
             "plot": Path(args.plot) if args.plot else (out.with_suffix(".png") if out else None)}
    paths = {k: v for k, v in paths.items() if v is not None}
    runs = [Path(r) for r in args.runs if not str(r).startswith(HUB_PREFIX)]
    folders = [r if r.is_dir() else r.parent for r in runs if r.is_dir() or (r.parent / MANIFEST_FILE).is_file()]
    for what, path in paths.items():
        try:
            output_file(str(path))
        except argparse.ArgumentTypeError as exc:
            raise ValueError(f"--{'out' if what == 'json' else what}: {exc}") from None
        inside = [f for f in folders if resolves_inside(path, f.resolve())]
        same = [r for r in runs if r.exists() and path.resolve() == r.resolve()]
        if inside or same:
            where = f"inside the run folder {inside[0]}" if inside else "one of the runs compared"
            raise ValueError(f"{path} is {where}: compare never writes into a run; write it elsewhere")
    if len({p.resolve() for p in paths.values()}) < len(paths):
        raise ValueError("--out, --markdown and --plot name the same file")
    return paths


def _gate(comparison, names: list[str], allow_missing: bool) -> int:
    """The exit status of ``--fail-if-worse names`` ([]: all): 1 worse, 3 not compared, else 0."""
    wanted = names or None
    missing = comparison.uncompared(wanted)
    for r in missing:
        where = f"{r['name']} ({r['suite']})" if r.get("suite") else r["name"]
        line = f"--fail-if-worse: {where} could not be compared in {r['run']}: {r['reason']}"
        print(("note: " + line + " (passed: --allow-missing)") if allow_missing else f"t2ibench: error: {line}",
              file=sys.stderr)
    worse = comparison.worse(wanted)
    if worse:
        print("significantly worse: " + ", ".join(f"{r['name']} ({r['suite']}) in {r['run']}" for r in worse))
        return EXIT_WORSE
    if missing and not allow_missing:
        print(f"t2ibench: error: the gate cannot pass: {len(missing)} gated score(s) could not be compared "
              "(--allow-missing lets them pass)", file=sys.stderr)
        return EXIT_NOT_COMPARED
    return 0


def limit_notes(comparison: Comparison) -> list[str]:
    """When a compared score has cells of one image (a MAD of two categories is then constant, and no
    resample can see such a cell's noise): each run's ``--limit`` that left prompts one image, and
    the limit that would not (:mod:`benchmark.scores.design`)."""
    if not any(d.get("single") for r in comparison.rows for d in (r.get("strata") or {}).values()):
        return []
    notes = []
    for run in comparison.runs:
        limit = run.config.get("limit_per_suite")
        full = expected_probes({**run.config, "limit_per_suite": None})[0] if limit else None
        if full is not None:
            notes += [f"{run.label} (--limit {limit}): {line}" for line in
                      single_image_warnings(full, limit_probes(full, limit), limit_probes, prompt_key)]
    return notes


def run_compare(args: argparse.Namespace) -> int:
    """``t2ibench compare`` (the computation: :func:`benchmark.compare.compare_runs`)."""
    if len(args.runs) < 2:
        raise ValueError("compare needs at least two runs: the baseline first, then the run(s) to compare with it")
    if args.allow_missing and not args.fail_if_worse:
        raise ValueError("--allow-missing goes with --fail-if-worse")
    outputs = _outputs(args)
    fail = _gate_names(args.fail_if_worse)
    for name, _ in args.detect or ():
        if name is not None and name not in SCORE_METADATA:
            raise ValueError(f"--detect: unknown score {name!r}; `t2ibench scores` lists them")
    comparison = compare_runs(*args.runs, scores=args.scores, n_resamples=args.n_resamples,
                              random_state=args.random_state, progress=not args.quiet,
                              detect=args.detect, verify=True, expected=expected_problems)
    simulated_mdd(comparison, MDD_PAIRS if args.mdd_pairs is None else args.mdd_pairs, progress=not args.quiet)
    comparison.notes += limit_notes(comparison)
    if comparison.detect:
        comparison.detect = simulated_detect(comparison)
    print_comparison(comparison)
    for line in detect_lines(comparison):
        print(line)
    written = []
    if "json" in outputs:
        written.append(write_json(comparison, outputs["json"]))
    if "markdown" in outputs:
        written.append(write_bytes_atomic(outputs["markdown"], comparison_markdown(comparison).encode("utf-8")))
    if "plot" in outputs and plot_comparison(comparison, outputs["plot"]) is not None:
        written.append(outputs["plot"])
    if written:
        print("written: " + ", ".join(str(w) for w in written))
    return 0 if fail is None else _gate(comparison, fail, args.allow_missing)
