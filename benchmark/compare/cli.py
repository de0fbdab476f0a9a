"""``t2ibench compare``: its options (light: read to build the parser, every value checked while
parsing). Its body is :func:`benchmark.commands.compare.run_compare`, loaded when the command runs
(its exit statuses are listed there)."""

from __future__ import annotations

import argparse
import math

from benchmark.cli_types import output_file, positive_int, whole_number

#: the most paired resamples (and swaps) a comparison takes: each score of each pair of runs is
#: evaluated on this many resamples and as many swaps, so time grows with it (docs/compare.md
#: gives the measured time of a full-size comparison at the default 1000; 20,000 is 20 times that)
MAX_COMPARE_RESAMPLES = 20_000
SEED_LIMIT = 2**32  # numpy / scipy random states


def resample_count(raw: str) -> int:
    """A number of paired resamples (and swaps): a whole number from 2 to
    :data:`MAX_COMPARE_RESAMPLES`."""
    value = positive_int(raw)
    if value < 2 or value > MAX_COMPARE_RESAMPLES:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 2 to {MAX_COMPARE_RESAMPLES:,} (every score is evaluated on this many "
            f"paired resamples and as many swaps of the runs' images: the time grows with it), got {value:,}")
    return value


def random_state(raw: str) -> int:
    """A seed: a whole number in [0, 2**32)."""
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {SEED_LIMIT - 1}, got {raw!r}") from None
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {SEED_LIMIT - 1}, got {value}")
    return value


def detect_target(raw: str) -> tuple[str | None, float]:
    """``X`` (a change in each score's own units) or ``SCORE=X``: a positive, finite number."""
    name, _, number = raw.rpartition("=")
    try:
        value = float(number)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value > 0) or (name == "" and "=" in raw):
        raise argparse.ArgumentTypeError(f"expected a positive change X or SCORE=X, got {raw!r}")
    return (name or None), value


def register(subparsers) -> None:
    """Add ``compare`` to the ``t2ibench`` subparsers."""
    p = subparsers.add_parser(
        "compare", help="did my change reduce bias? paired differences between audits, with intervals, "
                        "Holm-corrected randomization p-values and the smallest difference the audit can see",
        description="Compare run B (and C, ...) with the baseline run A: each run is rescored on the probes both "
                    "hold (or rebuilt from results files, which carry their per-probe labels), giving per score "
                    "the difference, its interval, the p-value of a paired randomization test (swaps of the two "
                    "runs' images, exact at any size), Holm-corrected, and the minimum detectable difference of "
                    "the test that decides. A score no swap can change is not tested. Exit 1 with --fail-if-worse when a named score is significantly "
                    "worse, 3 when it could not be compared (unless --allow-missing), 2 on bad input.")
    p.add_argument("runs", nargs="+", metavar="RUN", help="run folders, their results.json, or results files alone "
                   "(also hf://datasets/OWNER/NAME[@REVISION]/PATH.json); the first is the baseline A, at least two")
    p.add_argument("--scores", nargs="+", metavar="SCORE", help="compare only these scores (`t2ibench scores` "
                   "lists them; default: every score both runs hold)")
    p.add_argument("--out", type=output_file, metavar="FILE.json", help="write the comparison as JSON, and beside "
                   "it FILE.md (Markdown for a pull-request comment) and FILE.png (forest plot of the differences); "
                   "never inside a run folder")
    p.add_argument("--markdown", type=output_file, metavar="FILE.md", help="write the Markdown here (default: "
                   "beside --out)")
    p.add_argument("--plot", type=output_file, metavar="FILE.png", help="write the forest plot here (default: "
                   "beside --out)")
    p.add_argument("--fail-if-worse", nargs="+", metavar="SCORE", help="exit 1 when one of these scores (or `all`: "
                   "every score with a better direction) is significantly worse than in the baseline after Holm's "
                   "correction, 3 when one could not be compared")
    p.add_argument("--allow-missing", action="store_true", help="with --fail-if-worse: a score that could not be "
                   "compared passes the gate (with a note) instead of failing it")
    p.add_argument("--detect", nargs="+", type=detect_target, metavar="X", help="for each headline score, the images "
                   "per prompt needed to detect a change of X (in the score's own units; SCORE=X for one score)")
    p.add_argument("--n-resamples", type=resample_count, help="paired bootstrap resamples, and swaps of the runs' "
                   "images for the randomization test (more where a p-value could decide; default: the number the "
                   f"runs were scored with, 1000 if none was; at most {MAX_COMPARE_RESAMPLES:,})")
    p.add_argument("--random-state", type=random_state, help="seed of the paired resamples (default 0; results "
                   "files: the one they were scored with)")
    p.add_argument("--mdd-pairs", type=whole_number(0, 1000), metavar="N", help="pairs of audits the printed MDD "
                   "is simulated from, drawn from a fit of the runs' labels (default: benchmark.runner.planning's "
                   "MDD_PAIRS; 0: the normal formula on the swaps' spread, which does not keep the MDD's promise of "
                   "power 0.8: docs/compare.md, Calibration)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func="benchmark.commands.compare:run_compare")
