"""Benchmark: the calibration of ``t2ibench compare`` by simulation with the truth known, the
table docs/compare.md quotes (benchmark.calibration, the module the tests share).

Two audits of one model are drawn from an outside-style model of their labels over the real
probe tables of the CI recipe's suites (read from docs/compare.md's recipe), cut by the real
``--limit`` rule, and compared by the command's own path. Printed, with 95% Clopper-Pearson
intervals:

* null rates: per score and family-wise (any score after Holm), at 1, 2 and 3 images per prompt,
  at the recipe's ``--limit`` and at the full suites, and how often a score's interval is
  flagged (not shown) there;
* power at the printed MDD: a change as large as the MDD a comparison of that size prints, found
  significantly worse how often, at the recipe's size and at the full size; and the share at the
  MDD itself ("found at the MDD": the changed comparisons moved by the plant's miss, against the
  threshold each one's swaps reject above);
* the plan's MDD: what ``--pilot`` plans from a pilot audit against the true MDD of the planned
  design (median ratio, range, share within 0.8-1.25);
* the MDD ``--detect`` scales to: what it says a comparison with K images per prompt would print,
  from one comparison of the recipe's size (its printed MDD scaled by the simulated MDD at K over
  the one now), against the median MDD comparisons with K per prompt print (the same columns).

    python bench/compare_calibration.py --detects 10 --out bench-results/calibration   # the full table (hours)
    python bench/compare_calibration.py --null-reps 0 --power-sizes recipe --power-reps 100 --pilots 0 \
        --seed 1 --out bench/measured/compare_calibration/power-recipe-s1   # one of the models docs/compare.md
                                   # pools (--seed 0: power-recipe; 1: -s1; then doc_tables); 50 min here
    python bench/compare_calibration.py --null-reps 0 --power-sizes full --power-reps 40 --pilots 0 \
        --seed 1 --out bench/measured/compare_calibration/power-full-s1     # its full-size rows (1.5-2.5 h here)
    python bench/compare_calibration.py --null-reps 0 --power-sizes recipe --power-reps 60 --pilots 0 \
        --suites dalleval_bias --scores average_gender --parity --seed 2 \
        --out bench/measured/compare_calibration/parity-recipe   # power where a score sits at its ideal
    python bench/compare_calibration.py --null-reps 20 --power-reps 0 --pilots 0 --sizes 1,2   # a quick look
    python bench/compare_calibration.py --null-reps 0 --power-reps 0 --pilots 0 --detects 10 --seed 0 \
        --out bench/measured/compare_calibration/detect        # --detect's MDD at 4 and 9 per prompt

With ``--out``, a power size keeps each step it finishes in the folder (progress-power-SIZE.json, and
.npz: the null comparisons, then each score's row) until the run is written: the same command begun
again after a crash or a kill goes on from its last finished step, with the same figures, and its
JSON's ``resumed`` names the steps taken back (its seconds count both processes' work). Begun again
at another commit or with other options, it refuses; remove those files to start again.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import MutableMapping
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing
from benchmark import frozen_imports  # noqa: E402
frozen_imports.install()  # the heavy libraries load as under t2ibench (benchmark/frozen_imports.py)

from benchmark.calibration import (  # noqa: E402
    PLANT_DRAWS, POWER_PILOTS, Size, detect_runs, null_runs, pilot_runs, power_runs, recipe_of,
)
from benchmark.present.calibration_tables import detect_table, null_table, pilot_table, power_table  # noqa: E402
from benchmark.contract.atomic import atomic_path  # noqa: E402
from benchmark.contract.times import utc_iso  # noqa: E402
from benchmark.present.progress import progress_bar  # noqa: E402
from benchmark.runner.simulate import Truth  # noqa: E402
from bench.provenance import checkout_commit  # noqa: E402
from bench.power_lean import Recording, recorded_simulations  # noqa: E402
import benchmark.runner.planning as planning  # noqa: E402


def _size(text: str, limit: int) -> Size:
    return Size(limit=limit) if text == "recipe" else Size() if text == "full" else Size(per_prompt=int(text))


def _limited_size(text: str, limit: int) -> Size:
    """A --pilot-sizes or --detect-sizes side: a number is a --limit there, not images per prompt."""
    return Size(limit=int(text)) if text.isdigit() else _size(text, limit)


class PowerProgress(MutableMapping):
    """One power size's finished steps (:func:`benchmark.calibration.power_runs`' ``store``), kept in
    FOLDER/progress-power-SIZE.json, rewritten whole and atomically at each step, with the seconds
    worked so far and what the run is (``run``: commit and options, which a run begun again must
    match); the MDD simulations recorded up to the null comparisons' end are saved beside it
    (.npz) with them, since a run that takes those back does not simulate them again."""

    def __init__(self, folder: Path, size: str, run: dict):
        self.path, self.run = folder / f"progress-power-{size}.json", run
        self.recording: Recording | None = None
        self.started = time.perf_counter()
        kept = json.loads(self.path.read_text()) if self.path.exists() else {"run": run, "seconds": 0.0, "steps": {}}
        if kept["run"] != run:
            differ = ", ".join(f"{k} {kept['run'].get(k)} then, {v} now" for k, v in run.items()
                               if kept["run"].get(k) != v)
            raise ValueError(f"{self.path} was begun by another run ({differ}): remove it and its .npz to start "
                             "again, or run that command at that commit")
        self.seconds_before, self.steps = kept["seconds"], kept["steps"]
        self.taken_back = list(self.steps)

    def __getitem__(self, key):
        return self.steps[key]

    def __setitem__(self, key, value):
        self.steps[key] = json.loads(json.dumps(value))  # what a run begun again reads: the same either way
        if key == "null" and self.recording is not None:
            with atomic_path(self.path.with_suffix(".npz")) as tmp, open(tmp, "wb") as fh:
                np.savez_compressed(fh, **self.recording.arrays())
        with atomic_path(self.path) as tmp:
            tmp.write_text(json.dumps({"run": self.run, "seconds": self.seconds(), "steps": self.steps}))

    def __delitem__(self, key):
        raise TypeError("a finished step stays")

    def __iter__(self):
        return iter(self.steps)

    def __len__(self):
        return len(self.steps)

    def seconds(self) -> float:
        """Worked on this power size so far, by this process and those before it."""
        return round(self.seconds_before + time.perf_counter() - self.started, 1)

    def simulated(self) -> dict:
        """The MDD simulations of its null comparisons: saved, or recorded by this process."""
        saved = self.path.with_suffix(".npz")
        if "null" in self.taken_back and saved.exists():
            with np.load(saved) as arrays:
                return dict(arrays)
        return self.recording.arrays() if self.recording is not None else {}

    def remove(self) -> None:
        self.path.with_suffix(".npz").unlink(missing_ok=True)
        self.path.unlink(missing_ok=True)


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,2,3,recipe,full", help="null-rate sizes: images per prompt, recipe, full")
    ap.add_argument("--power-sizes", default="recipe,full")
    ap.add_argument("--null-reps", type=int, default=200, help="pairs of audits per null size")
    ap.add_argument("--power-reps", type=int, default=150, help="pairs of audits per score and power size")
    ap.add_argument("--pilots", type=int, default=20, help="pilot audits per pilot size")
    ap.add_argument("--pilot-sizes", default="recipe:full,300:full", help="PILOT:PLANNED pairs (a --limit, recipe, "
                    "full)")
    ap.add_argument("--detects", type=int, default=0, help="comparisons per --detect size whose MDD --detect scales "
                    "(default none: the runs recorded before it keep their commands' meaning; 10 in docs/compare.md)")
    ap.add_argument("--detect-sizes", default="recipe:4,recipe:9", help="NOW:K pairs: comparisons of NOW (a --limit, "
                    "recipe, full) scaled to K images per prompt")
    ap.add_argument("--detect-truths", type=int, default=5, help="comparisons of each planned design whose median "
                    "printed MDD --detect's is set against")
    ap.add_argument("--n-resamples", type=int, default=50, help="paired resamples per comparison (the interval "
                    "checks)")
    ap.add_argument("--n-permutations", type=int, default=200, help="swaps per comparison (more where a p-value "
                    "could decide, as compare makes them)")
    ap.add_argument("--draws", type=int, default=PLANT_DRAWS, help="simulated audits that place each power row's "
                    "planted change (its expected value); 24 left it 3-8%% off the MDD")
    ap.add_argument("--power-pilots", type=int, default=POWER_PILOTS, help="null comparisons whose median printed MDD "
                    "each power row plants (a comparison's MDD varies from one to the next with a coefficient of "
                    "variation of 0.06-0.13, a median of 15 by about a third of that)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--suites", help="comma-separated suites to audit (default the CI recipe's), each cut by the "
                    "recipe's --limit")
    ap.add_argument("--scores", help="comma-separated scores whose power rows are run (default every compared one)")
    ap.add_argument("--parity", action="store_true", help="a model at parity (benchmark.runner.simulate.Truth("
                    "parity=True)): where a score with an ideal value is hardest to read")
    ap.add_argument("--out", help="folder for compare_calibration.json and .md")
    ap.add_argument("--quiet", action="store_true", help="no progress bars (one per phase on stderr: the comparisons "
                    "made and, for power, the score and step)")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    suites, limit, gated = recipe_of((ROOT / "docs" / "compare.md").read_text(encoding="utf-8"))
    suites = args.suites.split(",") if args.suites else suites
    truth = Truth(parity=args.parity)
    out: dict = {"command": " ".join(["python bench/compare_calibration.py", *(sys.argv[1:] if argv is None else argv)]),
                 "date": utc_iso(), "commit": checkout_commit(), "seed": args.seed, "suites": suites, "limit": limit,
                 "gated": gated, "n_resamples": args.n_resamples, "n_permutations": args.n_permutations,
                 "draws": args.draws, "power_pilots": args.power_pilots, "mdd_reading": planning.MDD_READING,
                 "parity": args.parity, "scores": args.scores.split(",") if args.scores else None,
                 "null": [], "power": [], "pilot": [], "detect": [], "seconds": {}}
    try:
        stores = _progress(args, out)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    simulated: dict = {}  # what the power rows' null comparisons simulated their MDDs from (power_lean --reread)
    parts = []
    power_options = {"draws": args.draws, "pilots": args.power_pilots, "scores": out["scores"]}
    for kind, sizes, reps, runs, extra in (("null", args.sizes, args.null_reps, null_runs, {}),
                                           ("power", args.power_sizes, args.power_reps, power_runs, power_options)):
        for text in [s for s in sizes.split(",") if s] if reps else []:
            t0, size = time.perf_counter(), _size(text, limit)
            store = stores.get(text) if kind == "power" else None
            with progress_bar(0, f"{kind} at {size.label}", enabled=not args.quiet, unit="comparison") as bar, \
                    recorded_simulations() as recording:
                if store is not None:
                    store.recording, extra = recording, {**extra, "store": store}
                out[kind] += runs(suites, size, reps, n_resamples=args.n_resamples,
                                  n_permutations=args.n_permutations, seed=args.seed, truth=truth, bar=bar,
                                  **extra)
            if kind == "power":
                arrays = store.simulated() if store is not None else recording.arrays()
                simulated = {k: np.concatenate([simulated[k], v]) if k in simulated else v for k, v in arrays.items()}
            seconds = store.seconds() if store is not None else round(time.perf_counter() - t0, 1)
            out["seconds"][f"{kind} {text}"] = seconds
            if store is not None and store.taken_back:
                out.setdefault("resumed", {})[f"{kind} {text}"] = store.taken_back
            print(f"{kind} at {text}: {out['seconds'][f'{kind} {text}']} s", file=sys.stderr)
    if out["null"]:
        parts += ["### No change: how often a score is called significant", "", null_table(out["null"]), ""]
    if out["power"]:
        parts += ["### A change of the printed MDD: how often it is found", "", power_table(out["power"]), ""]
    for pair in [p for p in args.pilot_sizes.split(",") if p] if args.pilots else []:
        pilot, planned = pair.split(":")
        t0 = time.perf_counter()
        with progress_bar(0, f"pilot {pair}", enabled=not args.quiet, unit="pilot") as bar:
            out["pilot"] += pilot_runs(suites, _limited_size(pilot, limit), _limited_size(planned, limit), args.pilots,
                                       seed=args.seed, truth=truth, bar=bar)
        out["seconds"][f"pilot {pair}"] = round(time.perf_counter() - t0, 1)
        print(f"pilot {pair}: {out['seconds'][f'pilot {pair}']} s", file=sys.stderr)
    if out["pilot"]:
        parts += ["### The plan's MDD (`--pilot`) against the true MDD of the planned design", "",
                  pilot_table(out["pilot"]), ""]
    for pair in [p for p in args.detect_sizes.split(",") if p] if args.detects else []:
        now, planned = pair.split(":")
        t0 = time.perf_counter()
        with progress_bar(0, f"detect {pair}", enabled=not args.quiet, unit="comparison") as bar:
            out["detect"] += detect_runs(suites, _limited_size(now, limit), int(planned), args.detects,
                                         seed=args.seed, truth=truth, truths=args.detect_truths,
                                         n_resamples=args.n_resamples,
                                         n_permutations=args.n_permutations, bar=bar)
        out["seconds"][f"detect {pair}"] = round(time.perf_counter() - t0, 1)
        print(f"detect {pair}: {out['seconds'][f'detect {pair}']} s", file=sys.stderr)
    if out["detect"]:
        parts += ["### The MDD `--detect` scales to against the MDD printed there", "", detect_table(out["detect"]),
                  ""]
    where = f"its --limit {limit}" if args.suites else f"the CI recipe's; its --limit {limit}"
    model = "a model at parity, " if args.parity else ""
    head = (f"Suites {', '.join(suites)} ({where}), {model}{args.n_permutations} swaps per "
            f"comparison (more where a p-value could decide) and {args.n_resamples} paired resamples, seed "
            f"{args.seed}; 95% Clopper-Pearson intervals.")
    text = "\n".join([head, ""] + parts)
    print(text)
    if args.out:
        folder = Path(args.out)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "compare_calibration.json").write_text(json.dumps(out, indent=2, default=str) + "\n")
        (folder / "compare_calibration.md").write_text(text + "\n")
        if simulated:  # the decomposition of the power rows' lean: python bench/power_lean.py --reread FOLDER
            np.savez_compressed(folder / "simulated.npz", **simulated)
    for store in stores.values():  # written: nothing left to go on from
        store.remove()
    return 0


def _progress(args: argparse.Namespace, out: dict) -> dict[str, PowerProgress]:
    """Each power size's finished steps, with ``--out`` (raises ValueError, before any work, where a
    size's were begun by another run)."""
    if not args.out or not args.power_reps:
        return {}
    run = {k: out[k] for k in ("commit", "seed", "n_resamples", "n_permutations", "draws", "power_pilots",
                               "mdd_reading", "suites", "parity", "scores")} | {"power_reps": args.power_reps}
    return {text: PowerProgress(Path(args.out), text, run) for text in args.power_sizes.split(",") if text}


if __name__ == "__main__":
    sys.exit(main())
