"""The ``t2ibench`` command line.

Every command fails with one line ``t2ibench: error: ...`` and exit status 2 on bad
input, before any heavy work.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import benchmark


def _cmd_probes_list(args: argparse.Namespace) -> int:
    from benchmark.papers import PAPERS
    from benchmark.probes import build_suite, get_suite, list_suites

    print(f"{'suite':<24}{'rows':>7}  paper")
    for name in list_suites():
        spec = get_suite(name)
        print(f"{name:<24}{len(build_suite(name)):>7,}  {PAPERS[spec.paper].short}: {spec.summary}")
    return 0


def _cmd_probes_build(args: argparse.Namespace) -> int:
    from dataset_builders import probes as probe_builder

    return probe_builder.run(args)


def _cmd_scores(args: argparse.Namespace) -> int:
    from benchmark.scores.metadata import SCORE_METADATA

    print(f"{'score':<22}{'range':<18}{'better':<12}paper")
    for m in SCORE_METADATA.values():
        better = {True: "lower", False: "higher", None: f"near {m.ideal:g}" if m.ideal is not None else "-"}[m.lower_is_better]
        rng = f"[{m.min_value:g}, {m.max_value:g}]"
        print(f"{m.name:<22}{rng:<18}{better:<12}{m.paper}")
    return 0


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_paper_checks(checks) -> str:
    """Every check, one row each."""
    from benchmark.papers import PAPERS

    rows = [("paper", "where printed", "quantity", "printed", "recomputed", "ok")]
    for c in checks:
        rows.append((PAPERS[c.paper].short, c.source, c.quantity, f"{c.printed:g}", f"{c.recomputed:.4g}",
                     "yes" if c.passed else "NO"))
    return _table(rows)


# The papers' headline numbers, shown one by one in the summary.
KEY_CHECKS = (
    ("gep", "Table 3", "GEP score from Table 1"),
    ("dalleval", "Sec. 5.3", "MAD of a"),
    ("pst", "Table 2", "STS (single) from Table 14"),
    ("pst", "Table 2", "STS (paired) from Table 14"),
    ("diffusion_bias", "Table 4", "mean alpha"),
)


def format_paper_checks_summary(checks) -> str:
    """One row per printed table (count, passed, largest difference), then the headline numbers."""
    from benchmark.papers import PAPERS

    groups: dict[tuple[str, str], list] = {}
    for c in checks:
        groups.setdefault((c.paper, c.source.split(",")[0]), []).append(c)
    rows = [("paper", "table", "numbers", "within precision", "largest |difference|")]
    for (paper, table), cs in groups.items():
        worst = max(abs(c.recomputed - c.printed) for c in cs)
        rows.append((PAPERS[paper].short, table, str(len(cs)), str(sum(c.passed for c in cs)), f"{worst:.4g}"))
    key = [c for c in checks if any(c.paper == p and c.source.startswith(t) and c.quantity.startswith(q)
                                    for p, t, q in KEY_CHECKS)]
    key_rows = [("paper", "where printed", "quantity", "printed", "recomputed", "ok")]
    for c in key:
        key_rows.append((PAPERS[c.paper].short, c.source, c.quantity, f"{c.printed:g}", f"{c.recomputed:.4g}",
                         "yes" if c.passed else "NO"))
    return _table(rows) + "\n\nHeadline numbers:\n\n" + _table(key_rows)


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from benchmark.paper_checks import FAMILIES, all_checks

    families = tuple(args.papers) if args.papers else FAMILIES
    unknown = set(families) - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown paper family {sorted(unknown)[0]!r}; choose from {', '.join(FAMILIES)}")
    checks = all_checks(families)
    print(format_paper_checks(checks) if args.all else format_paper_checks_summary(checks))
    failed = [c for c in checks if not c.passed]
    for c in failed:
        print(f"MISMATCH {c.source} {c.quantity}: printed {c.printed:g}, recomputed {c.recomputed:.6g}")
    print(f"\n{len(checks) - len(failed)} of {len(checks)} printed numbers recomputed within their printed precision"
          + ("" if args.all else " (t2ibench reproduce --all lists each one)"))
    return 1 if failed else 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from dataset_builders.probes import build_probe_dataset

    out = Path(args.out)
    probes_dir = out / "probes"
    tables = build_probe_dataset(probes_dir)
    print(f"Built {len(tables)} probe suites ({sum(len(t) for t in tables.values()):,} probes) as a Hub-layout "
          f"dataset in {probes_dir}")
    print(f"  load with: datasets.load_dataset({str(probes_dir)!r}, 'gep_neutral', split='test')\n")
    print("The papers' printed numbers, recomputed from the inputs they print:\n")
    return _cmd_reproduce(argparse.Namespace(papers=None, all=False))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="t2ibench", description="Audit text-to-image models for social bias "
                                     "and compositional skill.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {benchmark.__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    probes = sub.add_parser("probes", help="list or build the probe datasets")
    psub = probes.add_subparsers(dest="probes_command", required=True)
    psub.add_parser("list", help="the suites with their row counts").set_defaults(func=_cmd_probes_list)
    build = psub.add_parser("build", help="write the probe suites as a Hub-layout dataset folder")
    from dataset_builders.probes import add_arguments

    add_arguments(build)
    build.set_defaults(func=_cmd_probes_build)

    sub.add_parser("scores", help="every score with its range and direction").set_defaults(func=_cmd_scores)

    rep = sub.add_parser("reproduce", help="recompute the papers' printed numbers from their printed inputs")
    rep.add_argument("--papers", nargs="+", help="families to check (gep, dalleval, pst, mcas)")
    rep.add_argument("--all", action="store_true", help="list every recomputed number, not the summary")
    rep.set_defaults(func=_cmd_reproduce)

    demo = sub.add_parser("demo", help="build every probe dataset and recompute the papers' numbers (offline)")
    demo.add_argument("--out", default="out/demo", help="output folder (default: out/demo)")
    demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:
        print(f"t2ibench: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        from benchmark.hub import HubError

        if isinstance(exc, HubError):
            print(f"t2ibench: error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
