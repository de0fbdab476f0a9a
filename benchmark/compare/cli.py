"""``t2ibench compare``: its options (light: read to build the parser, every value checked while
parsing). Its body is :func:`benchmark.commands.compare.run_compare`, loaded when the command runs
(its exit statuses are listed there)."""

from __future__ import annotations

import argparse
import math
import os

from benchmark.cli_types import output_file, positive_int

#: bytes of memory per resample a comparison may need: each score entry of each run keeps its
#: resampled statistic (8 bytes a resample), and a full audit holds a few hundred entries, with
#: their differences and copies: room for 4096 such arrays
BYTES_PER_RESAMPLE = 8 * 4096
SEED_LIMIT = 2**32  # numpy / scipy random states


def _memory_bytes() -> int:
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30  # not knowable here: assume a small machine


def max_resamples() -> int:
    """The most paired resamples this machine can hold (:data:`BYTES_PER_RESAMPLE` each)."""
    return max(1000, _memory_bytes() // BYTES_PER_RESAMPLE)


def resample_count(raw: str) -> int:
    """A number of paired resamples: a whole number from 2 to what the machine can hold."""
    value = positive_int(raw)
    top = max_resamples()
    if value < 2 or value > top:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 2 to {top:,} (the most this machine's {_memory_bytes() / 2**30:.0f} GiB "
            f"of memory can hold: every score's resamples are kept in memory), got {value:,}")
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
                        "Holm-corrected p-values and the smallest difference the audit can see",
        description="Compare run B (and C, ...) with the baseline run A: each run is rescored on the probes both "
                    "hold under one paired bootstrap (or read from results files that carry their paired "
                    "resamples), giving per score the difference, its interval, a Holm-corrected p-value and "
                    "the minimum detectable difference of the test that decides. A difference whose resamples "
                    "cannot vary is not tested. Exit 1 with --fail-if-worse when a named score is significantly "
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
    p.add_argument("--n-resamples", type=resample_count, help="paired bootstrap resamples (default: the number the "
                   "runs were scored with, 1000 if none was; results files: the number they carry)")
    p.add_argument("--random-state", type=random_state, help="seed of the paired resamples (default 0; results "
                   "files: the one they were scored with)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func="benchmark.commands.compare:run_compare")
