"""Calibration of ``t2ibench compare`` by simulation with the truth known: the one home of the
simulations the tests (tests/test_compare_calibration.py), the bench script
(bench/compare_calibration.py) and docs/compare.md's table share.

Two audits of one model are drawn from an outside-style model of their labels
(:class:`benchmark.runner.simulate.Truth`: prompts that differ, a seed effect both audits share,
images drawn independently) over the real probe tables cut by the real ``--limit`` rule
(:func:`probes_at`), and compared as :func:`benchmark.compare.compare_loaded` compares them (each
run scored by the tasks' own code, alone and together, and the same decisions), many pairs in one
scoring pass (:func:`compare_many`; the tests check it gives ``compare_loaded``'s rows). Measured:

* **null rates** (:func:`null_runs`): how often a score is called significant (Holm) when nothing
  changed, per score and for the family (any score), and how often its interval is flagged;
* **power at the printed MDD** (:func:`power_runs`): a change of audit B as large, in the score's
  expected value, as the MDD a comparison of that size prints (a null pair's), found how often;
* **the plan's MDD** (:func:`pilot_runs`): the MDD ``--pilot`` plans from a pilot audit against
  the true MDD of the planned design (2.80 x the spread of the tested quantity over pairs of
  audits drawn from the truth);
* **the MDD ``--detect`` scales to** (:func:`detect_runs`): what it says a comparison with more
  images per prompt would print, from one comparison now, against what such comparisons print.

Rates come with Clopper-Pearson intervals (:func:`clopper_pearson`, statsmodels).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, MutableMapping, Sequence

import numpy as np
import pandas as pd

from benchmark.compare.comparison import finish_rows, images_per_prompt, pair_row
from benchmark.compare.joint import score_pairs
from benchmark.compare.paired import ALPHA, POWER, holm_level, rejection_threshold
from benchmark.compare.runs import Run
from benchmark.present.progress import grow, name_step
from benchmark.runner.planning import MDD_PAIRS, simulate_printed_mdd
from benchmark.runner.scaled_mdd import SimulatedMDD, mdd_at
from benchmark.runner.probe_choice import build_probes, limit_probes, prompt_key
from benchmark.runner.simulate import Layout, Truth, audit_config, draw_labels, image_effects, layout, score_copies
from benchmark.scores.design import mdd_factor, no_change_difference
from benchmark.scores.metadata import get_metadata
from benchmark.scores.proportion import clopper_pearson
from benchmark.scores.randomization import JointPlan, PairsPlan
from benchmark.tasks.context import ScoringOptions, entry_key
from benchmark.tasks.registry import task_options

__all__ = ["PLANT_DRAWS", "POWER_PILOTS", "Size", "clopper_pearson", "compare_many", "detect_runs", "draw_pairs",
           "null_runs", "pilot_runs", "power_runs", "probes_at", "recipe_of", "simulated_pair"]

#: pairs of audits scored together in one pass (memory: a few hundred thousand label rows)
PAIRS_PER_PASS = 20


@dataclass(frozen=True)
class Size:
    """An audit size: ``per_prompt`` images of every prompt of every suite (the limit per suite
    that keeps that many, by the ``--limit`` rule), or one ``--limit`` for all suites, or the full
    suites (neither)."""

    per_prompt: int | None = None
    limit: int | None = None

    @property
    def label(self) -> str:
        if self.per_prompt:
            return f"{self.per_prompt} per prompt"
        return f"--limit {self.limit}" if self.limit else "full"


def probes_at(suites: Sequence[str], size: Size, every: int = 1) -> pd.DataFrame:
    """The probes of ``suites`` an audit of ``size`` generates (the real ``--limit`` rule); with
    ``every`` > 1 only every so many prompts of each suite (a smaller audit of the same design,
    for fast tests)."""
    if size.per_prompt is None:
        probes = build_probes(list(suites), size.limit)
    else:
        full = build_probes(list(suites))
        frames = []
        for _, rows in full.groupby("suite", sort=False):
            prompts = rows["probe_id"].astype(str).map(prompt_key).nunique()
            frames.append(limit_probes(rows, prompts * size.per_prompt))
        probes = pd.concat(frames, ignore_index=True)
    if every > 1:
        prompt = probes["probe_id"].astype(str).map(prompt_key)
        order = prompt.groupby(probes["suite"], sort=False).transform(lambda p: pd.factorize(p)[0])
        probes = probes[order % every == 0]
    return probes.reset_index(drop=True)


def _run(label: str, lay: Layout, labels: Mapping[str, pd.DataFrame]) -> Run:
    config = audit_config(lay)
    manifest = lay.probes.assign(nsfw=False, probe_id=lay.probes["probe_id"].astype(object))
    return Run(label, label, config, manifest, None, "memory", dict(labels))


def simulated_pair(lay: Layout, truth: Truth, rng: np.random.Generator, change: float = 0.0,
                   where: set | None = None) -> tuple[Run, Run]:
    """Two audits of one model drawn from ``truth`` (B changed by ``change`` in the (label file,
    suite) pairs ``where``, see :func:`benchmark.runner.simulate.draw_labels`), as runs a
    comparison takes."""
    values = truth.cells(lay, rng)
    effects = image_effects(lay, values, rng, truth.seed, truth.seed_sd)
    return (_run("a", lay, draw_labels(lay, values, effects, rng)),
            _run("b", lay, draw_labels(lay, values, effects, rng, change, where)))


@dataclass
class Tally:
    """Per score (and the family): comparisons, significant calls, flagged intervals."""

    n: dict = field(default_factory=dict)
    hits: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict)  # p < alpha before Holm's correction
    flagged: dict = field(default_factory=dict)
    families: int = 0
    family_hits: int = 0

    def add(self, rows: Iterable[Mapping], wanted=lambda r: True) -> None:
        any_hit = False
        for r in rows:
            if r["status"] != "compared" or not wanted(r):
                continue
            k = entry_key(r)
            self.n[k] = self.n.get(k, 0) + 1
            self.hits[k] = self.hits.get(k, 0) + int(bool(r["significant"]))
            self.raw[k] = self.raw.get(k, 0) + int(r["p"] < ALPHA)
            self.flagged[k] = self.flagged.get(k, 0) + int(r.get("ci_check") is not None)
            any_hit |= bool(r["significant"])
        self.families += 1
        self.family_hits += int(any_hit)

    def table(self, size: str) -> list[dict]:
        out = []
        for k in sorted(self.n, key=str):
            low, high = clopper_pearson(self.hits[k], self.n[k])
            raw_low, raw_high = clopper_pearson(self.raw[k], self.n[k])
            out.append({"size": size, "score": k[0], "suite": k[1], "subset": k[2], "estimator": k[3] or k[4],
                        "n": self.n[k], "rate": self.hits[k] / self.n[k], "low": low, "high": high,
                        "raw": {"rate": self.raw[k] / self.n[k], "low": raw_low, "high": raw_high},
                        "flagged": self.flagged[k] / self.n[k]})
        low, high = clopper_pearson(self.family_hits, self.families)
        out.append({"size": size, "score": "any score (family-wise, Holm)", "suite": "", "subset": None,
                    "estimator": None, "n": self.families, "rate": self.family_hits / max(self.families, 1),
                    "low": low, "high": high, "raw": None, "flagged": None})
        return out


def _entries(key: tuple, value: float) -> dict:
    defined = bool(np.isfinite(value))
    return {"name": key[0], "suite": key[1], "subset": key[2], "estimator": key[3], "annotator": key[4],
            "value": float(value) if defined else None, "defined": defined, "n": None,
            "reason": None if defined else "undefined on this simulated audit"}


def compare_many(lay: Layout, pairs: Sequence[tuple[Mapping, Mapping]], *, n_resamples: int = 200,
                 n_permutations: int | None = None, random_state: int = 0, alpha: float = ALPHA,
                 mdd_pairs: int = 0, thresholds: bool = False, bar=None) -> list[list[dict]]:
    """The rows ``t2ibench compare`` gives each pair of simulated audits (label files of ``lay``),
    computed as it computes them (each run's values, both runs scored together, the same
    decisions: :func:`~benchmark.compare.comparison.pair_row`,
    :func:`~benchmark.compare.comparison.finish_rows`), with every pair in one scoring pass;
    with ``mdd_pairs``, the MDD simulated as the command simulates it
    (:func:`benchmark.runner.planning.simulate_printed_mdd`), else the normal formula's; with
    ``thresholds``, each compared row's ``threshold``: the |tested quantity| above which its own
    swaps reject it, the family's other p-values fixed (:func:`~benchmark.compare.paired.holm_level`,
    :func:`~benchmark.compare.paired.rejection_threshold`), and ``threshold_first``, at Holm's first
    step (alpha / m, what the MDD promises whatever the other tests do). ``bar``: a progress bar
    (tqdm) advanced by one per pair compared."""
    sets = [labels for pair in pairs for labels in pair]
    values = score_copies(lay, sets)
    runs = [_run(f"{i // 2}{'ab'[i % 2]}", lay, labels) for i, labels in enumerate(sets)]
    options = ScoringOptions(n_resamples, 0.95, random_state, task_options())
    out = []
    for start in range(0, len(pairs), PAIRS_PER_PASS):
        part = runs[2 * start:2 * (start + PAIRS_PER_PASS)]
        count = len(part) // 2
        plan = PairsPlan(count, JointPlan(n_resamples, n_permutations or n_resamples, random_state + start))
        drawn, read_by = score_pairs([(run, f"{i // 2}{'ab'[i % 2]}") for i, run in enumerate(part)], options, plan)
        for r in range(count):
            a, b = _run("a", lay, {}), _run("b", lay, {})
            rows = []
            for key, v in values.items():
                draws = drawn.get(key)
                if draws is None:
                    continue
                d = draws.draws[r]
                d.same_labels, d.label_files = False, read_by.get(key, ())
                i = 2 * (start + r)
                rows.append((pair_row(a, b, _entries(key, v[i]), _entries(key, v[i + 1]), d, 0.95), d))
            family = finish_rows(rows, alpha, POWER)
            tested = [(row, d) for row, d in rows if row["status"] == "compared"] if thresholds else []
            for i, (row, d) in enumerate(tested):
                meta, others = get_metadata(row["name"]), [o["p"] for j, (o, _) in enumerate(tested) if j != i]
                row["threshold"] = rejection_threshold(meta, d, holm_level(others, alpha))
                row["threshold_first"] = rejection_threshold(meta, d, alpha / family)
            plain = [row for row, _ in rows]
            if mdd_pairs:
                simulate_printed_mdd(plain, lay.probes, [pairs[start + r][0].get, pairs[start + r][1].get],
                                     pairs=mdd_pairs, seed=random_state + start + r, layout_of=lambda _: lay)
            out.append(plain)
            if bar is not None:
                bar.update(1)
    return out


def draw_pairs(lay: Layout, truth: Truth, count: int, seed: int, change: float = 0.0,
               where: set | None = None, shift: bool = False, cells=None) -> list[tuple[dict, dict]]:
    """``count`` pairs of audits of one model drawn from ``truth`` (B changed by ``change`` in
    ``where``, towards each cell's majority or, with ``shift``, the whole slot one way), as label
    files: each pair of another model (its own cells), or all of the model ``cells`` (a
    :class:`~benchmark.runner.simulate.CellValues` the truth drew)."""
    out = []
    for rep in range(count):
        rng = np.random.default_rng([seed, rep])
        values = truth.cells(lay, rng) if cells is None else cells
        effects = image_effects(lay, values, rng, truth.seed, truth.seed_sd)
        out.append((draw_labels(lay, values, effects, rng),
                    draw_labels(lay, values, effects, rng, change, where, shift)))
    return out


def null_runs(suites: Sequence[str], size: Size, reps: int, *, n_resamples: int = 50, n_permutations: int = 200,
              seed: int = 0, truth: Truth | None = None, lay: Layout | None = None, bar=None) -> list[dict]:
    """Null rates at ``size``: ``reps`` pairs of audits of one model compared; per score the share
    called significant after Holm (with its interval), and the family-wise share. ``bar``: a
    progress bar (tqdm) whose total grows by the pairs compared and that advances as they are."""
    truth = truth or Truth()
    lay = lay or layout(probes_at(suites, size))
    tally = Tally()
    grow(bar, reps)
    for rows in compare_many(lay, draw_pairs(lay, truth, reps, seed), n_resamples=n_resamples,
                             n_permutations=n_permutations, random_state=seed, bar=bar):
        tally.add(rows)
    return tally.table(size.label)


# --------------------------------------------------------------------------- power at the printed MDD


def expected_badness(lay: Layout, truth: Truth, cells, changes: Sequence[float], where: set, draws: int,
                     seed: int, shift: bool = False) -> dict[tuple, np.ndarray]:
    """Per score: its mean badness (what is tested) over ``draws`` audits of the model ``cells``
    at each of ``changes`` (in ``where``; ``shift``: see :func:`draw_pairs`), with common random
    numbers for every change."""
    label_sets = []
    for t in changes:
        for d in range(draws):
            rng = np.random.default_rng([seed, 7_000 + d])
            effects = image_effects(lay, cells, rng, truth.seed, truth.seed_sd)
            label_sets.append(draw_labels(lay, cells, effects, rng, t, where, shift))
    out = {}
    for key, v in score_copies(lay, label_sets).items():
        meta = get_metadata(key[0])
        out[key] = np.nanmean(np.asarray(meta.badness(v), dtype=float).reshape(len(changes), draws), axis=1)
    return out


GRID = np.array([0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.45, 0.6, 0.8, 1.0])


#: simulated audits that place a power row's planted change (its expected value): 24 left it 3-8%
#: off the MDD, which moved power by several points (docs/compare.md, the power table)
PLANT_DRAWS = 96
#: null comparisons whose median printed MDD a power row plants: a comparison's MDD varies from one
#: to the next with a coefficient of variation of 0.06-0.13, a median of 15 by about a third of that
#: (docs/compare.md, the power table)
POWER_PILOTS = 15
#: the share of the MDD by which a power row's mean planted change may miss it and still be moved
#: onto it (``at_mdd``): 0.8 SE, the least a comparison whose p-value could not decide lies below
#: Holm's first step, is about a fifth of an MDD of 3.6 SE (nine tests)
RECENTRED_WITHIN = 0.15


def change_for(lay: Layout, truth: Truth, cells, key: tuple, target: float, where: set, *, draws: int = PLANT_DRAWS,
               seed: int = 0) -> tuple[float, bool]:
    """The change of B's labels (in ``where``) that moves score ``key``'s expected badness, for the
    model ``cells``, by ``target``, and whether it is a shift of the whole slot: its expected
    badness on a grid of changes towards each cell's majority, interpolated; where that cannot
    reach ``target`` (a signed average whose cells cancel), a shift."""
    for shift in (False, True):
        moved = expected_badness(lay, truth, cells, GRID, where, draws, seed, shift)[key]
        moved = np.maximum.accumulate(moved - moved[0])  # monotone, from no change
        if target < moved[-1]:
            t = float(np.interp(target, moved, GRID))
            hi = int(np.searchsorted(moved, target, side="right"))
            return _refined(lambda x: _moved_at(lay, truth, cells, key, x, where, draws, seed, shift), target, t,
                            (float(GRID[hi - 1]), float(moved[hi - 1])), (float(GRID[hi]), float(moved[hi]))), shift
    return 1.0, shift


def _moved_at(lay: Layout, truth: Truth, cells, key: tuple, t: float, where: set, draws: int, seed: int,
              shift: bool) -> float:
    """The expected badness of score ``key`` at change ``t`` over that at none (the same draws)."""
    values = expected_badness(lay, truth, cells, [0.0, t], where, draws, seed, shift)[key]
    return float(values[1] - values[0])


def _refined(moved_at, target: float, t: float, low: tuple, high: tuple, steps: int = 2) -> float:
    """``t`` refined by false position between the bracketing (change, moved) points ``low`` and
    ``high``: the expected badness is not linear between grid points (GEP's grows faster than the
    change), so the interpolated change alone planted less than the target."""
    for _ in range(steps):
        m = moved_at(t)
        if abs(m - target) <= 0.02 * abs(target):
            break
        low, high = ((t, m), high) if m < target else (low, (t, m))
        if high[1] <= low[1]:
            break
        t = low[0] + (target - low[1]) * (high[0] - low[0]) / (high[1] - low[1])
    return float(t)


def power_runs(suites: Sequence[str], size: Size, reps: int, *, scores: Sequence[str] | None = None,
               n_resamples: int = 50, n_permutations: int = 200, seed: int = 0, truth: Truth | None = None,
               draws: int = PLANT_DRAWS, lay: Layout | None = None, pilots: int = POWER_PILOTS,
               mdd_pairs: int = MDD_PAIRS, bar=None, store: MutableMapping[str, Any] | None = None) -> list[dict]:
    """Power at the printed MDD, for one model the truth draws: per compared score (of ``scores``),
    the MDD comparisons of ``size`` print (the median of ``pilots`` null comparisons, their MDD
    simulated from ``mdd_pairs`` pairs as ``t2ibench compare`` does; 0: the normal formula's), the change
    of the labels it reads that moves its expected badness by that much, and the share of
    ``reps`` comparisons of the model with that change that call it significantly worse.

    The planted change lands a few percent off the MDD (``planted_mean``), which moves that share by
    several points; ``at_mdd`` is the share at the MDD itself: each changed comparison's worse-ward
    estimate moved by the MDD minus their mean, against the threshold its own swaps reject above
    with the family's other p-values as they were (:func:`compare_many`'s ``threshold``;
    ``threshold_agrees``: how often that threshold gives the comparison's own verdict;
    ``first_step``: the share at Holm's first step alone, what the MDD promises whatever the other
    tests do; a change of GEP's labels moves its three scores at once, and Holm's later steps find
    more). A comparison whose p-value could not decide kept its few swaps (a coarse threshold);
    it lay below the threshold of p = alpha, about 0.8 SE short of Holm's first step, so the count
    holds while the mean planted lies within :data:`RECENTRED_WITHIN` of the MDD (else ``at_mdd``
    is None).

    Each row also keeps ``null_comparisons`` (each null comparison's printed MDD, critical value and
    swaps' spread) and ``comparisons`` (each changed comparison's tested quantity, worse > 0, and its
    two thresholds): power at another MDD is recounted from them (bench/power_lean.py).

    ``store``: where the run keeps each step it finishes (the null comparisons, then each score's
    row, as JSON values under ``"null"`` and ``"row NAME"``) and takes back those it holds, so a run
    stopped part-way and begun again with the same arguments and store goes on from its last
    finished step and gives the same rows (every step draws from its own seeds; bench/
    compare_calibration.py keeps one in its ``--out`` folder).

    ``bar``: a progress bar (tqdm) counting the comparisons: the null ones first, then each score's
    changed ones (its total grows by them once the scores are known; the postfix names the step)."""
    store = {} if store is None else store
    truth = truth or Truth()
    lay = lay or layout(probes_at(suites, size))
    cells = truth.cells(lay, np.random.default_rng([seed, 12_345]))
    if "null" not in store:
        store["null"] = _printed_mdds(lay, truth, cells, pilots, seed, n_resamples, n_permutations, mdd_pairs,
                                      scores, bar)
    printed = {tuple(p["key"]): p["rows"] for p in store["null"]}
    # "not detectable" counts as an infinite MDD: the median is one where most comparisons print one
    medians = {key: float(np.median([np.inf if r["mdd"] is None else r["mdd"] for r in rows]))
               for key, rows in printed.items()}
    grow(bar, reps * sum(bool(np.isfinite(m)) and _row_name(key) not in store for key, m in medians.items()))
    out = []
    for key, rows in printed.items():
        if not np.isfinite(medians[key]):  # nothing to plant
            out.append({"size": size.label, "score": key[0], "suite": key[1], "subset": key[2],
                        "estimator": key[3] or key[4], "mdd": None, "change": None,
                        "how": next(r.get("mdd_reason") for r in rows if r["mdd"] is None), "n": 0, "rate": None,
                        "low": None, "high": None})
            continue
        if _row_name(key) not in store:
            store[_row_name(key)] = _power_row(lay, truth, cells, key, rows, medians[key], size, reps, draws,
                                               n_resamples, n_permutations, seed, bar)
        out.append(store[_row_name(key)])
    return out


def _row_name(key: tuple) -> str:
    """Where :func:`power_runs`' ``store`` keeps score ``key``'s finished row."""
    return "row " + " / ".join(map(str, key))


def _printed_mdds(lay: Layout, truth: Truth, cells, pilots: int, seed: int, n_resamples: int, n_permutations: int,
                  mdd_pairs: int, scores: Sequence[str] | None, bar) -> list[dict]:
    """:func:`power_runs`' null comparisons: per compared score (of ``scores``) its key and what
    each comparison printed (its MDD or why none, critical value, swaps' spread and, for a score judged
    by its distance from its ideal, their spread of B - A), as JSON values."""
    printed: dict[tuple, list] = {}
    grow(bar, pilots, "null comparisons, their MDD simulated")
    for rows in compare_many(lay, draw_pairs(lay, truth, pilots, seed + 99_999, cells=cells), n_resamples=n_resamples,
                             n_permutations=n_permutations, random_state=99_999, mdd_pairs=mdd_pairs, bar=bar):
        for r in rows:
            if r["status"] == "compared" and (not scores or r["name"] in scores):
                printed.setdefault(entry_key(r), []).append(
                    {"mdd": _number(r["mdd"]), "mdd_reason": r.get("mdd_reason"), "critical": _number(r["critical"]),
                     "se": _number(r["se"]), "label_file": r["label_file"],
                     **({"se_difference": r["se_difference"]} if "se_difference" in r else {})})
    return [{"key": list(key), "rows": rows} for key, rows in printed.items()]


def _number(value) -> float | None:
    return None if value is None else float(value)


def _power_row(lay: Layout, truth: Truth, cells, key: tuple, rows: list[dict], mdd: float, size: Size, reps: int,
               draws: int, n_resamples: int, n_permutations: int, seed: int, bar) -> dict:
    """:func:`power_runs`' row of score ``key``: its change placed at ``mdd`` (the median of the null
    comparisons' ``rows``) and ``reps`` comparisons with it."""
    where = {(rows[0]["label_file"], key[1])}
    name = f"{key[0]} ({key[3] or key[4]})"
    name_step(bar, f"{name}: placing the change")
    t, shift = change_for(lay, truth, cells, key, mdd, where, draws=draws, seed=seed)
    name_step(bar, f"{name}: comparisons with the change")
    pairs = draw_pairs(lay, truth, reps, seed + 50_000, t, where, shift, cells)
    found, planted, thresholds, firsts, decided = _changed(lay, pairs, key, n_resamples, n_permutations, seed, bar)
    low, high = clopper_pearson(found, reps)
    # the change the comparisons saw: ``draws`` audits place the change's expected value only to a
    # few percent, and power moves by several points with it
    mean = float(np.mean(planted)) if planted else None
    at_mdd = _found_at(mdd, planted, thresholds, firsts, decided, reps) \
        if planted and abs(mean - mdd) <= RECENTRED_WITHIN * mdd else None
    return {"size": size.label, "score": key[0], "suite": key[1], "subset": key[2],
            "estimator": key[3] or key[4], "mdd": mdd, "change": t,
            "how": "shift of the slot" if shift else "towards each cell's majority", "n": reps,
            "rate": found / reps, "low": low, "high": high, "planted_mean": mean,
            "planted_se": float(np.std(planted, ddof=1) / np.sqrt(len(planted))) if len(planted) > 1 else None,
            "at_mdd": at_mdd,
            # what power at another MDD is recounted from (bench/power_lean.py)
            "null_comparisons": [{k: r[k] for k in ("mdd", "critical", "se", "se_difference") if k in r} for r in rows],
            "comparisons": {"tested": planted, "threshold": thresholds, "threshold_first": firsts}}


def _changed(lay: Layout, pairs: list, key: tuple, n_resamples: int, n_permutations: int, seed: int, bar) -> tuple:
    """:func:`power_runs`' changed comparisons of score ``key``: how many found it worse, and per
    compared one its tested quantity (worse > 0), its two thresholds and whether it was found."""
    worseward = -1.0 if get_metadata(key[0]).lower_is_better is False else 1.0  # the tested B - A, worse > 0
    found, planted, thresholds, firsts, decided = 0, [], [], [], []
    for compared in compare_many(lay, pairs, n_resamples=n_resamples, n_permutations=n_permutations,
                                 random_state=seed, thresholds=True, bar=bar):
        (r,) = [r for r in compared if entry_key(r) == key]
        hit = bool(r["status"] == "compared" and r["significant"] and r["change"] == "worse")
        found += int(hit)
        if r["status"] == "compared":
            planted.append(float(worseward * r["estimate"]))
            thresholds.append(float(r["threshold"]))
            firsts.append(float(r["threshold_first"]))
            decided.append(hit)
    return found, planted, thresholds, firsts, decided


def _found_at(mdd: float, planted: Sequence[float], thresholds: Sequence[float], firsts: Sequence[float],
              decided: Sequence[bool], reps: int) -> dict:
    """Power at the MDD itself (:func:`power_runs`' ``at_mdd``): the changed comparisons' tested
    quantities (``planted``, worse > 0) moved so that their mean is ``mdd``, counted against each
    one's own threshold (and at Holm's first step, ``firsts``), with how often the thresholds give
    the comparisons' own verdicts (``decided``)."""
    seen, thresholds = np.asarray(planted, dtype=float), np.asarray(thresholds, dtype=float)
    moved = seen - seen.mean() + mdd
    hits = int(np.sum(moved > thresholds))
    low, high = clopper_pearson(hits, reps)
    return {"rate": hits / reps, "low": low, "high": high, "n": reps,
            "threshold_agrees": float(np.mean((seen > thresholds) == np.asarray(decided))),
            "first_step": float(np.sum(moved > np.asarray(firsts, dtype=float)) / reps)}


# --------------------------------------------------------------------------- the plan's MDD against the truth


def true_mdd(lay: Layout, truth: Truth, pairs: int, seed: int = 0) -> dict[tuple, float]:
    """Per score of an audit of layout ``lay``: 2.80 x the spread of its tested quantity (of B - A
    for a score with an ideal value: :func:`benchmark.scores.design.no_change_difference`) over
    ``pairs`` pairs of audits drawn from ``truth`` (the MDD of one test at alpha 0.05, power 0.8)."""
    label_sets = []
    for p in range(pairs):
        rng = np.random.default_rng([seed, 30_000 + p])
        values = truth.cells(lay, rng)
        effects = image_effects(lay, values, rng, truth.seed, truth.seed_sd)
        label_sets += [draw_labels(lay, values, effects, rng), draw_labels(lay, values, effects, rng)]
    out = {}
    for key, v in score_copies(lay, label_sets).items():
        q = np.asarray(no_change_difference(get_metadata(key[0]), v[0::2], v[1::2]), dtype=float)
        q = q[np.isfinite(q)]
        if len(q) > 2:
            out[key] = mdd_factor() * float(np.std(q, ddof=1))
    return out


def pilot_runs(suites: Sequence[str], pilot: Size, planned: Size, pilots: int, *, pairs: int = 200,
               seed: int = 0, truth: Truth | None = None, plan_pairs: int = 50, every: int = 1,
               bar=None) -> list[dict]:
    """The MDD ``--pilot`` plans for an audit of ``planned`` from ``pilots`` pilot audits of
    ``pilot`` (each drawn from ``truth``), per headline score, against the true MDD of the
    planned design: the median ratio and its range. ``bar``: a progress bar (tqdm) advanced by
    one per pilot planned."""
    from benchmark.runner.planning import planned_mdd_from_labels

    truth = truth or Truth()
    planned_lay = layout(probes_at(suites, planned, every))
    pilot_lay = layout(probes_at(suites, pilot, every))
    grow(bar, pilots, "the true MDD")
    truth_mdd = true_mdd(planned_lay, truth, pairs, seed)
    ratios: dict[tuple, list[float]] = {}
    name_step(bar, "pilots planned")
    for i in range(pilots):
        rng = np.random.default_rng([seed, 80_000 + i])
        values = truth.cells(pilot_lay, rng)
        effects = image_effects(pilot_lay, values, rng, truth.seed, truth.seed_sd)
        labels = draw_labels(pilot_lay, values, effects, rng)
        for r in planned_mdd_from_labels(pilot_lay.probes, labels, planned_lay.probes, pairs=plan_pairs,
                                         seed=seed + i, layout_of=lambda probes: planned_lay):
            k = entry_key(r)
            if "mdd" in r and k in truth_mdd and truth_mdd[k] > 0:
                ratios.setdefault(k, []).append(r["mdd"] / truth_mdd[k])
        if bar is not None:
            bar.update(1)
    out = []
    for k, v in sorted(ratios.items(), key=str):
        v = np.asarray(v)
        out.append({"pilot": pilot.label, "planned": planned.label, "score": k[0], "suite": k[1], "subset": k[2],
                    "estimator": k[3] or k[4], "true_mdd": truth_mdd[k], "n": len(v), "median": float(np.median(v)),
                    "low": float(v.min()), "high": float(v.max()),
                    "within": float(np.mean((v >= 0.8) & (v <= 1.25)))})
    return out


def detect_runs(suites: Sequence[str], now: Size, planned: int, baselines: int, *, seed: int = 0,
                truth: Truth | None = None, truths: int = 5, n_resamples: int = 50, n_permutations: int = 200,
                every: int = 1, bar=None) -> list[dict]:
    """What ``t2ibench compare --detect`` says a comparison with ``planned`` images per prompt
    would print as its MDD, from each of ``baselines`` null comparisons of size ``now`` (its
    printed MDD scaled by the MDD simulated from its run A's labels, the command's own
    :func:`benchmark.runner.scaled_mdd.mdd_at`), against the MDD comparisons of that design print
    (the median of ``truths`` null comparisons), for one model the truth draws (``seed``): per
    score the median ratio, its range and the share within 0.8-1.25 (:func:`pilot_runs`' rows).
    ``bar``: a progress bar (tqdm) advanced by one per comparison and per baseline scaled."""
    truth = truth or Truth()
    lay_now, lay_k = (layout(probes_at(suites, size, every)) for size in (now, Size(per_prompt=planned)))
    if lay_now.cells != lay_k.cells:
        raise ValueError(f"{now.label} and {planned} per prompt audit different prompts: not one model at both")
    cells = truth.cells(lay_now, np.random.default_rng([seed, 12_345]))  # the model, as power_runs draws it
    grow(bar, truths + 2 * baselines, "the MDD of the planned design")
    printed: dict[tuple, list] = {}
    for rows in compare_many(lay_k, draw_pairs(lay_k, truth, truths, seed + 99_999, cells=cells),
                             n_resamples=n_resamples, n_permutations=n_permutations, random_state=99_999,
                             mdd_pairs=MDD_PAIRS, bar=bar):
        for r in rows:
            if r["status"] == "compared":
                printed.setdefault(entry_key(r), []).append(np.inf if r["mdd"] is None else r["mdd"])
    true_mdd = {k: float(np.median(v)) for k, v in printed.items()}
    name_step(bar, "baselines scaled")
    pairs = draw_pairs(lay_now, truth, baselines, seed + 60_000, cells=cells)
    ratios: dict[tuple, list[float]] = {}
    compared = compare_many(lay_now, pairs, n_resamples=n_resamples, n_permutations=n_permutations,
                            random_state=60_000, mdd_pairs=MDD_PAIRS, bar=bar)
    for (labels, _), rows in zip(pairs, compared):
        run = _run("a", lay_now, labels)
        simulated, per_prompt = SimulatedMDD(run), images_per_prompt(run, None)
        for r in rows:
            k = entry_key(r)
            if r["status"] == "compared" and r["mdd"] and np.isfinite(true_mdd.get(k, np.inf)):
                key = (r["name"], r["suite"], r["subset"], r["estimator"], r["annotator"])
                predicted = mdd_at(lambda n, key=key: simulated(key, n), r["mdd"], per_prompt[r["suite"]], planned)
                ratios.setdefault(k, []).append(predicted / true_mdd[k])
        if bar is not None:
            bar.update(1)
    return [{"pilot": now.label, "planned": f"{planned} per prompt", "score": k[0], "suite": k[1], "subset": k[2],
             "estimator": k[3] or k[4], "true_mdd": true_mdd[k], "n": len(v), "median": float(np.median(v)),
             "low": float(np.min(v)), "high": float(np.max(v)),
             "within": float(np.mean((np.asarray(v) >= 0.8) & (np.asarray(v) <= 1.25)))}
            for k, v in sorted(ratios.items(), key=str)]


def recipe_of(text: str) -> tuple[list[str], int, list[str]]:
    """The suites, ``--limit`` and gated scores of the CI recipe in a docs page's YAML block (the
    ``t2ibench run ... --suites ... --limit N`` and ``--fail-if-worse ...`` lines)."""
    import re

    block = text[text.index("```yaml"):]
    block = " ".join(block[:block.index("```", 7)].split())
    run = re.search(r"t2ibench run .*?--suites ((?:[a-z_]+ )+)--limit (\d+)", block)
    gate = re.search(r"--fail-if-worse ((?:[a-z_]+ ?)+)", block)
    if not (run and gate):
        raise ValueError("the recipe must run t2ibench with --suites and --limit and gate with --fail-if-worse")
    return run.group(1).split(), int(run.group(2)), gate.group(1).split()
