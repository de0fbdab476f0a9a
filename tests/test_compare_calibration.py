"""Calibration of ``t2ibench compare``'s paired test, by simulation through the real score
functions (DALL-Eval MAD, PST STS, PaintSkills accuracy) under one
:class:`benchmark.scores.bootstrap.ResamplePlan`, as :func:`benchmark.compare.compare_runs` does:

* no difference: over 200 simulated run pairs the false-positive rate of each score stays in the
  binomial band around 5%, and so does the Holm-corrected family-wise rate of the three;
* a difference of twice the minimum detectable difference the comparison prints is found in at
  least 80% of simulations (and one MDD in about 80%, the MDD's own definition).

Each simulated probe has its own probability (a prompt and seed that lean one way), the same in
both runs of a pair: the pairing the plan exploits. Small designs and 200 paired resamples keep
the run time to seconds.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from benchmark.compare.paired import holm, paired_difference
from benchmark.scores.bootstrap import PLANNED_RESAMPLES, ResamplePlan, resample_plan
from benchmark.tasks.dalleval.scores import mad_score
from benchmark.scores.metadata import get_metadata
from benchmark.tasks.paintskills.scores import skill_accuracy
from benchmark.tasks.pst.scores import sts

NAMES = ("mad_gender", "sts_occupation_single", "paintskills_object")
N_SIMULATIONS = 200
PLANNED = 200  # paired resamples per simulation
N_PROBES = 240
GROUPS = np.repeat([f"g{i}" for i in range(6)], N_PROBES // 6)  # professions / identities / splits
KEYS = np.array([f"probe-{i:03d}" for i in range(N_PROBES)])
STEREOTYPE = np.repeat(np.where(np.arange(6) % 2 == 0, "male", "female"), N_PROBES // 6)


def _scores(rng, p_male, p_stereo, p_correct, names):
    """The scores ``names`` of one simulated run: value and planned resamples."""
    kw = {"keys": KEYS}  # inside the plan, the score functions resample with it
    out = {}
    labels = np.where(rng.uniform(size=N_PROBES) < p_male, "male", "female")
    if "mad_gender" in names:
        m = mad_score(labels, ["male", "female"], groups=GROUPS, **kw)
        out["mad_gender"] = (m["mad"], m["mad_ci"][PLANNED_RESAMPLES])
    other = np.where(STEREOTYPE == "male", "female", "male")
    perceived = np.where(rng.uniform(size=N_PROBES) < p_stereo, STEREOTYPE, other)
    if "sts_occupation_single" in names:
        s = sts(perceived, STEREOTYPE, GROUPS, **kw)
        out["sts_occupation_single"] = (s["sts"], s["sts_ci"][PLANNED_RESAMPLES])
    a = skill_accuracy(rng.uniform(size=N_PROBES) < p_correct, **kw)  # PaintSkills object: no splits
    out["paintskills_object"] = (a["accuracy"], a["accuracy_ci"][PLANNED_RESAMPLES])
    return out


def _probe_probabilities(rng):
    # A skewed model (MAD away from its floor at 0), clearly stereotyped (STS about 45, near PST Table
    # 2's paired occupation STS, 47.38), a middling detector. Within about 3 standard errors of its
    # floor or ideal, a score whose tested quantity is an absolute value runs liberal: 7.5% false
    # positives at STS 20 +- 8 over 400 simulations (docs/compare.md, "Limits").
    return rng.uniform(0.55, 0.95, N_PROBES), rng.uniform(0.5, 0.95, N_PROBES), rng.uniform(0.3, 0.6, N_PROBES)


def _simulate_pair(seed: int, shift_correct: float = 0.0, names: tuple = NAMES) -> dict:
    """One run pair on the same probes: per score the comparison's row (``shift_correct``: the
    planted change of PaintSkills accuracy, in probability)."""
    rng = np.random.default_rng(seed)
    p_male, p_stereo, p_correct = _probe_probabilities(rng)
    with resample_plan(ResamplePlan(PLANNED, random_state=seed)):
        a = _scores(rng, p_male, p_stereo, p_correct, names)
        b = _scores(rng, p_male, p_stereo, p_correct + shift_correct, names)
    return {name: paired_difference(get_metadata(name), a[name][0], b[name][0], a[name][1], b[name][1])
            for name in names}


def _band(n: int, rate: float = 0.05, level: float = 0.99) -> tuple[int, int]:
    """Two-sided binomial band of the number of rejections out of ``n``."""
    tail = (1 - level) / 2
    return int(stats.binom.ppf(tail, n, rate)), int(stats.binom.isf(tail, n, rate))


@pytest.fixture(scope="module")
def null_rows():
    return [_simulate_pair(seed) for seed in range(N_SIMULATIONS)]


@pytest.mark.parametrize("name", NAMES)
def test_false_positive_rate_is_in_the_binomial_band(null_rows, name):
    rejections = sum(rows[name]["p"] < 0.05 for rows in null_rows)
    low, high = _band(N_SIMULATIONS)
    assert low <= rejections <= high, f"{name}: {rejections} / {N_SIMULATIONS} false positives, band [{low}, {high}]"


def test_holm_family_wise_rate_is_in_the_binomial_band(null_rows):
    # Holm rejects nothing in a family whose p-values are all >= alpha: only the others need the call
    candidates = [[r["p"] for r in rows.values()] for rows in null_rows if min(r["p"] for r in rows.values()) < 0.05]
    families = sum(any(holm(ps)[1]) for ps in candidates)
    low, high = _band(N_SIMULATIONS)
    assert low <= families <= high, f"{families} / {N_SIMULATIONS} families with a false positive, band [{low}, {high}]"


def test_twice_the_printed_mdd_is_detected_at_least_four_times_in_five():
    mdd = _simulate_pair(10_000)["paintskills_object"]["mdd"]  # the MDD the comparison prints, in points
    n = 100
    found = {}
    for times in (1, 2):
        rows = [_simulate_pair(20_000 + i, times * mdd / 100, ("paintskills_object",))["paintskills_object"]
                for i in range(n)]
        found[times] = sum(r["p"] < 0.05 and r["change"] == "better" for r in rows) / n
    assert found[2] >= 0.8, found
    assert 0.5 <= found[1] <= 0.95, found  # at one MDD, about the power it is defined with (0.8)
