"""``t2ibench compare``: its options (light: read to build the parser) and its body, which loads
the scoring code only when the command runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmark.cli_types import positive_int

EXIT_WORSE = 1


def register(subparsers) -> None:
    """Add ``compare`` to the ``t2ibench`` subparsers."""
    p = subparsers.add_parser(
        "compare", help="did my change reduce bias? paired differences between audits, with intervals, "
                        "Holm-corrected p-values and the smallest difference the audit can see",
        description="Compare run B (and C, ...) with the baseline run A: each run is rescored on the probes both "
                    "hold under one paired bootstrap, giving per score the difference, its interval, a "
                    "Holm-corrected p-value and the minimum detectable difference. A score whose estimators "
                    "differ between the runs is refused by name. Exit 1 with --fail-if-worse when a named score "
                    "is significantly worse, 2 on bad input.")
    p.add_argument("runs", nargs="+", metavar="RUN", help="run folders (or their results.json); the first is the "
                   "baseline A, at least two")
    p.add_argument("--scores", nargs="+", metavar="SCORE", help="compare only these scores (`t2ibench scores` "
                   "lists them; default: every score both runs hold)")
    p.add_argument("--out", metavar="FILE.json", help="write the comparison as JSON, and beside it FILE.md "
                   "(Markdown for a pull-request comment) and FILE.png (forest plot of the differences)")
    p.add_argument("--markdown", metavar="FILE.md", help="write the Markdown here (default: beside --out)")
    p.add_argument("--plot", metavar="FILE.png", help="write the forest plot here (default: beside --out)")
    p.add_argument("--fail-if-worse", nargs="+", metavar="SCORE", help="exit 1 when one of these scores (or "
                   "`all`) is significantly worse than in the baseline, after Holm's correction")
    p.add_argument("--n-resamples", type=positive_int, help="paired bootstrap resamples (default: the number the "
                   "runs were scored with, 1000 if none was)")
    p.add_argument("--random-state", type=int, default=0, help="seed of the paired resamples (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=f"{__package__}.cli:run_compare")


def _fail_names(names: list[str] | None) -> list[str] | None:
    if not names:
        return None
    if "all" in names:
        return []
    from benchmark.scores.metadata import SCORE_METADATA

    unknown = [n for n in names if n not in SCORE_METADATA]
    if unknown:
        raise ValueError(f"--fail-if-worse: unknown score {unknown[0]!r}; `t2ibench scores` lists them, or use all")
    return names


def run_compare(args: argparse.Namespace) -> int:
    """``t2ibench compare`` (the computation: :func:`benchmark.compare.compare_runs`)."""
    from benchmark.compare import compare_runs
    from benchmark.compare.present import comparison_markdown, plot_comparison, print_comparison, write_json

    if len(args.runs) < 2:
        raise ValueError("compare needs at least two runs: the baseline first, then the run(s) to compare with it")
    fail = _fail_names(args.fail_if_worse)
    comparison = compare_runs(*args.runs, scores=args.scores, n_resamples=args.n_resamples,
                              random_state=args.random_state, progress=not args.quiet)
    print_comparison(comparison)
    out = Path(args.out) if args.out else None
    written = []
    if out is not None:
        written.append(write_json(comparison, out))
    md = Path(args.markdown) if args.markdown else (out.with_suffix(".md") if out else None)
    if md is not None:
        md.parent.mkdir(parents=True, exist_ok=True)
        md.write_text(comparison_markdown(comparison), encoding="utf-8")
        written.append(md)
    png = Path(args.plot) if args.plot else (out.with_suffix(".png") if out else None)
    if png is not None and plot_comparison(comparison, png) is not None:
        written.append(png)
    if written:
        print("written: " + ", ".join(str(w) for w in written))
    if fail is not None:
        compared = {r["name"] for r in comparison.compared()}
        for name in [n for n in fail if n not in compared]:
            print(f"note: --fail-if-worse {name}: not compared (see the table), so it cannot fail the comparison",
                  file=sys.stderr)
        worse = comparison.worse(fail or None)
        if worse:
            print("significantly worse: " + ", ".join(f"{r['name']} ({r['suite']}) in {r['run']}" for r in worse))
            return EXIT_WORSE
    return 0
