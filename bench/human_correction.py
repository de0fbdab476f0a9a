"""Benchmark (statistics): coverage of the scores corrected with people's labels, where the truth
is known (the simulation of :mod:`benchmark.scores.correction_simulation`; the table of
docs/human_correction.md).

A synthetic audit of 2,000 images in 8 groups, a synthetic annotator that misreads women as men
on 25 % of dark-skinned and 5 % of light-skinned images (plus 10 % on every image of the
"painting" style, which it reads worse), people labelling a random sample of 50, 200 and 800
images. For each: the coverage of the corrected 95 % interval over the repetitions (should be
95 +/- 2.5), ppi-python's PPI++ mean beside it for the share, the automatic interval's coverage
(what an audit without people reports) and people's labels alone, with mean widths.

The table's resamples are the per-image Poisson(1) bootstrap drawn as per-group sums (exactly
that bootstrap, fast); a cross-check repeats two rows with the runs' own resample plan
(:class:`benchmark.scores.bootstrap.ResamplePlan`, the code ``t2ibench score`` runs, slower).
Then the rows that set the minimum per group: the score built per group with k = 4 to 12 labels in
each of the 8 groups and the minimum rule switched off (the intervals the score stage would not
give), and DALL-Eval's shape, 83 groups of 9 images (professions), at k = 3, 5, 7 per group.

    python bench/human_correction.py                       # the table, 1,000 repetitions per row
    python bench/human_correction.py --plan-reps 0         # without the cross-check
    python bench/human_correction.py --reps 100 --quick    # a smoke run (CI)
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
from benchmark import frozen_imports  # noqa: E402
frozen_imports.install()  # the heavy libraries load as under t2ibench (benchmark/frozen_imports.py)

from benchmark.contract.times import utc_now  # noqa: E402
from benchmark.present.text import markdown_table  # noqa: E402
from benchmark.scores import correction_simulation as sim  # noqa: E402
from benchmark.scores.ppi import MIN_HUMAN_LABELS, MIN_PER_GROUP  # noqa: E402

STRESS = sim.Scenario(name="83 groups of 9", groups=83, per_group=9, female_low=0.1, female_high=0.9)


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=1000, help="repetitions per row (default 1000)")
    p.add_argument("--n-resamples", type=int, default=500, help="bootstrap resamples per repetition (default 500)")
    p.add_argument("--bootstrap", choices=("plan", "counts"), default="counts",
                   help="the table's resamples: the Poisson bootstrap drawn as per-group sums (default) or the runs' "
                        "ResamplePlan")
    p.add_argument("--plan-reps", type=int, default=300,
                   help="repetitions of the cross-check rows with the runs' ResamplePlan (0: none; default 300)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="sizes 50 and 200 only, no stress rows")
    p.add_argument("--out", type=Path, default=None, help="folder for human_correction.json and .md")
    args = p.parse_args(argv)
    if args.reps < 10 or args.n_resamples < 20:
        p.error("--reps must be at least 10 and --n-resamples at least 20")
    return args


def _table(rows: list[dict]) -> str:
    head, cells = sim.table_cells(rows)
    return markdown_table(head, cells, align=sim.TABLE_ALIGN)


def _stress_rows(args: argparse.Namespace) -> list[dict]:
    """The minimum per group: k labelled images per group, no minimum applied."""
    rows = []
    cases = [(sim.Scenario(), style, k) for k in (4, 6, 8, 10, 12) for style in sim.STYLES]
    cases += [(STRESS, "photo", k) for k in (3, 5, 7)]
    for scenario, style, k in cases:
        row = sim.simulate(scenario, "mad", style, k * scenario.groups, reps=args.reps, n_resamples=args.n_resamples,
                           seed=args.seed + 2, bootstrap=args.bootstrap, enforce_minimum=False)
        rows.append(row)
        print(f"  {scenario.name} {style} k={k}: corrected {row.get('corrected_coverage', float('nan')):.3f}",
              file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    sizes = (50, 200) if args.quick else sim.SIZES
    start = time.perf_counter()
    rows = []
    for row in sim.coverage_table(sizes=sizes, reps=args.reps, n_resamples=args.n_resamples, seed=args.seed,
                                  bootstrap=args.bootstrap):
        rows.append(row)
        print(f"  {row['statistic']} {row['style']} n={row['n_human']}: corrected "
              f"{row.get('corrected_coverage', float('nan')):.3f}", file=sys.stderr, flush=True)
    stress = [] if args.quick else _stress_rows(args)
    check = []
    if args.plan_reps:
        for statistic in sim.STATISTICS:
            check.append(sim.simulate(sim.Scenario(), statistic, "painting", 200, reps=args.plan_reps,
                                      n_resamples=args.n_resamples, seed=args.seed + 1, bootstrap="plan"))
            print(f"  plan cross-check {statistic}: corrected {check[-1].get('corrected_coverage', float('nan')):.3f}",
                  file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start
    import numpy
    import scipy

    head = (f"{utc_now():%Y-%m-%d} · {platform.platform()} · Python {platform.python_version()} · numpy "
            f"{numpy.__version__} · scipy {scipy.__version__} · bootstrap {args.bootstrap}, {args.n_resamples} "
            f"resamples · {args.reps} repetitions per row · {seconds:.0f} s")
    md = "\n\n".join([
        f"Coverage of 95 % intervals, in % of {args.reps} repetitions ({sim.Scenario().name} images; minimum "
        f"{MIN_HUMAN_LABELS} labels, {MIN_PER_GROUP} per group). {head}",
        _table(rows),
        *([f"Cross-check with the runs' own resample plan (ResamplePlan, as `t2ibench score`), "
           f"{args.plan_reps} repetitions:", _table(check)] if check else []),
        *([f"The minimum per group: the score built per group with k labelled images in each group, the minimum "
           f"switched off ({args.reps} repetitions; \"runs without a value\" counts those the score stage would "
           "refuse).", _table(stress)] if stress else []),
    ])
    print(md)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "human_correction.md").write_text(md + "\n", encoding="utf-8")
        doc = {"header": head, "scenario": asdict(sim.Scenario()), "stress_scenario": asdict(STRESS),
               "rows": rows, "plan_check": check, "stress": stress}
        (args.out / "human_correction.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
