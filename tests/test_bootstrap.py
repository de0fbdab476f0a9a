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
