"""Calibration of ``t2ibench compare`` by simulation with the truth known: the one home of the
simulations the tests (tests/test_compare_calibration.py), the bench script
(bench/compare_calibration.py) and docs/compare.md's table share.

Two audits of one model are drawn from an outside-style model of their labels
(:class:`benchmark.runner.simulate.Truth`: prompts that differ, a seed effect both audits share,
images drawn independently) over the real probe tables cut by the real ``--limit`` rule
(:func:`probes_at`), and compared by :func:`benchmark.compare.compare_loaded`, the command's own
path (each run scored by the tasks' own code, alone and together). Measured:

* **null rates** (:func:`null_runs`): how often a score is called significant (Holm) when nothing
  changed, per score and for the family (any score), and how often its interval is flagged;
* **power at the printed MDD** (:func:`power_runs`): a change of audit B as large, in the score's
  expected value, as the MDD a comparison of that size prints (a null pair's), found how often;
* **the plan's MDD** (:func:`pilot_runs`): the MDD ``--pilot`` plans from a pilot audit against
  the true MDD of the planned design (2.80 x the spread of the tested quantity over pairs of
  audits drawn from the truth).

Rates come with Clopper-Pearson intervals (:func:`clopper_pearson`, statsmodels).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from benchmark.compare.comparison import compare_loaded
from benchmark.compare.runs import Run
from benchmark.probes.source import open_probe_set
from benchmark.runner.probe_choice import build_probes, limit_probes, prompt_key
from benchmark.runner.simulate import Layout, Truth, draw_labels, image_effects, layout
from benchmark.scores.design import mdd_factor
from benchmark.scores.metadata import get_metadata

__all__ = ["Size", "clopper_pearson", "null_runs", "pilot_runs", "power_runs", "probes_at", "simulated_pair"]


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


def probes_at(suites: Sequence[str], size: Size) -> pd.DataFrame:
    """The probes of ``suites`` an audit of ``size`` generates (the real ``--limit`` rule)."""
    if size.per_prompt is None:
        return build_probes(list(suites), size.limit)
    full = build_probes(list(suites))
    frames = []
    for suite, rows in full.groupby("suite", sort=False):
        prompts = rows["probe_id"].astype(str).map(prompt_key).nunique()
        frames.append(limit_probes(rows, prompts * size.per_prompt))
    return pd.concat(frames, ignore_index=True)


def _run(label: str, lay: Layout, labels: Mapping[str, pd.DataFrame]) -> Run:
    suites = list(dict.fromkeys(lay.probes["suite"]))
    config = {"suites": suites, "probes": open_probe_set().record(suites),
              "model": {"model_id": "simulated", "builtin": False}, "settings": {}}
    manifest = lay.probes.assign(nsfw=False, probe_id=lay.probes["probe_id"].astype(object))
    return Run(label, label, config, manifest, None, "memory", dict(labels))


def simulated_pair(lay: Layout, truth: Truth, rng: np.random.Generator, change: float = 0.0) -> tuple[Run, Run]:
    """Two audits of one model drawn from ``truth`` (B changed by ``change``, see
    :func:`benchmark.runner.simulate.draw_labels`), as runs a comparison takes."""
    values = truth.cells(lay, rng)
    effects = image_effects(lay, values, rng, truth.seed, truth.seed_sd)
    return (_run("a", lay, draw_labels(lay, values, effects, rng)),
            _run("b", lay, draw_labels(lay, values, effects, rng, change)))


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The exact binomial interval of k events in n (statsmodels ``proportion_confint``, beta)."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(k, n, alpha=1 - level, method="beta")
    return float(low), float(high)


def _key(r: Mapping) -> tuple:
    return (r["name"], r["suite"], r["subset"], r["estimator"], r["annotator"])


@dataclass
class Tally:
    """Per score (and the family): comparisons, significant calls, flagged intervals."""

    n: dict = field(default_factory=dict)
    hits: dict = field(default_factory=dict)
    flagged: dict = field(default_factory=dict)
    families: int = 0
    family_hits: int = 0

    def add(self, rows: Iterable[Mapping], wanted=lambda r: True) -> None:
        any_hit = False
        for r in rows:
            if r["status"] != "compared" or not wanted(r):
                continue
            k = _key(r)
            self.n[k] = self.n.get(k, 0) + 1
            self.hits[k] = self.hits.get(k, 0) + int(bool(r["significant"]))
            self.flagged[k] = self.flagged.get(k, 0) + int(r.get("ci_check") is not None)
            any_hit |= bool(r["significant"])
        self.families += 1
        self.family_hits += int(any_hit)

    def table(self, size: str) -> list[dict]:
        out = []
        for k in sorted(self.n, key=str):
            low, high = clopper_pearson(self.hits[k], self.n[k])
            out.append({"size": size, "score": k[0], "suite": k[1], "subset": k[2], "estimator": k[3] or k[4],
                        "n": self.n[k], "rate": self.hits[k] / self.n[k], "low": low, "high": high,
                        "flagged": self.flagged[k] / self.n[k]})
        low, high = clopper_pearson(self.family_hits, self.families)
        out.append({"size": size, "score": "any score (family-wise, Holm)", "suite": "", "subset": None,
                    "estimator": None, "n": self.families, "rate": self.family_hits / max(self.families, 1),
                    "low": low, "high": high, "flagged": None})
        return out


def null_runs(suites: Sequence[str], size: Size, reps: int, *, n_resamples: int = 200, seed: int = 0,
              truth: Truth | None = None, lay: Layout | None = None) -> list[dict]:
    """Null rates at ``size``: ``reps`` pairs of audits of one model compared; per score the share
    called significant after Holm (with its interval), and the family-wise share."""
    truth = truth or Truth()
    lay = lay or layout(probes_at(suites, size))
    tally = Tally()
    for rep in range(reps):
        rng = np.random.default_rng([seed, rep])
        a, b = simulated_pair(lay, truth, rng)
        tally.add(compare_loaded([a, b], n_resamples=n_resamples, random_state=rep).rows)
    return tally.table(size.label)


# --------------------------------------------------------------------------- power at the printed MDD


def expected_badness(lay: Layout, truth: Truth, key: tuple, change: float, draws: int, seed: int) -> float:
    """The mean, over ``draws`` audits from ``truth`` (B's labels changed by ``change``), of score
    ``key``'s badness (what is tested), with common random numbers for every ``change``."""
    from benchmark.compare.runs import score_alone
    from benchmark.tasks.context import ScoringOptions, entry_key
    from benchmark.tasks.registry import task_options

    meta = get_metadata(key[0])
    total = 0.0
    for d in range(draws):
        rng = np.random.default_rng([seed, 7_000 + d])
        values = truth.cells(lay, rng)
        effects = image_effects(lay, values, rng, truth.seed, truth.seed_sd)
        run = _run("b", lay, draw_labels(lay, values, effects, rng, change))
        entries = {entry_key(e): e for e in score_alone(run, None, ScoringOptions(0, task_options=task_options())).entries}
        total += float(meta.badness(entries[key]["value"]))
    return total / draws


def change_for(lay: Layout, truth: Truth, key: tuple, target: float, *, draws: int = 24, seed: int = 0) -> float:
    """The change of B's labels that moves score ``key``'s expected badness by ``target`` (a
    bisection over the change's strength in [0, 1])."""
    base = expected_badness(lay, truth, key, 0.0, draws, seed)
    low, high = 0.0, 1.0
    for _ in range(12):
        mid = (low + high) / 2
        if expected_badness(lay, truth, key, mid, draws, seed) - base < target:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def power_runs(suites: Sequence[str], size: Size, reps: int, *, scores: Sequence[str] | None = None,
               n_resamples: int = 200, seed: int = 0, truth: Truth | None = None, draws: int = 24) -> list[dict]:
    """Power at the printed MDD: per compared score (of ``scores``), the MDD a null comparison of
    ``size`` prints, the change that moves the score's expected badness by it, and the share of
    ``reps`` comparisons with that change that call the score significantly worse."""
    truth = truth or Truth()
    lay = layout(probes_at(suites, size))
    pilot = compare_loaded(list(simulated_pair(lay, truth, np.random.default_rng([seed, 99_999]))),
                           n_resamples=n_resamples, random_state=99_999)
    out = []
    for row in pilot.rows:
        if row["status"] != "compared" or (scores and row["name"] not in scores):
            continue
        key = _key(row)
        t = change_for(lay, truth, key, row["mdd"], draws=draws, seed=seed)
        found = 0
        for rep in range(reps):
            a, b = simulated_pair(lay, truth, np.random.default_rng([seed, 50_000 + rep]), t)
            (r,) = [r for r in compare_loaded([a, b], n_resamples=n_resamples, random_state=rep).rows if _key(r) == key]
            found += int(r["status"] == "compared" and r["significant"] and r["change"] == "worse")
        low, high = clopper_pearson(found, reps)
        out.append({"size": size.label, "score": key[0], "suite": key[1], "subset": key[2],
                    "estimator": key[3] or key[4], "mdd": row["mdd"], "change": t, "n": reps, "rate": found / reps,
                    "low": low, "high": high})
    return out


# --------------------------------------------------------------------------- the plan's MDD against the truth


def true_mdd(lay: Layout, truth: Truth, pairs: int, seed: int = 0) -> dict[tuple, float]:
    """Per score of an audit of layout ``lay``: 2.80 x the spread of its tested quantity over
    ``pairs`` pairs of audits drawn from ``truth`` (the MDD of one test at alpha 0.05, power 0.8)."""
    from benchmark.compare.runs import score_alone
    from benchmark.tasks.context import ScoringOptions, entry_key
    from benchmark.tasks.registry import task_options

    diffs: dict[tuple, list[float]] = {}
    for p in range(pairs):
        a, b = simulated_pair(lay, truth, np.random.default_rng([seed, 30_000 + p]))
        ea, eb = ({entry_key(e): e for e in score_alone(r, None, ScoringOptions(0, task_options=task_options())).entries} for r in (a, b))
        for k, e in ea.items():
            if e.get("defined") and eb.get(k, {}).get("defined"):
                meta = get_metadata(k[0])
                diffs.setdefault(k, []).append(float(meta.badness(eb[k]["value"]) - meta.badness(e["value"])))
    factor = mdd_factor()
    return {k: factor * float(np.std(v, ddof=1)) for k, v in diffs.items() if len(v) > 2}


def pilot_runs(suites: Sequence[str], pilot: Size, planned: Size, pilots: int, *, pairs: int = 200,
               seed: int = 0, truth: Truth | None = None, plan_pairs: int = 60) -> list[dict]:
    """The MDD ``--pilot`` plans for an audit of ``planned`` from ``pilots`` pilot audits of
    ``pilot`` (each drawn from ``truth``), per headline score, against the true MDD of the
    planned design: the median ratio and its range."""
    from benchmark.runner.planning import planned_mdd_from_labels

    truth = truth or Truth()
    planned_lay = layout(probes_at(suites, planned))
    pilot_lay = layout(probes_at(suites, pilot))
    truth_mdd = true_mdd(planned_lay, truth, pairs, seed)
    ratios: dict[tuple, list[float]] = {}
    for i in range(pilots):
        rng = np.random.default_rng([seed, 80_000 + i])
        values = truth.cells(pilot_lay, rng)
        effects = image_effects(pilot_lay, values, rng, truth.seed, truth.seed_sd)
        labels = draw_labels(pilot_lay, values, effects, rng)
        for r in planned_mdd_from_labels(pilot_lay.probes, labels, planned_lay.probes, pairs=plan_pairs,
                                         seed=seed + i, layout_of=lambda probes: planned_lay):
            k = (r["name"], r["suite"], r["subset"], r["estimator"], r["annotator"])
            if "mdd" in r and k in truth_mdd and truth_mdd[k] > 0:
                ratios.setdefault(k, []).append(r["mdd"] / truth_mdd[k])
    out = []
    for k, v in sorted(ratios.items(), key=str):
        v = np.asarray(v)
        out.append({"pilot": pilot.label, "planned": planned.label, "score": k[0], "suite": k[1], "subset": k[2],
                    "estimator": k[3] or k[4], "true_mdd": truth_mdd[k], "n": len(v), "median": float(np.median(v)),
                    "low": float(v.min()), "high": float(v.max()),
                    "within": float(np.mean((v >= 0.8) & (v <= 1.25)))})
    return out


def fmt_rate(r: Mapping) -> str:
    """A rate with its Clopper-Pearson interval, in percent."""
    return f"{100 * r['rate']:.1f}% [{100 * r['low']:.1f}, {100 * r['high']:.1f}]"
