import numpy as np
import pytest

from benchmark.scores.bootstrap import bootstrap_ci


def test_mean_interval_matches_normal_theory():
    rng = np.random.default_rng(1)
    x = rng.normal(3.0, 2.0, size=400)
    ci = bootstrap_ci(lambda idx: x[idx].mean(), len(x), n_resamples=2000, random_state=0)
    se = x.std(ddof=1) / np.sqrt(len(x))
    assert ci.contains(x.mean())
    # percentile interval of a mean ~ mean +- 1.96 se
    assert ci.high - ci.low == pytest.approx(2 * 1.96 * se, rel=0.15)


def test_strata_keep_their_sizes():
    # Each stratum has a constant value, so a stratified resample of the mean never moves.
    strata = np.repeat(["a", "b", "c"], [10, 20, 30])
    values = np.repeat([0.0, 1.0, 5.0], [10, 20, 30])
    seen = []

    def stat(idx):
        seen.append(np.bincount(np.searchsorted(["a", "b", "c"], strata[idx]), minlength=3).tolist())
        return values[idx].mean()

    ci = bootstrap_ci(stat, len(values), strata=strata, n_resamples=50)
    assert ci.low == pytest.approx(values.mean()) and ci.high == pytest.approx(values.mean())
    assert all(s == [10, 20, 30] for s in seen)


def test_unstratified_resampling_moves():
    values = np.repeat([0.0, 1.0], 50)
    ci = bootstrap_ci(lambda idx: values[idx].mean(), len(values), n_resamples=200)
    assert ci.low < 0.5 < ci.high


def test_undefined_statistic_gives_nan_interval():
    x = np.array([0.0, 0.0, 1.0])
    ci = bootstrap_ci(lambda idx: 1.0 / x[idx].sum() if x[idx].sum() else float("nan"), 3, n_resamples=200)
    assert np.isnan(ci.low) and np.isnan(ci.high)


@pytest.mark.parametrize("kwargs,msg", [({"n": 0}, "at least one row"), ({"n": 3, "confidence_level": 1.5}, "confidence_level"),
                                        ({"n": 3, "strata": [1, 2]}, "strata")])
def test_bad_input(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        bootstrap_ci(lambda idx: 0.0, **kwargs)


def test_bca_corrects_the_upward_bias_of_an_absolute_difference():
    # |mean(a) - mean(b)| with equal true means: resamples are biased above the estimate,
    # BCa shifts the interval down relative to the percentile one.
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=60), rng.normal(size=60)
    x = np.concatenate([a, b])
    group = np.repeat([0, 1], 60)

    def stat(idx):
        return abs(x[idx][group[idx] == 0].mean() - x[idx][group[idx] == 1].mean())

    pct = bootstrap_ci(stat, 120, strata=group, n_resamples=500)
    bca = bootstrap_ci(stat, 120, strata=group, n_resamples=500, method="BCa")
    assert bca.low < pct.low and bca.method.startswith("BCa")
    with pytest.raises(ValueError, match="method must be"):
        bootstrap_ci(stat, 120, method="normal")


# --------------------------------------------------------------------------- paired resample plans

from benchmark.scores.bootstrap import PLANNED_DESIGN, PLANNED_RESAMPLES, ResamplePlan, active_plan, resample_plan  # noqa: E402
from benchmark.scores.randomization import JointPlan, tag  # noqa: E402


def test_keys_change_nothing_outside_a_plan():
    x = np.random.default_rng(2).normal(size=60)
    keys = [f"p{i}" for i in range(60)]
    plain = bootstrap_ci(lambda idx: x[idx].mean(), 60, n_resamples=100)
    keyed = bootstrap_ci(lambda idx: x[idx].mean(), 60, n_resamples=100, keys=keys)
    assert keyed == plain and keyed.resamples is None and PLANNED_RESAMPLES not in keyed.to_dict()
    assert active_plan() is None


def test_plan_resamples_a_probe_alike_whatever_the_other_rows():
    """Pairing: a probe's multiplicity depends only on (random_state, probe, resample), so two runs
    that keep different rows (a face found in one only) still resample the common probes alike."""
    plan = ResamplePlan(300, random_state=5)
    w_all = plan.row_weights([f"p{i}" for i in range(50)])
    w_some = plan.row_weights([f"p{i}" for i in range(0, 50, 2)])
    assert np.array_equal(w_all[:, ::2], w_some)
    assert w_all.mean() == pytest.approx(1.0, abs=0.05)  # Poisson(1) multiplicities
    assert not np.array_equal(ResamplePlan(300, random_state=6).row_weights(["p0", "p1"]), w_all[:, :2])


def test_plan_keeps_every_stratum_non_empty():
    plan = ResamplePlan(500, random_state=0)
    strata = np.repeat(["a", "b", "c"], [1, 2, 40])
    w = plan.row_weights([f"p{i}" for i in range(43)], strata)
    for s in "abc":
        assert (w[:, strata == s].sum(axis=1) > 0).all()


def test_planned_distribution_of_a_mean_has_the_right_spread():
    x = np.random.default_rng(1).normal(3.0, 2.0, size=400)
    with resample_plan(ResamplePlan(1000, random_state=0)) as plan:
        assert active_plan() is plan
        ci = bootstrap_ci(lambda idx: x[idx].mean(), 400, n_resamples=200, keys=[f"k{i}" for i in range(400)])
    assert active_plan() is None
    assert ci.resamples.shape == (1000,) and PLANNED_RESAMPLES in ci.to_dict()
    assert ci.resamples.std() == pytest.approx(x.std(ddof=1) / np.sqrt(400), rel=0.1)
    with pytest.raises(ValueError, match="keys has 3 entries for 400 rows"), resample_plan(plan):
        bootstrap_ci(lambda idx: 0.0, 400, keys=["a", "b", "c"])


def test_paired_resamples_cancel_what_the_runs_share():
    """Two runs on the same probes: the paired difference's spread is that of the per-probe
    differences, far below what two independent resamplings would give."""
    rng = np.random.default_rng(3)
    probe = rng.normal(0, 1, size=200)  # what each probe's prompt and seed bring, shared by both runs
    a, b = probe + rng.normal(0, 0.1, 200), probe + rng.normal(0, 0.1, 200)
    keys = [f"p{i}" for i in range(200)]
    with resample_plan(ResamplePlan(400, random_state=0)):
        ra = bootstrap_ci(lambda idx: a[idx].mean(), 200, n_resamples=10, keys=keys).resamples
        rb = bootstrap_ci(lambda idx: b[idx].mean(), 200, n_resamples=10, keys=keys).resamples
    assert np.std(rb - ra) == pytest.approx(np.std(b - a, ddof=1) / np.sqrt(200), rel=0.15)
    assert np.std(rb - ra) < 0.2 * np.hypot(np.std(ra), np.std(rb))


def test_plan_counts_strata_holding_one_probe():
    """A stratum of one probe is the same in every resample: the plan counts such strata."""
    plan = ResamplePlan(50, random_state=0)
    keys = ["p0", "p1", "p1", "p2", "p3", "p4"]  # p1 has two rows (two labels of one image)
    strata = ["a", "b", "b", "c", "c", "d"]
    assert plan.design(keys, strata) == {"strata": 4, "single": 3}
    assert plan.design(keys) == {"strata": 1, "single": 0}
    x = np.arange(6.0)
    with resample_plan(plan):
        ci = bootstrap_ci(lambda idx: x[idx].mean(), 6, strata=strata, keys=keys)
    assert ci.design == {"strata": 4, "single": 3} and ci.to_dict()[PLANNED_DESIGN] == ci.design


def test_a_stratum_of_one_probe_cannot_vary_and_others_do():
    plan = ResamplePlan(300, random_state=1)
    strata = np.repeat(["one", "many"], [1, 30])
    w = plan.row_weights([f"p{i}" for i in range(31)], strata)
    assert (w[:, 0] >= 1).all()  # always drawn: its share of its stratum is 1 in every resample
    sizes = w[:, 1:].sum(axis=1)
    assert sizes.min() > 0 and sizes.std() > 1  # a Poisson design: the stratum's size varies


def test_a_joint_plan_gives_each_run_its_own_value_and_paired_resamples():
    """Two runs in one table (probe ids tagged with their run): each run's value and resamples are
    those of the run scored alone under a ResamplePlan (so the interval of a change is the paired
    bootstrap's), and a swap exchanges a probe's rows between the runs, never across probes."""
    rng = np.random.default_rng(4)
    xa, xb = rng.normal(size=60), rng.normal(size=60)
    ids = [f"k{i}" for i in range(60)]
    strata = np.repeat(["s", "t", "u"], 20)
    table, keys = np.concatenate([xa, xb]), tag(ids, "a") + tag(ids, "b")
    with resample_plan(JointPlan(80, 50, random_state=3)):
        draws = bootstrap_ci(lambda idx: table[idx].mean(), 120, strata=np.tile(strata, 2), keys=keys).resamples
    with resample_plan(ResamplePlan(80, random_state=3)):
        alone = [bootstrap_ci(lambda idx: x[idx].mean(), 60, strata=strata, keys=ids) for x in (xa, xb)]
    assert np.allclose(draws.value, [xa.mean(), xb.mean()])
    assert np.allclose(draws.boot[:, 0], alone[0].resamples) and np.allclose(draws.boot[:, 1], alone[1].resamples)
    assert draws.design == {"a": alone[0].design, "b": alone[1].design}
    # every swap keeps each probe once on each side: the two sides' sums are those of the runs, split
    assert np.allclose(draws.perm.sum(axis=1) * 60, xa.sum() + xb.sum())
    assert draws.perm.shape == (50, 2) and draws.perm[:, 0].std() > 0
    draws.extend(90)  # more swaps: the first ones unchanged
    with resample_plan(JointPlan(80, 90, random_state=3)):
        again = bootstrap_ci(lambda idx: table[idx].mean(), 120, strata=np.tile(strata, 2), keys=keys).resamples
    assert np.array_equal(draws.perm, again.perm)


def test_unpaired_permutations_keep_each_stratum_of_each_run():
    """Runs with no probe in common: a permutation reassigns the probes of each stratum to the two
    runs, keeping how many each run has there."""
    xa, xb = np.arange(10.0), np.arange(10.0, 16.0)
    keys = tag([f"a{i}" for i in range(10)], "a") + tag([f"b{i}" for i in range(6)], "b")
    strata = np.array(["s"] * 6 + ["t"] * 4 + ["s"] * 3 + ["t"] * 3)
    table = np.concatenate([xa, xb])
    with resample_plan(JointPlan(10, 40, random_state=1, paired=False)):
        draws = bootstrap_ci(lambda idx: float(len(idx)) + 1000 * (strata[idx] == "s").sum(), 16, strata=strata,
                             keys=keys).resamples
    assert set(draws.perm[:, 0]) == {10 + 6000.0} and set(draws.perm[:, 1]) == {6 + 3000.0}


def test_weights_drawn_in_chunks_equal_weights_drawn_at_once(monkeypatch):
    from benchmark.scores import bootstrap

    x = np.random.default_rng(5).normal(size=40)
    keys, strata = [f"k{i}" for i in range(40)], np.repeat(["a", "b"], 20)
    plan = ResamplePlan(700, random_state=2)
    whole = plan.evaluate(lambda idx: x[idx].mean(), 40, strata, keys)
    monkeypatch.setattr(bootstrap, "CHUNK", 7)
    assert np.array_equal(plan.evaluate(lambda idx: x[idx].mean(), 40, strata, keys), whole)
    w = plan.row_weights(keys, strata)
    assert np.array_equal(plan.row_weights(keys, strata, np.arange(100, 200)), w[100:200])


@pytest.mark.parametrize("seed", [-5, 2**63])
def test_a_plan_refuses_a_seed_it_cannot_use(seed):
    with pytest.raises(ValueError, match="random_state must be a whole number"):
        ResamplePlan(10, random_state=seed)
