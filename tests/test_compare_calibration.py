"""Calibration of ``t2ibench compare`` by simulation with the truth known (benchmark.calibration,
the module bench/compare_calibration.py and docs/compare.md's table share), seeded and small.

Two audits of one model are drawn from an outside-style model of their labels (prompts that
differ, a seed effect both share) over the real probe tables of the CI recipe's suites (every
third prompt of DALL-Eval and PST here, to stay fast), cut by the real ``--limit`` rule, and
compared as ``t2ibench compare`` compares them (the first test checks the fast path gives
``compare_loaded``'s rows exactly). Checked:

* no change: at 1, 2 and 3 images per prompt and at the full suites, no score (skin-tone MAD
  included) is called significantly different more often than the binomial band around 5%
  allows, nor any score of a family (Holm). Before the randomization test two images per prompt
  gave 37% for gender MAD and 46% family-wise (issue 46);
* a change of the printed MDD (simulated from the comparison's own labels) is found, for GEP's
  three scores on its whole suite, at least as often as the binomial band around 80% allows and
  not always (30 comparisons each, pooled): a guard, not a measure of calibration
  (bench/compare_calibration.py measures every score at the recipe's size and at full,
  docs/compare.md);
* the MDD ``--pilot`` plans from a pilot of two images per prompt is near the true MDD of the
  full design (the interval scaling it replaced promised 0.2-0.6 of it: issue 46);
* a model whose average gender sits at its ideal has the true MDD (and the pilot's plan) of one
  away from it, made from the spread of B - A (|B| - |A|'s collapses at the ideal);
* Holm's correction as statsmodels computes it.
"""

from __future__ import annotations

import io
import json
import types

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from tqdm import tqdm

from benchmark.compare import compare_loaded
from benchmark.calibration import (
    Size, Tally, _run, clopper_pearson, compare_many, detect_runs, draw_pairs, null_runs, pilot_runs, power_runs,
    probes_at, true_mdd,
)
from benchmark.compare.comparison import finish_rows
from benchmark.compare.paired import holm, holm_level, mdd_factor, paired_test, randomization_p, rejection_threshold
from benchmark.present.calibration_tables import pooled_power, power_models_table
from benchmark.runner import planning
from benchmark.runner.planning import (MDD_GRID, MDD_PAIRS, SWAP_GRID, _change_found, _growth, _reads_categories,
                                       margin_parts, simulated_pairs)
from benchmark.runner.shared_seeds import SharedSeeds
from benchmark.runner.simulate import Fit, Truth, layout, score_copies
from benchmark.scores.bootstrap import bootstrap_ci, resample_plan
from benchmark.scores.metadata import get_metadata
from benchmark.scores.randomization import JointPlan, tag
from benchmark.tasks.context import entry_key

SUITES = ["gep_neutral", "dalleval_bias", "pst_single"]  # the CI recipe's (tests/test_compare_gates.py reads it)
EVERY = 3  # every third prompt: the same design, a third of the images
REPS = 25
POWER_REPS = 30



def upper(n: int, rate: float = 0.05, level: float = 0.99) -> int:
    """The top of the two-sided binomial band of events out of ``n`` at ``rate``."""
    return int(stats.binom.isf((1 - level) / 2, n, rate))


def _key(r):
    return (r["name"], r["suite"], r["subset"], r["estimator"], r["annotator"])


def test_the_fast_path_gives_the_rows_of_compare_loaded():
    lay = layout(probes_at(SUITES, Size(per_prompt=2), EVERY))
    pairs = draw_pairs(lay, Truth(), 1, 5)
    (many,) = compare_many(lay, pairs, n_resamples=40, random_state=7)  # as many swaps as resamples, as compare
    loaded = compare_loaded([_run("a", lay, pairs[0][0]), _run("b", lay, pairs[0][1])], n_resamples=40,
                            random_state=7).rows
    loaded = [r for r in loaded if r["status"] != "descriptive"]
    assert {_key(r) for r in many if r["status"] != "descriptive"} == {_key(r) for r in loaded}
    by = {_key(r): r for r in many}
    for r in loaded:
        m = by[_key(r)]
        assert (m["status"], m.get("p"), m.get("mdd"), m.get("ci_check")) == \
            (r["status"], r.get("p"), r.get("mdd"), r.get("ci_check")), (m, r)


@pytest.mark.parametrize("size", [Size(per_prompt=1), Size(per_prompt=2), Size(per_prompt=3), Size()],
                         ids=["1-per-prompt", "2-per-prompt", "3-per-prompt", "full"])
def test_no_change_is_called_significant_at_most_at_the_level(size):
    bar = tqdm(total=0, file=io.StringIO())  # the bench's progress: one step per pair compared
    rows = null_runs(SUITES, size, REPS, n_resamples=20, n_permutations=60, seed=1,
                     lay=layout(probes_at(SUITES, size, EVERY)), bar=bar)
    assert bar.n == bar.total == REPS
    family = rows[-1]
    scores = {(r["score"], r["estimator"]): r for r in rows[:-1]}
    print("\n".join(f"{size.label}: {r['score']} {r['estimator']} {r['rate']:.3f}" for r in rows))
    assert family["n"] == REPS and family["rate"] * REPS <= upper(REPS), family
    for r in scores.values():  # each score's own test at 0.05, and after Holm
        assert round(r["raw"]["rate"] * r["n"]) <= upper(r["n"]) and r["rate"] * r["n"] <= upper(r["n"]), r
    names = {name for name, _ in scores}
    # a MAD over one image per prompt cannot change (gender: 0.5, skin tone: 0.18): not tested there;
    # from two images per prompt both are tested, skin-tone MAD over ten tones included
    several = size.per_prompt != 1
    assert ("mad_skin_tone" in names) == several and ("mad_gender" in names) == several, sorted(names)
    assert {"gep_score_neutral", "sts_occupation_single"} <= names


def test_a_change_of_the_printed_mdd_is_found_four_times_in_five():
    """GEP's three scores on its whole suite (as the CI recipe audits it): a change of the MDD a
    comparison prints (simulated from its own labels, Holm's first step over the family compared;
    the median of five comparisons), planted as the change of the score's expected badness, is
    found significantly worse at least as often as the binomial band around 80% allows (30
    comparisons each, pooled over the three: 62 of 90), and in fewer than 97% (an MDD far too large
    finds every change). Here 80 of 90, and 73 of 90 with the comparisons moved onto the MDD itself
    (their plants, from 12 simulated audits, landed over it; the verdicts are reproduced by
    each one's own threshold in 90 of 90); so the test guards the MDD's promise and against a
    gross error, not its calibration. The design here before, a third of the prompts at two images
    each, passed the two-sided band on the median of three comparisons by chance: from seven, its
    three scores were found in 97.5%, 100% and 97.5% of 40. bench/compare_calibration.py measures
    every score."""
    lay = layout(probes_at(["gep_neutral"], Size()))
    bar = tqdm(total=0, file=io.StringIO())
    rows = power_runs(["gep_neutral"], Size(), POWER_REPS, scores=["gep_score_neutral"], n_resamples=20,
                      n_permutations=100, seed=2, draws=12, lay=lay, pilots=5, mdd_pairs=MDD_PAIRS, bar=bar)
    # the bench's progress: the null comparisons, then each score's changed ones, the step named
    assert bar.n == bar.total == 5 + 3 * POWER_REPS and "comparisons with the change" in bar.postfix
    print("\n".join(f"{r['score']} {r['estimator']}: MDD {r['mdd']} change {r['change']} found {r['rate']} at the MDD "
                    f"{r['at_mdd']}" for r in rows))
    assert len(rows) == 3 and all(r["mdd"] is not None for r in rows), rows
    found, n = sum(round(r["rate"] * r["n"]) for r in rows), sum(r["n"] for r in rows)
    assert stats.binom.ppf(0.005, n, 0.8) <= found < 0.97 * n, (found, n, rows)
    # the power at the MDD itself: each comparison's own threshold gives its verdict, and moving the
    # comparisons onto the MDD keeps the promise too
    assert all(r["at_mdd"]["threshold_agrees"] >= 0.9 for r in rows), [r["at_mdd"] for r in rows]
    at = sum(round(r["at_mdd"]["rate"] * r["n"]) for r in rows)
    assert stats.binom.ppf(0.005, n, 0.8) <= at < 0.97 * n, (at, n, [r["at_mdd"] for r in rows])
    # each row keeps what power at another MDD is recounted from (bench/power_lean.py): the null
    # comparisons' MDDs, whose median it planted, and each changed comparison's tested quantity and
    # thresholds, which give the first step's count again
    for r in rows:
        assert len(r["null_comparisons"]) == 5 and r["mdd"] == np.median([x["mdd"] for x in r["null_comparisons"]])
        tested, first = (np.asarray(r["comparisons"][k]) for k in ("tested", "threshold_first"))
        assert len(tested) == len(first) == POWER_REPS
        assert np.mean(tested - tested.mean() + r["mdd"] > first) == r["at_mdd"]["first_step"]


class _Stopped(Exception):
    pass


class _JsonStore(dict):
    """A power run's store as bench/compare_calibration.py keeps it (every step through JSON), which
    stops the run (raises) when asked to keep more than ``room`` steps."""

    def __init__(self, room: int | None = None):
        super().__init__()
        self.room = room

    def __setitem__(self, key, value):
        if self.room is not None and len(self) >= self.room:
            raise _Stopped(key)
        super().__setitem__(key, json.loads(json.dumps(value)))


def test_a_power_run_stopped_part_way_goes_on_from_its_store():
    """``power_runs``' store: a run stopped before it could keep its third row (GEP's three scores,
    a few of its prompts) and begun again with the same arguments and store compares only the
    third score's changed comparisons (the null ones and two rows are taken back) and gives the
    rows an unbroken run gives, to the last digit (each step draws from its own seeds). The bench
    keeps the store in its --out folder so that hours of a power run survive a crash."""
    lay = layout(probes_at(["gep_neutral"], Size(limit=60)))
    options = dict(scores=["gep_score_neutral"], n_resamples=10, n_permutations=40, seed=3, draws=4, lay=lay,
                   pilots=2, mdd_pairs=8)
    unbroken = power_runs(["gep_neutral"], Size(limit=60), 3, store=_JsonStore(), **options)
    assert len(unbroken) == 3 and all(r["mdd"] is not None for r in unbroken), unbroken
    store = _JsonStore(room=3)
    with pytest.raises(_Stopped, match="CLS"):
        power_runs(["gep_neutral"], Size(limit=60), 3, store=store, **options)
    assert list(store)[0] == "null" and [k.split(" / ")[3] for k in list(store)[1:]] == ["C", "CC"], list(store)
    store.room, bar = None, tqdm(total=0, file=io.StringIO())
    resumed = power_runs(["gep_neutral"], Size(limit=60), 3, store=store, bar=bar, **options)
    assert bar.n == bar.total == 3 and "CLS" in bar.postfix
    assert json.dumps(resumed) == json.dumps(json.loads(json.dumps(unbroken)))


def test_the_pilot_plans_the_true_mdd_of_the_planned_design():
    """A pilot of two images per prompt plans the full design: its MDD within 0.8-1.25 of the
    true one (2.80 x the spread of the difference over pairs of audits drawn from the truth),
    gender and skin-tone MAD included."""
    bar = tqdm(total=0, file=io.StringIO())
    rows = pilot_runs(SUITES, Size(per_prompt=2), Size(), 2, pairs=50, seed=3, plan_pairs=30, every=EVERY, bar=bar)
    assert bar.n == bar.total == 2
    by = {(r["score"], r["estimator"]): r for r in rows}
    print("\n".join(f"{r['score']} {r['estimator']}: {r['median']:.2f} [{r['low']:.2f}, {r['high']:.2f}]"
                    for r in rows))
    assert {name for name, _ in by} >= {"mad_gender", "mad_skin_tone", "gep_score_neutral", "sts_occupation_single"}
    # two pilots of a third of the design, 30 planned pairs each: the band 0.8-1.25 of the issue, widened by
    # this small a simulation's own noise (about 15%); bench/compare_calibration.py measures 10 pilots
    for r in rows:
        assert 0.7 <= r["median"] <= 1.4, r
    assert 0.85 <= float(np.median([r["median"] for r in rows])) <= 1.15, rows


def test_a_model_at_parity_plans_average_genders_mdd_on_the_scale_of_b_minus_a():
    """A model whose average gender sits at its ideal (``Truth(parity=True)``: the male and female
    probabilities of enough person prompts exchanged, every cell keeping its noise) has the true
    MDD of a model away from it: both are made from the spread of B - A. From the spread of
    |B| - |A|, which hardly varies at the ideal, the true MDD came out at about two thirds of it
    (and the pilot planned as little), where a comparison at parity needs a change on the scale of
    B - A to be found (docs/compare.md, "Scores with an ideal value"). A pilot at parity plans it
    within the issue's band."""
    suites, key = ["dalleval_bias"], ("average_gender", "dalleval_bias")
    lay = layout(probes_at(suites, Size(), EVERY))
    draws = {parity: draw_pairs(lay, Truth(parity=parity), 8, 5) for parity in (False, True)}
    for parity, pairs in draws.items():
        means = [np.mean(v) for k, v in score_copies(lay, [a for a, _ in pairs]).items() if k[:2] == key]
        assert (abs(means[0]) < 0.04) if parity else (means[0] < -0.1), (parity, means)  # 8 audits: +-0.02
    true = {parity: next(v for k, v in true_mdd(lay, Truth(parity=parity), 80, seed=1).items() if k[:2] == key)
            for parity in (False, True)}
    assert 0.85 <= true[True] / true[False] <= 1.18, true
    rows = pilot_runs(suites, Size(per_prompt=2), Size(), 3, pairs=60, seed=4, truth=Truth(parity=True),
                      plan_pairs=30, every=EVERY)
    row = next(r for r in rows if r["score"] == "average_gender")
    assert 0.8 <= row["median"] <= 1.25, row


def _swaps_of(rng, var0: float, slope: float, moved: np.ndarray, pairs: int = MDD_PAIRS) -> np.ndarray:
    """Swapped pairs' tested quantity at changes moving q by ``moved``: the noise of no change and
    the change's own, each pair its own draw of both (the same random half at every change)."""
    noise, spread = rng.standard_normal((2, pairs, 1))
    return np.sqrt(var0) * noise + np.sqrt(slope) * moved * spread


def test_the_critical_values_growth_is_fitted_over_every_swapped_change():
    """Swaps whose variance truly is var(0) + slope x moved^2 (the change adds three times var(0)
    at a change of 1): the fitted growth of the critical value is unbiased at every change of the
    grid, and within 10% in 80% of simulations of MDD_PAIRS pairs at a change of 0.25 (where MDDs
    land)."""
    grid = np.asarray(MDD_GRID)
    moved, var0, slope = 0.5 * grid, 1e-4, 1.2e-3
    truth = np.sqrt((var0 + slope * moved ** 2) / var0)
    swap_grid = np.asarray(SWAP_GRID)
    at = moved[np.searchsorted(grid, swap_grid)]
    rng = np.random.default_rng(0)
    ratio = np.array([_growth(grid, moved, swap_grid, _swaps_of(rng, var0, slope, at)) / truth for _ in range(1000)])
    assert np.all(np.abs(np.median(ratio, axis=0) - 1) < 0.03), np.median(ratio, axis=0)
    low, high = np.percentile(ratio[:, list(grid).index(0.25)], [10, 90])
    assert 0.9 <= low and high <= 1.1, (low, high)
    # no growth in truth: none fitted beyond the noise, and never a narrower critical value
    flat = np.array([_growth(grid, moved, swap_grid, _swaps_of(rng, var0, 0.0, at)) for _ in range(200)])
    assert flat.min() >= 1 and np.median(flat[:, -1]) < 1.1, np.median(flat, axis=0)


def test_the_critical_value_is_the_normal_one_of_the_swaps_spread_at_any_number_of_swaps():
    """Swaps with light tails (uniform here; average gender's at no change have their (1 - 0.05/9)
    quantile at 0.83x the normal one at the CI recipe's size, while a changed pair's are near normal:
    0.98x at the change found in 80%, docs/compare.md): the critical value the simulated MDD grows
    is z x the swaps' spread at 200 swaps and at 4,000 alike (the bench measures power at 200; the
    command swaps 1,000 by default), not their quantile, which would promise too small an MDD."""
    rng = np.random.default_rng(0)
    level = 0.05 / 9
    for swaps in (200, 4000):
        q = rng.uniform(-0.3, 0.3, swaps)  # |B| - |A| on each swap
        rows = [({"name": "average_gender", "status": "compared", "p": 0.5, "n_permutations": swaps,
                  "se": float(np.std(q, ddof=1)), "change": "worse"}, None)]
        rows += [({"name": "mad_gender", "status": "compared", "p": 0.5, "n_permutations": swaps, "se": 1.0,
                   "change": "worse"}, None) for _ in range(8)]  # the rest of a family of nine
        assert finish_rows(rows, 0.05, 0.8) == 9
        critical = rows[0][0]["critical"]
        assert critical == pytest.approx(mdd_factor(level, 0.5) * np.std(q, ddof=1))
    assert np.quantile(np.abs(q), 1 - level) < 0.7 * critical


def test_a_score_judged_by_its_distance_from_the_ideal_takes_its_mdd_from_b_minus_a():
    """Average gender (ideal 0) is tested as |B| - |A|. With both runs near parity, swapping their
    images barely moves that (|A' + B'| is fixed, and |B'| - |A'| is at most it), so its swaps'
    spread collapses, while a change away from parity faces the spread of B - A: the MDD (and the
    critical value the simulated MDD grows) is made from that (``se_difference``), else it promised
    a change several times too small (docs/compare.md, "Scores with an ideal value"). Away from the
    ideal no swap crosses it and the two spreads are one."""
    meta, n = get_metadata("average_gender"), 400
    rng = np.random.default_rng(1)
    for label, (up_a, up_b) in {"at parity": (202, 200), "away from it": (320, 316)}.items():
        xa, xb = (rng.permutation(np.r_[np.ones(up), -np.ones(n - up)]) for up in (up_a, up_b))  # +1 / -1 per image
        table, keys = np.concatenate([xa, xb]), tag([f"k{i}" for i in range(n)], "a") + tag(
            [f"k{i}" for i in range(n)], "b")
        with resample_plan(JointPlan(50, 400, random_state=3)):
            draws = bootstrap_ci(lambda idx: table[idx].mean(), 2 * n, keys=keys).resamples
        row = {"name": meta.name, **paired_test(meta, *draws.value, draws)}
        signed = float(np.std(draws.perm[:, 1] - draws.perm[:, 0], ddof=1))
        assert row["status"] == "compared" and row["se_difference"] == pytest.approx(signed), label
        if label == "at parity":
            assert row["se"] < 0.3 * signed, (row["se"], signed)  # the folded swaps' spread collapsed
        else:
            assert row["se"] == pytest.approx(signed, rel=1e-9)
        assert row["mdd_uncorrected"] == pytest.approx(mdd_factor() * signed)
        assert finish_rows([(row, draws)], 0.05, 0.8) == 1
        assert row["mdd_formula"] == pytest.approx(mdd_factor() * signed)
        assert row["critical"] == pytest.approx(mdd_factor(0.05, 0.5) * signed)


def _folded_simulation(centre: float, seed: int = 0, pairs: int = 48) -> tuple:
    """Simulated pairs of a score with an ideal value (0), as :func:`planning.detectable_changes`
    hands them over: each pair's B - A at no change of spread 1, its mean ``centre`` give or take
    0.35, B moved away from the ideal by 6 x the change; q = |B| - |A| over the grid, its swaps'
    |B'| - |A'| and B' - A' over the swapped changes."""
    rng = np.random.default_rng(seed)
    grid, swap_grid = np.asarray(MDD_GRID), np.asarray(SWAP_GRID)
    e, m = rng.normal(0, 1, (pairs, 1)), centre + rng.normal(0, 0.35, (pairs, 1))
    q = np.abs(m + e / 2 + 6 * grid) - np.abs(m - e / 2)
    swapped, mid = rng.normal(0, 1, (pairs, len(swap_grid))), m + 3 * swap_grid
    return q, np.abs(mid + swapped / 2) - np.abs(mid - swapped / 2), (e[:, 0], swapped)


def test_a_score_with_an_ideal_value_simulates_its_mdd_on_the_scale_of_b_minus_a():
    """Near the ideal, |B| - |A| and its swaps barely vary, so their spread says where a pair sits,
    not how noisy its labels are. The printed MDD of such a score is simulated on the comparison's
    scale of B - A (``signed``): pairs at the ideal and pairs far from it, of the same noise, get
    the same MDD within 10%. Scaled by the folded spreads instead, a comparison at parity promised
    a change several times too small (its own swaps' spread collapsed: on a simulated model at
    parity, power 58% at the median MDD printed, 0.06-0.42 over fifteen comparisons; docs/compare.md),
    and the folded growth from B - A's spread promised far too large a one (98%)."""
    z = mdd_factor(0.05 / 9, 0.5)
    found = {}
    for centre in (0.0, 5.0):
        q, swaps, signed = _folded_simulation(centre)
        found[centre] = _change_found(q, swaps, (z, 1.0), 0.8, 24, categorical=True, groups=np.arange(48) // 4,
                                      signed=signed)
    assert found[0.0]["mdd"] == pytest.approx(found[5.0]["mdd"], rel=0.1), found
    q, swaps, signed = _folded_simulation(0.0)
    collapsed = _change_found(q, swaps, (z * 0.15, 0.15), 0.8, 24, categorical=True, groups=np.arange(48) // 4)
    assert collapsed["mdd"] < 0.5 * found[0.0]["mdd"], collapsed  # what a comparison at parity printed
    unscaled = _change_found(q, swaps, (z, 1.0), 0.8, 24, categorical=True, groups=np.arange(48) // 4)
    assert unscaled.get("mdd", np.inf) > 1.5 * found[0.0]["mdd"], unscaled


def test_the_rejection_threshold_is_where_the_randomization_p_value_reaches_the_level():
    """The threshold the power bench counts power at the MDD by is the test's own: every |q| above
    it has p <= level and every |q| at or below it p > level, at the swaps a p-value that could
    decide gets (1,800 for nine tests) and at a few; none where no p-value of the swaps reaches it."""
    rng = np.random.default_rng(1)
    meta = get_metadata("mad_gender")
    for swaps, level in ((1800, 0.05 / 9), (200, 0.05 / 9), (40, 0.05)):
        perm = rng.normal(0.3, 0.02, (swaps, 2))
        q_swaps = perm[:, 1] - perm[:, 0]
        threshold = rejection_threshold(meta, types.SimpleNamespace(perm=perm), level)
        assert np.isfinite(threshold) and threshold > 0
        for q in np.abs(q_swaps):
            assert (randomization_p(q * 1.0001, q_swaps) <= level) == (q * 1.0001 > threshold)
            assert (randomization_p(q * 0.9999, q_swaps) <= level) == (q * 0.9999 > threshold)
    assert rejection_threshold(meta, types.SimpleNamespace(perm=perm[:100]), 0.05 / 9) == np.inf


def _jumps_of(rng, var_at: np.ndarray, pairs: int = MDD_PAIRS) -> np.ndarray:
    """Swapped pairs' tested quantity whose variance at each swapped change is ``var_at``."""
    return rng.standard_normal((pairs, len(var_at))) * np.sqrt(var_at)


def test_categorical_growth_follows_the_share_of_labels_flipped():
    """Labels that flip add variance about in proportion to the share flipped t (average gender
    in 128 pairs drawn from the truth: var(0) x (1 + 1.29 t - 0.60 t^2)), not to the square of the
    score's change: the categorical fit is unbiased at every change of the grid, where the square
    law is a third short of the added variance at t = 0.25 (where average gender's MDD lands); a
    MAD near its ceiling narrows its swaps (var(0) x (1 - 0.3 t)), which the categorical fit
    follows and the square law (never below no change) does not."""
    grid, swap_grid = np.asarray(MDD_GRID), np.asarray(SWAP_GRID)
    moved = 0.5 * grid
    rng = np.random.default_rng(3)
    for law in (lambda t: 1 + 1.29 * t - 0.60 * t ** 2, lambda t: 1 - 0.3 * t):
        truth = np.sqrt(law(grid))
        fits = {cat: np.array([_growth(grid, moved, swap_grid, _jumps_of(rng, law(swap_grid)), cat)
                               for _ in range(400)]) for cat in (True, False)}
        assert np.all(np.abs(np.median(fits[True], axis=0) / truth - 1) < 0.03), np.median(fits[True], axis=0)
        at = list(grid).index(0.25)
        square = np.median(fits[False][:, at]) ** 2 - 1
        assert (square < 0.67 * (law(0.25) - 1)) if law(1) > 1 else (square >= 0), (square, law(0.25))


def test_the_mdd_between_the_simulated_changes_is_read_off_a_curve_not_a_chord(monkeypatch):
    """A critical value that grows fast with the change (a swap's variance 200x var(0) larger at a
    change of 1: GEP's kind) curves the margin between the seven changes of MDD_GRID: the MDD read
    from them is within 0.5% of the one read from 101 changes (a straight line between the
    bracketing changes read it 2% high: docs/compare.md, "Reading the MDD between the simulated
    changes")."""
    grid, fine = np.asarray(MDD_GRID), np.linspace(0, 1, 101)
    rng = np.random.default_rng(2)
    for critical in (0.03, 0.05):
        noise = 0.01 * rng.standard_normal((MDD_PAIRS, 1))
        swaps = _swaps_of(rng, 1e-4, 2e-2, 0.5 * np.asarray(SWAP_GRID))
        found = {}
        for name, changes in (("seven", grid), ("fine", fine)):
            monkeypatch.setattr(planning, "MDD_GRID", tuple(changes))
            found[name] = _change_found(0.5 * changes + noise, swaps, (critical, 0.01), 0.8, 8)
        assert found["seven"]["mdd"] == pytest.approx(found["fine"]["mdd"], rel=0.005), found
        assert found["seven"]["change"] == pytest.approx(found["fine"]["change"], rel=0.005), found


def test_the_normal_reading_of_the_mdds_quantile_is_unbiased_where_harrell_davis_reads_far():
    """q normal, its 48 pairs in draws of four cells (as the MDD simulates them), put on the scale
    of its spread at no change: the normal reading's 20% point lies 0.84 of that spread below the
    mean (z_0.8, to 1%), while Harrell-Davis's reads it 3-4% farther (0.87 over 400 simulations;
    0.873 over 2,000), which made every printed MDD about 1% too large (docs/compare.md, "Where the
    lean comes from")."""
    rng = np.random.default_rng(0)
    grid, groups = np.asarray(MDD_GRID), np.arange(MDD_PAIRS) // 4
    swaps = _swaps_of(rng, 1e-4, 0.0, np.zeros(len(SWAP_GRID)))
    far = {"harrell-davis": [], "normal": []}
    for _ in range(400):
        cells = np.repeat(0.5 * rng.standard_normal(MDD_PAIRS // 4), 4)[:, None]
        q = 0.1 * grid + 0.01 * (cells + rng.standard_normal((MDD_PAIRS, 1)))
        for reading in far:
            parts = margin_parts(q, swaps, (0.03, 0.01), 0.8, 8, groups=groups, reading=reading)
            far[reading].append((parts["moved"][0] - parts["low"][0]) / 0.01)
    print({k: np.mean(v) for k, v in far.items()})
    assert np.mean(far["normal"]) == pytest.approx(stats.norm.ppf(0.8), rel=0.01), np.mean(far["normal"])
    assert 1.025 <= np.mean(far["harrell-davis"]) / stats.norm.ppf(0.8) <= 1.06, np.mean(far["harrell-davis"])


def test_a_score_reads_categories_or_continuous_values():
    lay = layout(probes_at(SUITES, Size(per_prompt=1), 8))
    assert _reads_categories(lay, "gender", "dalleval_bias") and _reads_categories(lay, "skin_tone", "dalleval_bias")
    assert not _reads_categories(lay, "attributes", "gep_neutral")  # GEP's existence scores
    assert _reads_categories(lay, "attributes", "dalleval_bias")


def test_a_score_undefined_past_a_change_fits_the_swaps_before_it():
    """A score the largest change leaves undefined (every label of a cell moved to "no face": a
    skin-tone MAD) still gets its MDD, from the swaps up to the last change it is defined at; one
    defined only up to the first swapped change past no change does not."""
    grid = np.asarray(MDD_GRID)
    rng = np.random.default_rng(1)
    q = 0.5 * grid + 0.01 * rng.standard_normal((MDD_PAIRS, len(grid)))
    swaps = _swaps_of(rng, 1e-4, 1.2e-3, 0.5 * np.asarray(SWAP_GRID))
    q[:, grid > 0.6], swaps[:, np.asarray(SWAP_GRID) > 0.6] = np.nan, np.nan
    found = _change_found(q, swaps, (0.03, 0.01), 0.8, 8)
    assert 0 < found["change"] < 0.6 and found["mdd"] > 0.03, found
    q[:, grid > 0.25] = np.nan
    assert "reason" in _change_found(q, swaps, (0.03, 0.01), 0.8, 8)


def test_holm_is_statsmodels_holm():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(0)
    for _ in range(20):  # statsmodels collects garbage on every call: a few cases
        p = rng.uniform(0, 0.2, rng.integers(1, 25)) ** rng.uniform(0.5, 2)
        reject, corrected, _, _ = multipletests(p, alpha=0.05, method="holm")
        mine, rejected = holm(p)
        assert np.allclose(mine, corrected) and rejected == list(reject)


def test_holm_level_is_the_largest_p_value_holm_rejects_beside_the_others():
    """The level the power bench moves a changed comparison's verdict by: with the family's other
    p-values fixed, Holm rejects a test exactly when its p-value is at most holm_level (families of
    one to nine, others anywhere from none significant to all)."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        m = int(rng.integers(1, 10))
        others = list(rng.uniform(0, 0.05, m - 1) ** rng.uniform(0.5, 3))
        level = holm_level(others)
        assert 0 <= level <= 0.05
        for x in rng.uniform(0, 0.06, 20):
            assert holm(others + [x])[1][-1] == (x <= level), (others, x, level)
    assert holm_level([]) == 0.05 and holm_level([0.9] * 8) == pytest.approx(0.05 / 9)
    assert holm_level([0.03]) == 0.025 and holm_level([0.01]) == 0.05  # below the other, or past it


def test_the_tally_counts_families_and_flags():
    tally = Tally()
    row = {"status": "compared", "name": "x", "suite": "s", "subset": None, "estimator": "e", "annotator": None}
    tally.add([dict(row, significant=True, p=0.001, ci_check="biased"),
               dict(row, name="y", significant=False, p=0.2, ci_check=None)])
    tally.add([dict(row, significant=False, p=0.03, ci_check=None)])
    table = {r["score"]: r for r in tally.table("t")}
    assert table["x"]["n"] == 2 and table["x"]["rate"] == 0.5 and table["x"]["flagged"] == 0.5
    assert table["x"]["raw"]["rate"] == 1.0 and table["y"]["raw"]["rate"] == 0.0
    assert table["any score (family-wise, Holm)"]["rate"] == 0.5


def test_power_of_several_models_pools_their_comparisons():
    """docs/compare.md's power table: per size and score, each model's MDD and power, and every
    model's comparisons pooled into one rate with its exact interval; a model that prints "not
    detectable" adds no comparison."""
    def row(score, mdd, rate, n):
        return {"size": "full", "score": score, "suite": "s", "subset": None, "estimator": "e", "mdd": mdd,
                "rate": rate, "n": n, "planted_mean": None if mdd is None else 1.1 * mdd}

    pooled = pooled_power([("seed 0", [row("a", 0.2, 0.75, 40), row("b", None, None, 0)]),
                           ("seed 1", [row("a", 0.3, 0.85, 60), row("b", 0.5, 0.9, 10)])])
    a, b = pooled
    assert (a["n"], a["rate"]) == (100, 0.81)
    assert (a["low"], a["high"]) == pytest.approx(clopper_pearson(81, 100))
    assert [m["mdd"] for m in a["models"]] == [0.2, 0.3] and a["planted"] == pytest.approx(1.1)
    assert (b["n"], b["rate"], [m["mdd"] for m in b["models"]]) == (10, 0.9, [None, 0.5])
    table = power_models_table(pooled)
    assert "| size | score | where | printed MDD (seed 0 / seed 1) | found worse (seed 0 / seed 1) |" in table
    assert "| full | a | s, e | 0.2 / 0.3 | 75.0% / 85.0% | 1.10 | 81.0% [" in table
    assert "| full | b | s, e | none / 0.5 | - / 90.0% |" in table
    # a model measured at one size only: its place at the other says so
    table = power_models_table(pooled_power([("seed 0", [row("a", 0.2, 0.75, 40)]), ("seed 1", [row("a", 0.3, 0.85, 60)]),
                                             ("seed 2", [dict(row("a", 0.4, 0.8, 50), size="recipe")])]))
    assert "printed MDD (seed 0 / seed 1 / seed 2)" in table
    assert "| full | a | s, e | 0.2 / 0.3 / not run | 75.0% / 85.0% / not run |" in table
    assert "| recipe | a | s, e | not run / not run / 0.4 | not run / not run / 80.0% |" in table
    assert "found at the MDD" not in table  # no model recorded it
    # the power at the MDD itself, pooled over the models that recorded it
    at = {"rate": 0.7, "low": 0.5, "high": 0.9, "n": 40, "threshold_agrees": 1.0, "first_step": 0.65}
    seed_0 = [dict(row("a", 0.2, 0.75, 40), at_mdd=at), dict(row("b", 0.1, 0.8, 40), at_mdd=None)]
    seed_1 = [dict(row("a", 0.3, 0.85, 60), at_mdd=dict(at, rate=0.9, n=60, first_step=0.85)), row("b", 0.1, 0.8, 40)]
    pooled = pooled_power([("seed 0", seed_0), ("seed 1", seed_1)])
    a, b = pooled
    assert (a["at_mdd"]["n"], a["at_mdd"]["rate"], a["at_mdd"]["models"]) == (100, 0.82, ["seed 0", "seed 1"])
    assert b["at_mdd"] is None
    assert (a["at_mdd"]["low"], a["at_mdd"]["high"]) == pytest.approx(clopper_pearson(82, 100))
    # Holm's first step alone: 26 of 40 and 51 of 60
    assert (a["at_mdd"]["first_step"]["n"], a["at_mdd"]["first_step"]["rate"]) == (100, 0.77)
    table = power_models_table(pooled)
    assert "| found worse, all models | found at the MDD | at the MDD, Holm's first step |" in table
    assert "81.0% [" in table and "| 82.0% [" in table and "] of 100 (seed 0, seed 1) | 77.0% [" in table
    assert table.splitlines()[-1].endswith("| not recorded | not recorded |")
    # a model whose runs predate the first step's count: the pooled first step is not recorded
    del seed_0[0]["at_mdd"]["first_step"]
    (a, _) = pooled_power([("seed 0", seed_0), ("seed 1", seed_1)])
    assert a["at_mdd"]["first_step"] is None and "(seed 0, seed 1) | not recorded |" in power_models_table([a])


def test_the_shared_seeds_are_estimated_from_the_compared_runs_pairs_of_images():
    """What two audits' images of one probe share, from one null pair of the truth (seed
    concentration 20, a logit shift of sd 0.3 beside noise of 0.6): pooled over a label file's
    slots of one estimator, each within a third of the truth (the MDD simulation draws its pairs
    with them); with no seed effect, nothing is shared."""
    lay = layout(probes_at(SUITES, Size(per_prompt=2), EVERY))
    truth = Truth()
    for shared_truth in (truth, Truth(seed=0.0, seed_sd=0.0)):
        a, b = draw_pairs(lay, shared_truth, 1, 11)[0]
        fit = Fit.of(lay.probes, {k: pd.concat([a[k], b[k]], ignore_index=True) for k in a})
        shared = SharedSeeds.of(fit, lay, a, b)
        continuous = np.asarray([s.continuous for s in lay.slots])
        assert np.all(shared.noise_sd[continuous] == pytest.approx(truth.noise_sd, rel=0.15)), shared.noise_sd
        if shared_truth.seed:
            assert np.all(np.abs(shared.concentration[~continuous] / truth.seed - 1) < 0.34), shared.concentration
            assert np.all(np.abs(shared.shift_sd[continuous] / truth.seed_sd - 1) < 0.34), shared.shift_sd
        else:  # independent images: a concentration of 0 or far above the truth's, no shift to speak of
            conc = shared.concentration[~continuous]
            assert np.all((conc == 0) | (conc > 60)), conc
            assert np.all(shared.shift_sd[continuous] < 0.15), shared.shift_sd
        assert np.all(shared.shift_sd[~continuous] == 0) and np.all(shared.concentration[continuous] == 0)


def test_the_mdd_takes_one_models_spread_not_the_spread_of_the_cells_posterior():
    """The expected change of a pair's q depends on the cells drawn from the fit's posterior; a
    comparison of one model has no such spread. With the pairs in groups that share a draw of the
    cells, q's spread at a change is taken within them: the MDD is that of a fixed model even where
    the expected change varies by half between draws (pooled over all pairs, it is 15% larger)."""
    grid = np.asarray(MDD_GRID)
    rng = np.random.default_rng(5)
    groups = np.arange(MDD_PAIRS) // planning.CELL_GROUP
    effect = 1 + 0.5 * rng.standard_normal(groups.max() + 1)  # the expected change per draw of the cells
    noise = 0.01 * rng.standard_normal((MDD_PAIRS, 1)) + 0.002 * rng.standard_normal((MDD_PAIRS, len(grid)))
    swaps = _swaps_of(rng, 1e-4, 1.2e-4, 0.5 * np.asarray(SWAP_GRID))
    fixed = _change_found(0.1 * grid + noise, swaps, (0.03, 0.01), 0.8, 8, groups=groups)
    varying = 0.1 * grid * effect[groups][:, None] + noise
    within = _change_found(varying, swaps, (0.03, 0.01), 0.8, 8, groups=groups)
    pooled = _change_found(varying, swaps, (0.03, 0.01), 0.8, 8)
    assert within["mdd"] == pytest.approx(fixed["mdd"], rel=0.05), (within, fixed)
    assert pooled["mdd"] > 1.15 * fixed["mdd"], (pooled, fixed)


def test_within_groups_each_row_loses_its_groups_mean_at_unbiased_scale():
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(400), 4)
    q = 10.0 * rng.standard_normal((400, 1))[groups] + rng.standard_normal((1600, 2))
    dev = planning._within(q, groups)
    assert dev.shape == q.shape and np.allclose(dev.reshape(400, 4, 2).sum(axis=1), 0)
    assert np.sqrt(np.mean(dev ** 2)) == pytest.approx(1.0, abs=0.04)
    assert len(planning._within(q[:5], np.array([0, 0, 1, 1, 2]))) == 4  # a group of one is left out


def test_detect_scales_the_printed_mdd_to_what_a_larger_design_prints():
    """``--detect``'s MDD at four images per prompt, scaled from one comparison of two (its printed
    MDD times the MDD simulated from its run A's labels at four over two), is near the median MDD
    comparisons of four per prompt print, for DALL-Eval's scores: the square-root law it replaced
    could not see a plug-in MAD's bias at two. A guard at this size (three comparisons, a third
    of the prompts); bench/compare_calibration.py --detects measures it (docs/compare.md)."""
    bar = tqdm(total=0, file=io.StringIO())
    rows = detect_runs(["dalleval_bias"], Size(per_prompt=2), 4, 3, seed=5, truths=3, every=EVERY, bar=bar)
    assert bar.n == bar.total == 3 + 2 * 3
    print("\n".join(f"{r['score']} {r['estimator']}: {r['median']:.2f} [{r['low']:.2f}, {r['high']:.2f}] of "
                    f"{r['true_mdd']:.4f}" for r in rows))
    assert {r["score"] for r in rows} >= {"mad_gender", "average_gender", "mad_attribute"}
    for r in rows:
        assert 0.6 <= r["median"] <= 1.6, r
    assert 0.75 <= float(np.median([r["median"] for r in rows])) <= 1.33, rows


def test_detect_cuts_every_design_from_one_draw_of_the_full_one(monkeypatch):
    """``--detect``'s simulation (``SimulatedMDD``) draws a suite's pairs of audits once, at its
    full design, and cuts each design from them (the ``--limit`` rule nests designs), so two
    designs' MDDs share their draws and their ratio keeps little of the simulation's noise: a
    design past the full one is the full one, to the digit (drawn apart, seed = k, their ratio
    varied by about 18%), and a smaller design reads only its own images of the same draws."""
    import benchmark.runner.scaled_mdd as scaled_mdd

    lay = layout(probes_at(["dalleval_bias"], Size(per_prompt=2), EVERY))
    (a, _), = draw_pairs(lay, Truth(), 1, 7)
    run, drawn = _run("a", lay, a), []
    monkeypatch.setattr(scaled_mdd, "DETECT_PAIRS", 8)
    monkeypatch.setattr(scaled_mdd, "simulated_pairs", lambda *args: drawn.append(args[1]) or simulated_pairs(*args))
    simulated = scaled_mdd.SimulatedMDD(run)
    simulated(("mad_gender", "dalleval_bias", None, None, None), 2)
    key = next(entry_key(r) for r in simulated.rows["dalleval_bias", 2] if r["name"] == "mad_gender")
    full = scaled_mdd.full_per_prompt(run, "dalleval_bias")
    at = {k: simulated(key, k) for k in (2, 4, full, full + 3)}
    assert len(drawn) == 1 and len(drawn[0].probes) > 2 * len(lay.probes), (full, len(drawn[0].probes))
    assert at[full] == at[full + 3] and all(at[k] for k in at), at
    assert scaled_mdd.mdd_at(lambda k: simulated(key, k), 0.1, full, full + 3) == 0.1
    assert at[2] > at[4] > at[full], at  # more images per prompt, a smaller MDD
