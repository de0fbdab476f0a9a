"""Scores corrected with people's labels, checked by simulation where the truth is known
(:mod:`benchmark.scores.correction_simulation`): a synthetic annotator that misreads women as men
on 25 % of dark-skinned and 5 % of light-skinned images, plus 10 % on a style it reads worse.

Seeded and fast (the Poisson bootstrap drawn as per-group sums); bench/human_correction.py prints
the full table with the runs' own resample plan (docs/human_correction.md).
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmark.scores import correction_simulation as sim
from benchmark.scores.ppi import (MIN_HUMAN_LABELS, MIN_PER_GROUP, Part, corrected_share, labels_needed,
                                  not_enough, prediction_powered, tuned_lambda)

REPS = 1000
LOW, HIGH = 0.925, 0.975  # 95 % +/- 2.5 (a 1,000-repetition coverage has a standard error of 0.7 %)


@pytest.mark.parametrize("n", sim.SIZES)
def test_the_corrected_share_covers_the_truth_where_the_annotator_alone_never_does(n):
    row = sim.simulate(sim.Scenario(), "share", "painting", n, reps=REPS, n_resamples=200, seed=11, ppi_mean=False)
    assert row["not_enough"] == 0
    assert LOW <= row["corrected_coverage"] <= HIGH, row
    assert row["automatic_coverage"] < 0.05, row  # the annotator's bias: the automatic interval misses
    assert abs(row["corrected_bias"]) < 0.01
    # people's labels alone are valid too, but wider: the annotator's labels of every image help
    assert row["corrected_width"] < 0.9 * row["people_width"]


@pytest.mark.parametrize("n", sim.SIZES)
def test_a_score_built_per_group_is_corrected_once_every_group_has_enough_labels(n):
    row = sim.simulate(sim.Scenario(), "mad", "photo", n, reps=REPS, n_resamples=200, seed=12)
    if n / sim.Scenario().groups < MIN_PER_GROUP:  # 50 labels over 8 groups: no value, the reason given
        assert row["not_enough"] == REPS and "corrected_coverage" not in row
        return
    assert row["not_enough"] == 0
    assert LOW <= row["corrected_coverage"] <= HIGH, row
    assert row["automatic_coverage"] < 0.5, row


def test_ppi_python_agrees_with_the_prediction_powered_bootstrap_on_a_share():
    rows = [sim.simulate(sim.Scenario(), "share", "photo", 200, reps=150, n_resamples=200, seed=s) for s in (1, 2)]
    for row in rows:
        assert abs(row["ppi_mean_width"] - row["corrected_width"]) < 0.1 * row["corrected_width"]
        assert abs(row["ppi_mean_bias"] - row["corrected_bias"]) < 0.01
        assert row["ppi_mean_coverage"] > 0.9


def test_the_labelling_plan_gives_the_width_it_promises():
    """A pilot of 60 labels plans the labels for a half-width of 0.035; simulating at that size
    gives that half-width on average (within 12 %)."""
    scenario, target = sim.Scenario(), 0.035
    planned = []
    for seed in range(15):
        pilot = sim.simulate_one(scenario, "share", "painting", 60, seed=seed, n_resamples=300)
        planned.append(labels_needed(pilot.se, pilot.se_census, pilot.n_human, pilot.n_population, target))
    n = int(np.median(planned))
    assert 200 < n < scenario.n_images
    row = sim.simulate(scenario, "share", "painting", n, reps=300, n_resamples=200, seed=99, ppi_mean=False)
    assert abs(row["corrected_width"] / 2 - target) < 0.12 * target, (n, row["corrected_width"] / 2)


def test_the_combination_rule():
    rng = np.random.default_rng(0)
    h = rng.normal(0.5, 0.05, 400)
    a = h * 0.8 + rng.normal(0, 0.01, 400)
    full = 0.3 * a + rng.normal(0, 0.002, 400)  # every image: the annotator's part varies less there
    lam = tuned_lambda(h, a, full)
    assert 0 < lam <= 1
    out = prediction_powered(Part(0.5, h), Part(0.4, a), Part(0.3, full), n_human=100, n_population=1000)
    assert out.value == pytest.approx(0.5 + lam * (0.3 - 0.4)) and out.low < out.value < out.high
    plain = prediction_powered(Part(0.5, h), Part(0.4, a), Part(0.3, full), n_human=100, n_population=1000, tune=False)
    assert plain.lam == 1 and plain.value == pytest.approx(0.4)
    census = prediction_powered(Part(0.5, h), Part(0.4, a), Part(0.3, full), n_human=1000, n_population=1000)
    assert census.value == 0.5 and census.lam is None and census.method.startswith("census")
    # a constant annotator: any lambda gives the same estimate
    assert tuned_lambda(h, np.full(400, 0.2), np.full(400, 0.2)) == 1.0
    bounded = prediction_powered(Part(0.01, h - 0.49), Part(0.4, a), Part(0.4, full), n_human=100, n_population=1000,
                                 bounds=(0.0, 0.5))
    assert bounded.low >= 0.0


def test_too_few_labels_give_a_reason_not_a_number():
    assert not_enough(MIN_HUMAN_LABELS - 1, 500) == (f"not enough human labels ({MIN_HUMAN_LABELS - 1} of 500): "
                                                     f"at least {MIN_HUMAN_LABELS} are needed")
    assert not_enough(200, 747, groups=83, smallest_group=2).startswith("not enough human labels (200 of 747): the "
                                                                        "score is built per group of images (83 groups)")
    assert not_enough(200, 2000, groups=8, smallest_group=25) is None
    assert not_enough(747, 747, groups=83, smallest_group=9) is None  # a census
    assert not_enough(40, 40) is None


def test_a_share_corrected_by_ppi_python():
    rng = np.random.default_rng(3)
    y = (rng.random(300) < 0.6).astype(float)
    yhat = np.where(rng.random(300) < 0.2, 0.0, y)
    rest = np.where(rng.random(2000) < 0.2, 0.0, (rng.random(2000) < 0.6).astype(float))
    out = corrected_share(y, yhat, rest)
    assert out.method.startswith("PPI++") and out.low < 0.6 < out.high and out.n_population == 2300
    constant = corrected_share(y, np.zeros(300), np.zeros(2000))  # an annotator that never says yes
    assert constant.value == pytest.approx(y.mean()) and constant.low < y.mean() < constant.high
    census = corrected_share(y, yhat, [])
    assert census.method.startswith("census") and census.value == pytest.approx(y.mean())
    with pytest.raises(ValueError, match="at least two"):
        corrected_share([1.0], [1.0], rest)
