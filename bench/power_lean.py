"""Benchmark: where power at the printed MDD leans from its 80%, one model at a time
(docs/compare.md, "Where the lean comes from").

The printed MDD is the change at which the simulated tested quantity's 20% quantile reaches the
critical value a pair so changed needs (:func:`benchmark.runner.planning.margin_parts`). A power
row of :func:`benchmark.calibration.power_runs` plants the median printed MDD and keeps each
changed comparison's tested quantity and Holm-first-step threshold; this script also keeps what
each null comparison's MDD was simulated from (its pairs' tested quantities and swaps), so that
both halves can be set side by side:

* found in 80%: the change the changed comparisons find in 80% at Holm's first step (their
  tested quantities moved to it, against each one's own threshold), and the printed MDD over it;
* the critical part: what the simulation says a pair at the MDD needs (median over the null
  comparisons) against the changed comparisons' mean threshold; the spread part: the printed MDD
  less that, against the change found in 80% less the mean threshold (both over that change);
* how the thresholds move with the tested quantity (correlation, sd(q - threshold) / sd(q)), what
  the simulation cannot see since its pairs share one critical value;
* the re-read: the MDD each null comparison prints when q's 20% quantile is read as
  moved - z_0.8 x its spread (``reading="normal"``) instead of Harrell-Davis's, and power at the
  median of those (the same changed comparisons, moved to it), beside the printed one's.

    python bench/power_lean.py --seed 5 --size recipe --out bench/measured/power_lean/recipe-s5   # 40 min here
    python bench/power_lean.py --reread bench/measured/power_lean/*/    # the table from saved runs (seconds)

Each ``--out`` folder holds power_lean.json (the power rows, the command, date and commit),
simulated.npz (the null comparisons' simulation inputs) and power_lean.md (the table printed).
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing
from benchmark import frozen_imports  # noqa: E402
frozen_imports.install()  # the heavy libraries load as under t2ibench (benchmark/frozen_imports.py)

import benchmark.runner.planning as planning  # noqa: E402
from benchmark.calibration import POWER_PILOTS, Size, clopper_pearson, power_runs, recipe_of  # noqa: E402
from benchmark.contract.times import utc_iso  # noqa: E402
from benchmark.present.text import markdown_table  # noqa: E402
from benchmark.scores.design import mdd_spread  # noqa: E402
from bench.provenance import checkout_commit  # noqa: E402

READINGS = ("harrell-davis", "normal")


class Recording:
    """The MDD simulations recorded so far (:func:`recorded_simulations`), readable at any time: the
    calibration bench saves them with a power run's null comparisons, before its rows are done."""

    def __init__(self):
        self.simulated: list[tuple] = []

    def arrays(self) -> dict:
        """What simulated.npz keeps of them (:func:`simulated_arrays`)."""
        return simulated_arrays(self.simulated)


@contextmanager
def recorded_simulations():
    """Within it, every MDD :func:`benchmark.runner.planning._change_found` reads is recorded (what
    it was simulated from); yields the :class:`Recording`."""
    recording = Recording()
    found = planning._change_found

    def recording_found(q, swaps, critical, power, least, categorical=False, groups=None, reading=None, signed=None):
        # B - A kept as NaN for a score not judged by its distance from an ideal
        kept = (np.full(len(q), np.nan), np.full(np.shape(swaps), np.nan)) if signed is None else signed
        recording.simulated.append((critical, categorical, np.asarray(q, float), np.asarray(swaps, float),
                                    np.full(len(q), -1) if groups is None else np.asarray(groups),
                                    np.asarray(kept[0], float), np.asarray(kept[1], float)))
        return found(q, swaps, critical, power, least, categorical=categorical, groups=groups, reading=reading,
                     signed=signed)

    planning._change_found = recording_found
    try:
        yield recording
    finally:
        planning._change_found = found


def simulated_arrays(simulated: list[tuple]) -> dict:
    """The recorded simulations as the arrays simulated.npz keeps, one row per simulation."""
    if not simulated:
        return {}
    return {"critical": np.array([s[0] for s in simulated], float).reshape(-1, 2),
            "categorical": np.array([s[1] for s in simulated], bool),
            "q": np.array([s[2] for s in simulated], np.float32),  # float32: half the file; the MDD re-read to 1e-5
            "swaps": np.array([s[3] for s in simulated], np.float32),
            "groups": np.array([s[4] for s in simulated]),
            "signed_q": np.array([s[5] for s in simulated], np.float32),  # B - A (NaN: not folded)
            "signed_swaps": np.array([s[6] for s in simulated], np.float32)}


def capture(seed: int, size: str, reps: int, pilots: int) -> tuple[list[dict], dict]:
    """One model's power rows and, per null comparison and score, what its MDD was simulated from."""
    suites, limit, _ = recipe_of((ROOT / "docs" / "compare.md").read_text(encoding="utf-8"))
    with recorded_simulations() as recording:
        rows = power_runs(suites, Size(limit=limit) if size == "recipe" else Size(), reps, seed=seed, pilots=pilots)
    return rows, recording.arrays()


def _inputs(arrays: dict, i: int) -> tuple:
    """Null comparison ``i``'s simulation inputs, as ``planning._change_found`` took them."""
    groups = arrays["groups"][i]
    signed = None  # runs before it was kept, and scores not judged by their distance from an ideal
    if "signed_q" in arrays and not np.isnan(arrays["signed_q"][i]).all():
        signed = (arrays["signed_q"][i].astype(float), arrays["signed_swaps"][i].astype(float))
    return (arrays["q"][i].astype(float), arrays["swaps"][i].astype(float), tuple(arrays["critical"][i]), 0.8,
            max(3, len(groups) // 2), bool(arrays["categorical"][i]), None if groups[0] < 0 else groups, None, signed)


def reread_mdd(arrays: dict, i: int, reading: str) -> float:
    """The MDD null comparison ``i`` of ``arrays`` prints with q's quantile read by ``reading``."""
    *inputs, _, signed = _inputs(arrays, i)
    return planning._change_found(*inputs, reading=reading, signed=signed).get("mdd", np.inf)


def needed_at(arrays: dict, i: int, mdd: float) -> float:
    """The critical value null comparison ``i``'s simulation says a pair changed by ``mdd`` needs."""
    from scipy.interpolate import PchipInterpolator

    parts = planning.margin_parts(*_inputs(arrays, i))
    moved = np.maximum.accumulate(parts["moved"])
    rising = np.r_[True, np.diff(moved) > 0]
    return float(PchipInterpolator(moved[rising], parts["needed"][rising])(mdd))


def found_at(tested: np.ndarray, thresholds: np.ndarray, mdd: float) -> float:
    """The share of the changed comparisons (moved so that their mean is ``mdd``) found."""
    return float(np.mean(tested - tested.mean() + mdd > thresholds))


def lean_of(row: dict, arrays: dict, made_with: str = "harrell-davis") -> dict | None:
    """One power row's decomposition and re-read (see the module's docstring), its MDD printed with
    q's quantile read by ``made_with``; None without one."""
    if row.get("mdd") is None or not row.get("comparisons") or not row["comparisons"]["tested"]:
        return None
    q = np.asarray(row["comparisons"]["tested"], float)
    thr = np.asarray(row["comparisons"]["threshold_first"], float)
    ok = np.isfinite(thr)
    q, thr = q[ok], thr[ok]
    index = {(round(c, 12), round(se, 12)): i for i, (c, se) in enumerate(arrays["critical"])}
    nulls = [(n, index.get((round(n["critical"], 12), round(mdd_spread(n), 12)))) for n in row["null_comparisons"]]
    printed = row["mdd"]
    m80 = float(np.quantile(thr - (q - q.mean()), 0.8))
    needed = float(np.median([needed_at(arrays, i, n["mdd"]) for n, i in nulls if i is not None and n["mdd"]]))
    reread = {r: float(np.median([reread_mdd(arrays, i, r) if i is not None else np.inf for _, i in nulls]))
              for r in READINGS}
    return {"size": row.get("size"), "score": row["score"], "estimator": row["estimator"], "mdd": printed,
            "found_80": m80, "ratio": printed / m80, "critical_part": (needed - thr.mean()) / m80,
            "spread_part": ((printed - needed) - (m80 - thr.mean())) / m80,
            "rho": float(np.corrcoef(q, thr)[0, 1]), "sd_ratio": float(np.std(q - thr) / np.std(q)),
            "first": {r: found_at(q, thr, m) for r, m in reread.items()}, "n": int(row["n"]),
            "reread_ratio": reread["normal"] / reread["harrell-davis"],
            "reproduced": abs(reread[made_with] / printed - 1) < 1e-5}


def table(runs: list[tuple[str, list[dict]]]) -> str:
    """The per-row table and, per size, the pooled first-step power of each reading (a run printed
    its MDDs with one of them: ``mdd_reading`` in its JSON, Harrell-Davis's before it was kept)."""
    rows, pooled = [], {}
    for name, leans in runs:
        for x in leans:
            rows.append([name, f"{x['score']} ({x['estimator']})", f"{x['ratio']:.3f}", f"{x['critical_part']:+.3f}",
                         f"{x['spread_part']:+.3f}", f"{x['rho']:+.2f}", f"{x['sd_ratio']:.3f}",
                         f"{x['reread_ratio']:.3f}", f"{x['first']['harrell-davis']:.0%}",
                         f"{x['first']['normal']:.0%}"])
            for r in READINGS:
                hits = round(x["first"][r] * x["n"])
                pooled.setdefault((x["size"] or name.split("-")[0], r), []).append((hits, x["n"]))
    summary = []
    for (size, r), counts in sorted(pooled.items()):
        hits, n = sum(h for h, _ in counts), sum(m for _, m in counts)
        low, high = clopper_pearson(hits, n)
        summary.append([size, r, f"{hits / n:.1%} [{low:.1%}, {high:.1%}]", str(n)])
    return "\n\n".join([
        markdown_table(["run", "score", "printed MDD / found in 80%", "critical part", "spread part",
                        "corr(q, threshold)", "sd(q - threshold) / sd(q)", "normal reading's MDD / Harrell-Davis's",
                        "first step, Harrell-Davis", "first step, normal reading"], rows, "llrrrrrrrr"),
        markdown_table(["size", "reading", "first step, pooled", "comparisons"], summary, "llrr")])


def reread(folders: list[Path]) -> str:
    """The table of saved runs: folders of this script (power_lean.json) or of
    bench/compare_calibration.py (compare_calibration.json), each with its simulated.npz."""
    runs = []
    for folder in folders:
        made = folder / "power_lean.json"
        doc = json.loads((made if made.exists() else folder / "compare_calibration.json").read_text(encoding="utf-8"))
        with np.load(folder / "simulated.npz") as f:
            arrays = {k: f[k] for k in f.files}
        made_with = doc.get("mdd_reading", "harrell-davis")  # runs before it was recorded: Harrell-Davis's
        leans = [x for x in (lean_of(row, arrays, made_with) for row in doc["power"]) if x is not None]
        if not all(x["reproduced"] for x in leans):
            raise ValueError(f"{folder}: the saved inputs no longer give the printed MDD (the method changed since "
                             f"the run, at {doc.get('commit')}): the decomposition would not be of what was printed")
        runs.append((folder.name, leans))
    return table(runs)


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=0, help="the model the truth draws (compare_calibration's --seed)")
    ap.add_argument("--size", choices=("recipe", "full"), default="recipe")
    ap.add_argument("--reps", type=int, default=100, help="changed comparisons per score")
    ap.add_argument("--pilots", type=int, default=POWER_PILOTS, help="null comparisons whose median MDD is planted")
    ap.add_argument("--out", type=Path, help="folder for power_lean.json, simulated.npz and power_lean.md")
    ap.add_argument("--reread", type=Path, nargs="+", metavar="FOLDER", help="print the table from saved runs")
    args = ap.parse_args(argv)
    if not args.reread and not args.out:
        ap.error("give --out (a new run) or --reread FOLDER...")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.reread:
        try:
            print(reread(args.reread))
        except (OSError, ValueError, KeyError) as exc:  # a folder that is not a run, a run of another method
            print(f"power_lean: error: {exc}", file=sys.stderr)
            return 1
        return 0
    rows, arrays = capture(args.seed, args.size, args.reps, args.pilots)
    args.out.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out / "simulated.npz", **arrays)
    doc = {"command": " ".join(["python bench/power_lean.py", *(sys.argv[1:] if argv is None else argv)]),
           "date": utc_iso(), "commit": checkout_commit(), "seed": args.seed, "size": args.size,
           "mdd_reading": planning.MDD_READING, "power": rows}
    (args.out / "power_lean.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    text = reread([args.out])
    (args.out / "power_lean.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
