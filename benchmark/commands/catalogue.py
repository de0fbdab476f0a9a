"""Bodies of the commands that read the benchmark's own tables: ``probes list``, ``probes build``,
``scores`` and ``reproduce``. ``benchmark.cli`` names them as ``module:function`` and imports
this module only when one of them runs, so ``t2ibench --help`` stays light."""

from __future__ import annotations

import argparse

from benchmark.commands.doc_tables import score_table
from benchmark.papers import PAPERS
from benchmark.probes import build_suite, get_suite, list_suites
from benchmark.probes import dataset as probe_builder
from benchmark.scores.metadata import SCORE_METADATA
from benchmark.tasks.paper_checks import all_checks, checked_families, is_headline
from benchmark.present.terminal import print_score_metadata


def probes_list(args: argparse.Namespace) -> int:
    print(f"{'suite':<24}{'rows':>7}  paper")
    for name in list_suites():
        spec = get_suite(name)
        print(f"{name:<24}{len(build_suite(name)):>7,}  {PAPERS[spec.paper].short}: {spec.summary}")
    return 0


def probes_build(args: argparse.Namespace) -> int:
    return probe_builder.run(args)


def scores(args: argparse.Namespace) -> int:
    if getattr(args, "markdown", False):
        print(score_table())
    else:
        print_score_metadata(SCORE_METADATA)
    return 0


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_paper_checks(checks) -> str:
    """Every check, one row each."""
    rows = [("paper", "where printed", "quantity", "printed", "recomputed", "ok")]
    for c in checks:
        rows.append((PAPERS[c.paper].short, c.source, c.quantity, f"{c.printed:g}", f"{c.recomputed:.4g}",
                     "yes" if c.passed else "NO"))
    return _table(rows)


def format_paper_checks_summary(checks) -> str:
    """One row per printed table (count, passed, largest difference), then the headline numbers."""
    groups: dict[tuple[str, str], list] = {}
    for c in checks:
        groups.setdefault((c.paper, c.source.split(",")[0]), []).append(c)
    rows = [("paper", "table", "numbers", "within precision", "largest |difference|")]
    for (paper, table), cs in groups.items():
        worst = max(abs(c.recomputed - c.printed) for c in cs)
        rows.append((PAPERS[paper].short, table, str(len(cs)), str(sum(c.passed for c in cs)), f"{worst:.4g}"))
    key = [c for c in checks if is_headline(c)]
    key_rows = [("paper", "where printed", "quantity", "printed", "recomputed", "ok")]
    for c in key:
        key_rows.append((PAPERS[c.paper].short, c.source, c.quantity, f"{c.printed:g}", f"{c.recomputed:.4g}",
                         "yes" if c.passed else "NO"))
    return _table(rows) + "\n\nHeadline numbers:\n\n" + _table(key_rows)


def reproduce(args: argparse.Namespace) -> int:
    known = checked_families()
    families = tuple(args.papers) if args.papers else known
    unknown = set(families) - set(known)
    if unknown:
        raise ValueError(f"unknown paper family {sorted(unknown)[0]!r}; choose from {', '.join(known)}")
    checks = all_checks(families)
    print(format_paper_checks(checks) if args.all else format_paper_checks_summary(checks))
    failed = [c for c in checks if not c.passed]
    for c in failed:
        print(f"MISMATCH {c.source} {c.quantity}: printed {c.printed:g}, recomputed {c.recomputed:.6g}")
    print(f"\n{len(checks) - len(failed)} of {len(checks)} printed numbers recomputed within their printed precision"
          + ("" if args.all else " (t2ibench reproduce --all lists each one)"))
    return 1 if failed else 0
