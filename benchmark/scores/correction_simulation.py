"""The simulation that checks the corrected scores where the truth is known (:mod:`benchmark.scores.ppi`):
shared by the test (tests/test_human_correction_simulation.py), the bench script
(bench/human_correction.py) and the table of docs/human_correction.md.

A synthetic audit: ``groups`` groups of ``per_group`` images (prompts), each image showing a
person whom people perceive as a woman with the group's probability (spread evenly from
``female_low`` to ``female_high``) and with dark skin with probability ``dark_share``. A
synthetic annotator misreads women as men on ``miss_dark`` of the dark-skinned images and
``miss_light`` of the light-skinned ones, plus ``style_miss`` on every image of a model whose
style it reads worse, and men as women at ``reverse`` times those rates. People label a random
sample of ``n`` images, drawn as the annotation app draws it (stratified by group, proportional
allocation: :func:`benchmark.scores.ppi.allocate`).

Two scores: ``share`` (share of images perceived as women, over all images at once) and ``mad``
(the mean over groups of ``|share - 1/2|``, a score built per group as the papers' MAD is). The
truth is the score's expectation with people's labels of every image: the share's mean, and for
``mad`` the exact mean over groups of ``E|Bin(per_group, p) / per_group - 1/2|``.

Per repetition: the automatic score with its percentile interval (what an audit without people
reports), people's labels of the sample alone (a t interval from the same resamples), the
prediction-powered estimate (:func:`benchmark.scores.ppi.prediction_powered`) from the same
resamples, and for the share ppi-python's PPI++ mean (:func:`benchmark.scores.ppi.corrected_share`).
The resamples are the runs' own (``bootstrap="plan"``: :class:`benchmark.scores.bootstrap.ResamplePlan`
weights, keyed by image) or numpy's per-image Poisson(1) bootstrap drawn as per-group sums
(``"counts"``: the same design, exactly, fast enough for a test of 1,000 repetitions per size).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterator

import numpy as np
from scipy import stats

from benchmark.scores.bootstrap import ResamplePlan
from benchmark.scores.ppi import Corrected, Part, allocate, corrected_share, not_enough, prediction_powered

__all__ = ["Scenario", "STYLES", "STATISTICS", "SIZES", "simulate", "simulate_one", "truth", "coverage_table",
           "table_cells", "TABLE_ALIGN"]

#: the model's style: how much more often the annotator misreads its images
STYLES = {"photo": 0.0, "painting": 0.10}
STATISTICS = ("share", "mad")
#: people-labelled images per repetition (the issue's sizes)
SIZES = (50, 200, 800)


@dataclass(frozen=True)
class Scenario:
    """A synthetic audit and annotator (see the module doc)."""

    name: str = "8 groups of 250"
    groups: int = 8
    per_group: int = 250
    dark_share: float = 0.4
    miss_dark: float = 0.25
    miss_light: float = 0.05
    reverse: float = 0.2
    female_low: float = 0.2
    female_high: float = 0.8

    @property
    def n_images(self) -> int:
        return self.groups * self.per_group

    def female_probability(self) -> np.ndarray:
        return np.linspace(self.female_low, self.female_high, self.groups)


def truth(scenario: Scenario, statistic: str) -> float:
    """The score's expectation with people's labels of every image."""
    p = scenario.female_probability()
    if statistic == "share":
        return float(p.mean())
    m = scenario.per_group
    k = np.arange(m + 1)
    return float(np.mean([np.sum(stats.binom.pmf(k, m, q) * np.abs(k / m - 0.5)) for q in p]))


def _audit(scenario: Scenario, style_miss: float, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """(group of each image, people's label, the annotator's label, dark skin): 1 = woman."""
    group = np.repeat(np.arange(scenario.groups), scenario.per_group)
    people = (rng.random(group.size) < scenario.female_probability()[group]).astype(float)
    dark = rng.random(group.size) < scenario.dark_share
    miss = np.where(dark, scenario.miss_dark, scenario.miss_light) + style_miss
    misread = rng.random(group.size) < np.where(people == 1, miss, scenario.reverse * miss)
    return group, people, np.where(misread, 1 - people, people), dark


def _sample(group: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """A boolean mask of ``n`` images, stratified by group with proportional allocation."""
    members = {int(g): np.flatnonzero(group == g) for g in np.unique(group)}
    take = allocate({g: len(m) for g, m in members.items()}, n, rng)
    mask = np.zeros(group.size, bool)
    for g, k in take.items():
        mask[rng.choice(members[g], size=k, replace=False)] = True
    return mask


def _plan_parts(statistic: str, group: np.ndarray, labels: dict, lab: np.ndarray, groups: int, n_resamples: int,
                seed: int) -> dict[str, Part]:
    """The three parts on the runs' own resamples: a :class:`ResamplePlan` keyed by image, strata
    the groups for a score built per group (as the scorers resample)."""
    keys = [f"image-{i}" for i in range(group.size)]
    w = ResamplePlan(n_resamples, seed).row_weights(keys, None if statistic == "share" else group).astype(float)
    one = np.ones((1, group.size))
    parts = {}
    for name, values, mask in (("human", labels["people"], lab), ("auto_labelled", labels["auto"], lab),
                               ("auto_all", labels["auto"], None)):
        cols = np.arange(group.size) if mask is None else np.flatnonzero(mask)
        value = _statistic(statistic, one[:, cols], values[cols], group[cols], groups)[0]
        parts[name] = Part(float(value), _statistic(statistic, w[:, cols], values[cols], group[cols], groups))
    return parts


def _statistic(statistic: str, w: np.ndarray, labels: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    """The score on each weighted resample (rows of ``w``)."""
    if statistic == "share":
        return (w @ labels) / w.sum(1)
    member = np.zeros((labels.size, groups))
    member[np.arange(labels.size), group] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = (w @ (member * labels[:, None])) / (w @ member)
    return np.nanmean(np.abs(shares - 0.5), axis=1)


def _from_counts(statistic: str, women: np.ndarray, images: np.ndarray) -> np.ndarray:
    """The score from per-group counts of women and of images (last axis: groups)."""
    if statistic == "share":
        return women.sum(-1) / images.sum(-1)
    return np.mean(np.abs(women / images - 0.5), axis=-1)


def _count_parts(statistic: str, group: np.ndarray, labels: dict, lab: np.ndarray, groups: int, n_resamples: int,
                 seed: int) -> dict[str, Part]:
    """The three parts on numpy Poisson(1) resamples of the images, drawn as sums: the Poisson
    weights of the images sharing a group and a (people, annotator) label pair add up to one
    Poisson draw of their count, so this is the per-image Poisson bootstrap, exactly, at the cost of
    a few draws per group. A group left empty by a draw is drawn again (as the plan does)."""
    rng = np.random.default_rng(seed)
    y, yhat = labels["people"].astype(int), labels["auto"].astype(int)
    cell = (group * 4 + y * 2 + yhat)  # group x people x annotator
    lab_counts = np.bincount(cell[lab], minlength=groups * 4).reshape(groups, 2, 2).astype(float)
    rest_counts = np.bincount(group[~lab] * 2 + yhat[~lab], minlength=groups * 2).reshape(groups, 2).astype(float)
    by_group = statistic != "share"

    def draw(counts: np.ndarray) -> np.ndarray:
        d = rng.poisson(counts, (n_resamples, *counts.shape)).astype(float)
        if by_group:  # a group's images all weighed 0: drawn again
            axes = tuple(range(2, d.ndim))
            empty = (d.sum(axis=axes) == 0) & (counts.sum(axis=tuple(range(1, counts.ndim))) > 0)
            while empty.any():
                b, g = np.nonzero(empty)
                d[b, g] = rng.poisson(counts[g])
                empty = (d.sum(axis=axes) == 0) & (counts.sum(axis=tuple(range(1, counts.ndim))) > 0)
        return d

    sl, su = draw(lab_counts), draw(rest_counts)
    parts = {}
    for name, (women, images) in {
            "human": (lambda c: c[..., 1, :].sum(-1), lambda c: c.sum((-1, -2))),
            "auto_labelled": (lambda c: c[..., :, 1].sum(-1), lambda c: c.sum((-1, -2)))}.items():
        parts[name] = Part(float(_from_counts(statistic, women(lab_counts), images(lab_counts))),
                           _from_counts(statistic, women(sl), images(sl)))
    all_w, all_n = lab_counts[..., :, 1].sum(-1) + rest_counts[..., 1], lab_counts.sum((-1, -2)) + rest_counts.sum(-1)
    draws_w, draws_n = sl[..., :, 1].sum(-1) + su[..., 1], sl.sum((-1, -2)) + su.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        parts["auto_all"] = Part(float(_from_counts(statistic, all_w, all_n)), _from_counts(statistic, draws_w, draws_n))
    return parts


def _people_only(h: float, hb: np.ndarray, n: int, level: float) -> tuple[float, float]:
    se = float(np.std(hb, ddof=1) * math.sqrt(n / (n - 1)))
    q = float(stats.t.ppf(0.5 + level / 2, n - 1))
    return h - q * se, h + q * se


def _repetition(scenario: Scenario, statistic: str, style_miss: float, n: int, rep_seed: int, n_resamples: int,
                bootstrap: str, level: float) -> tuple[dict, Corrected, str | None]:
    """One synthetic audit with ``n`` images labelled by people: (data and the three parts, the
    corrected score, why the score stage would give no value)."""
    rng = np.random.default_rng(rep_seed)
    group, people, auto, _ = _audit(scenario, style_miss, rng)
    lab = _sample(group, n, rng)
    build = _plan_parts if bootstrap == "plan" else _count_parts
    parts = build(statistic, group, {"people": people, "auto": auto}, lab, scenario.groups, n_resamples, rep_seed)
    n_lab = int(lab.sum())
    smallest = int(np.bincount(group[lab], minlength=scenario.groups).min())
    why = not_enough(n_lab, group.size, groups=None if statistic == "share" else scenario.groups,
                     smallest_group=smallest)
    corrected = prediction_powered(parts["human"], parts["auto_labelled"], parts["auto_all"], n_human=n_lab,
                                   n_population=group.size, confidence_level=level, tune=statistic == "share",
                                   bounds=(0.0, 1.0 if statistic == "share" else 0.5))
    data = {"parts": parts, "people": people, "auto": auto, "labelled": lab, "n_labelled": n_lab}
    return data, corrected, why


def simulate_one(scenario: Scenario, statistic: str, style: str, n: int, *, seed: int = 0, n_resamples: int = 500,
                 bootstrap: str = "counts", level: float = 0.95) -> Corrected:
    """The corrected score of one synthetic audit (a pilot, for the labelling plan's check)."""
    return _repetition(scenario, statistic, STYLES[style], n, seed, n_resamples, bootstrap, level)[1]


def _one(scenario: Scenario, statistic: str, style_miss: float, n: int, rep_seed: int, n_resamples: int,
         bootstrap: str, level: float, ppi_mean: bool) -> dict:
    """One repetition: each method's interval and whether it covers the truth."""
    data, corrected, why = _repetition(scenario, statistic, style_miss, n, rep_seed, n_resamples, bootstrap, level)
    parts, lab, n_lab = data["parts"], data["labelled"], data["n_labelled"]
    out = {"not_enough": why is not None, "corrected": (corrected.low, corrected.high, corrected.value, corrected.lam)}
    lo, hi = np.percentile(parts["auto_all"].resamples, [50 * (1 - level), 50 * (1 + level)])
    out["automatic"] = (float(lo), float(hi), parts["auto_all"].value, None)
    lo, hi = _people_only(parts["human"].value, parts["human"].resamples, n_lab, level)
    out["people"] = (lo, hi, parts["human"].value, None)
    if statistic == "share" and ppi_mean:
        s = corrected_share(data["people"][lab], data["auto"][lab], data["auto"][~lab], confidence_level=level)
        out["ppi_mean"] = (s.low, s.high, s.value, None)
    return out


def simulate(scenario: Scenario, statistic: str, style: str, n: int, *, reps: int = 1000, n_resamples: int = 500,
             seed: int = 0, bootstrap: str = "counts", level: float = 0.95, ppi_mean: bool = True,
             enforce_minimum: bool = True) -> dict:
    """One row of the table: coverage (share of ``reps`` intervals holding the truth) and mean width
    of each method, at ``n`` people-labelled images of the scenario's audit, for one style.
    ``ppi_mean``: also ppi-python's PPI++ mean for the share (slower). ``enforce_minimum``: a
    repetition with too few labels (:func:`benchmark.scores.ppi.not_enough`) gives no value, as in
    the score stage; False shows the intervals anyway (the stress rows that set the minimum)."""
    if statistic not in STATISTICS or style not in STYLES or bootstrap not in ("plan", "counts"):
        raise ValueError(f"statistic in {STATISTICS}, style in {list(STYLES)}, bootstrap plan / counts; got "
                         f"{statistic!r}, {style!r}, {bootstrap!r}")
    target = truth(scenario, statistic)
    hits: dict[str, list] = {}
    skipped = 0
    for r in range(reps):
        one = _one(scenario, statistic, STYLES[style], n, seed * 1_000_003 + r, n_resamples, bootstrap, level, ppi_mean)
        if one.pop("not_enough"):
            skipped += 1
            if enforce_minimum:
                continue
        for method, (lo, hi, value, lam) in one.items():
            hits.setdefault(method, []).append((lo <= target <= hi, hi - lo, value - target, lam))
    row = {"scenario": scenario.name, "statistic": statistic, "style": style, "n_human": n,
           "n_images": scenario.n_images, "reps": reps, "not_enough": skipped, "truth": target}
    for method, h in hits.items():
        arr = np.asarray([x[:3] for x in h], float)
        row[f"{method}_coverage"] = float(arr[:, 0].mean())
        row[f"{method}_width"] = float(arr[:, 1].mean())
        row[f"{method}_bias"] = float(arr[:, 2].mean())
        if method == "corrected":
            row["lambda_mean"] = float(np.mean([x[3] for x in h if x[3] is not None] or [np.nan]))
    return row


def coverage_table(scenario: Scenario = Scenario(), *, sizes=SIZES, statistics=STATISTICS, styles=tuple(STYLES),
                   reps: int = 1000, n_resamples: int = 500, seed: int = 0, bootstrap: str = "plan") -> Iterator[dict]:
    """Every row (statistic x style x size) of the table, one at a time."""
    for statistic in statistics:
        for style in styles:
            for n in sizes:
                yield simulate(scenario, statistic, style, n, reps=reps, n_resamples=n_resamples, seed=seed,
                               bootstrap=bootstrap)


def _pct(v) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}"


#: the column alignment of the table docs/human_correction.md quotes
TABLE_ALIGN = "lllrrrrrrrrr"


def table_cells(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """The header and cells of the table docs/human_correction.md quotes (the bench script renders
    them with present.text.markdown_table: scores sits below present in the layers)."""
    head = ["audit", "score", "style", "people's labels", "corrected coverage %", "PPI++ mean (ppi-python) %",
            "automatic %", "people alone %", "corrected width", "people-alone width", "mean lambda",
            "runs without a value"]
    cells = [[r["scenario"], r["statistic"], r["style"], f"{r['n_human']} of {r['n_images']}",
              _pct(r.get("corrected_coverage")), _pct(r.get("ppi_mean_coverage")), _pct(r.get("automatic_coverage")),
              _pct(r.get("people_coverage")), f"{r.get('corrected_width', float('nan')):.3f}",
              f"{r.get('people_width', float('nan')):.3f}", f"{r.get('lambda_mean', float('nan')):.2f}",
              f"{r['not_enough']} of {r['reps']}"] for r in rows]
    return head, cells


def scenario_dict(scenario: Scenario) -> dict:
    return asdict(scenario)
