"""Scores corrected with people's labels: every score entry of a run scored again by its task's
own code on people's labels of the calibration sample, and on the annotator's labels of the same
images, under one paired resample plan; then combined with the run's own entry by
:func:`benchmark.scores.ppi.prediction_powered` (results.json's ``human_corrected``).

Why the tasks' own scorers: a corrected score must be the same score, so each paper's score
function runs unchanged, on a label table in its label file's shape whose values are people's
(:class:`HumanTable`). Three scorings (people's labels of the sample, the annotator's labels of
the sample, the annotator's labels of every image) share one
:class:`benchmark.scores.bootstrap.ResamplePlan` of the score stage's size and random state, so a
probe carries its people's label, its automatic label and its place among all images into the
same resample.

What people's labels are, which of them count (a random sample recorded before labelling, or a
census of a suite; refused answers and why) is read by :mod:`benchmark.human` and handed here
as :class:`HumanLabels`: this layer never reads the answers file.
"""

from __future__ import annotations

import warnings
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from benchmark.annotate.label_files import LABEL_FILES
from benchmark.scores import ppi
from benchmark.scores.bootstrap import ResamplePlan, resample_plan
from benchmark.tasks.context import ScoringContext, entry_key
from benchmark.tasks.of_run import tasks_of_run

__all__ = ["HumanTable", "HumanLabels", "GroupCountingPlan", "correct_entries", "human_frames"]


@dataclass(frozen=True)
class HumanTable:
    """People's labels of one label file, in its shape: ``frame`` has the ``keys`` columns (which
    rows of the label file a label applies to: every annotator's row of that image and question)
    and the ``values`` columns people's answers replace. ``tolerance``: how far the annotator's
    value may be from people's before it counts as an error (0: any difference; 1 for Monk tones:
    more than one tone apart). ``shares``: its first value is a category whose shares are worth
    correcting too (perceived gender, skin tone), not one of many yes / no questions.
    ``judged(rows, config)``: for a label file whose values are no label to compare as they are
    (detections), each row joined with its probe fields judged as the task's scorer judges it, with
    ``family``'s probe config; the annotator's errors compare that judgement.
    ``annotator_column``: the file's column naming who made a row."""

    kind: str
    keys: tuple[str, ...]
    values: tuple[str, ...]
    frame: pd.DataFrame
    tolerance: float = 0.0
    shares: bool = False
    judged: Callable[[pd.DataFrame, dict], pd.Series] | None = None
    family: str | None = None
    annotator_column: str = "annotator"


@dataclass
class HumanLabels:
    """What :mod:`benchmark.human` hands the score stage: people's labels (``tables``, label file
    -> :class:`HumanTable`), the images whose labels count for correction per suite (``labelled``:
    in the random sample, or every image of a census suite, each with every question asked
    answered), the suites people labelled completely (``census``), the eligible images per suite
    (``population``) and ``summary``: results.json's ``human_labels`` section (answers used,
    answers refused and why, the sample record, per suite what was used)."""

    tables: dict[str, HumanTable]
    labelled: dict[str, set[str]]
    census: set[str] = field(default_factory=set)
    population: dict[str, int] = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    #: the label files people can be asked about at all (the others make a score not label-based for people)
    askable: frozenset[str] = frozenset()

    @property
    def probes(self) -> set[str]:
        return set().union(*self.labelled.values()) if self.labelled else set()


@dataclass
class GroupCountingPlan(ResamplePlan):
    """A :class:`ResamplePlan` whose design also records the labelled images of the smallest group
    (``smallest``): a score built per group needs :data:`benchmark.scores.ppi.MIN_PER_GROUP` in each."""

    def design(self, keys, strata=None) -> dict:
        d = super().design(keys, strata)
        labels = np.zeros(len(keys), dtype=np.int64) if strata is None else np.asarray(strata)
        sizes = pd.Series([str(k) for k in keys]).groupby(pd.Series(labels).astype(str).to_numpy()).nunique()
        d["smallest"] = int(sizes.min()) if len(sizes) else 0
        return d


def human_frames(ctx: ScoringContext, human: HumanLabels) -> dict[str, pd.DataFrame | None]:
    """Every label file as people labelled it: the automatic rows of the labelled images with
    people's values in place (so every annotator's entry has its people's twin); None for a file
    people do not label (its entries cannot be corrected)."""
    out: dict[str, pd.DataFrame | None] = {name: None for name in LABEL_FILES}
    probes = human.probes
    for kind, table in human.tables.items():
        auto = ctx.label(kind)
        if auto is None:
            continue
        rows = auto[auto["probe_id"].isin(probes)].drop(columns=[c for c in table.values if c in auto.columns])
        people = table.frame.loc[:, list(table.keys) + list(table.values)]
        out[kind] = rows.merge(people, on=list(table.keys), how="inner").loc[:, list(auto.columns)]
    return out


def _score(ctx: ScoringContext, plan: ResamplePlan | None) -> ScoringContext:
    """Every task of the run scores ``ctx`` (under ``plan``); warnings and notes stay inside."""
    with warnings.catch_warnings(), (resample_plan(plan) if plan is not None else nullcontext()):
        warnings.simplefilter("ignore")
        for task, suites in tasks_of_run(ctx.run_dir, list(ctx.status), ctx.config):
            task.score(ctx, suites)
    return ctx


def _contexts(ctx: ScoringContext, human: HumanLabels) -> tuple[ScoringContext, ScoringContext, ScoringContext]:
    """The run scored on people's labels of the labelled images, on the annotator's labels of the
    same images, and on every image (the score stage's values, its intervals outside any plan),
    all three under one resample plan of the score stage's size and random state."""
    opts = ctx.options
    plan = GroupCountingPlan(opts.n_resamples, opts.random_state) if opts.n_resamples >= 2 else None
    probes = human.probes
    base = {"config": ctx.config, "manifest": ctx.manifest}
    people = ScoringContext(ctx.run_dir, opts, probes, labels=human_frames(ctx, human), **base)
    auto = ScoringContext(ctx.run_dir, opts, probes, labels=dict(ctx.labels), **base)
    every = ScoringContext(ctx.run_dir, opts, labels=dict(ctx.labels), **base) if plan is not None else ctx
    return _score(people, plan), _score(auto, plan), _score(every, plan) if plan is not None else ctx


def _not_corrected(reason: str, n_human: int = 0, n_population: int = 0, groups: int | None = None) -> dict:
    return {"value": None, "ci": None, "n_human": int(n_human), "n_population": int(n_population), "method": None,
            "lam": None, "se": None, "se_census": None, "groups": groups, "reason": reason}


def _reason_without(people: ScoringContext, entry: Mapping, human: HumanLabels) -> str:
    """Why people's labels give no value for ``entry``."""
    suite = entry.get("suite")
    if not human.labelled.get(suite):
        return "no people's labels of this suite's images count for correction (see human_labels.suites)"
    missing = dict.fromkeys(m.removeprefix("missing ") for m in people.missing_parts.get(suite, []))
    never = [f for f in missing if not any(f == LABEL_FILES[k].relpath for k in human.askable)]
    if never:
        return (f"not label-based for people: it reads {', '.join(never)}, which no question of the annotation app "
                "labels")
    if missing:
        return f"people were not asked the questions behind {', '.join(missing)} in the sample"
    return "the score is undefined on people's labels of the sample"


def _census(entry: Mapping, n_population: int, human: HumanLabels) -> bool:
    """Whether people labelled every image ``entry`` rests on: its suite is a census, and so is every
    suite people label when the entry rests on more images than its suite holds (a score over
    several suites, such as a mean over skills, is named after one of them)."""
    suite = entry.get("suite")
    if suite not in human.census:
        return False
    return n_population <= human.population.get(suite, 0) or set(human.population) <= human.census


def _corrected(entry: Mapping, ctx: ScoringContext, people: ScoringContext, auto: ScoringContext,
               human: HumanLabels, found: tuple[dict, dict]) -> dict:
    """``entry``'s ``human_corrected`` from its twins on people's and the annotator's labels
    (``ctx``: the run's every image scored under the twins' plan)."""
    key = entry_key(entry)
    h, a = found
    n_h, n_pop = int(h.get("n") or 0), int(entry.get("n") or 0)
    census = _census(entry, n_pop, human)
    design = people.designs.get(key) or {}
    groups, smallest = design.get("strata"), design.get("smallest")
    why = None if census else ppi.not_enough(n_h, n_pop, groups=groups, smallest_group=smallest)
    groups_all = (ctx.designs.get(key) or {}).get("strata")  # the score's groups over all its images
    if why:
        return _not_corrected(why, n_h, n_pop, groups_all)
    main = ctx.resamples.get(key)
    parts = [ppi.Part(float(x["value"]), r) for x, r in
             ((h, people.resamples.get(key)), (a, auto.resamples.get(key)), (entry, main))]
    if any(p.resamples is None for p in parts):
        parts = [ppi.Part(p.value) for p in parts]
    out = ppi.prediction_powered(*parts, n_human=n_h, n_population=max(n_pop, n_h), census=census,
                                 confidence_level=ctx.options.confidence_level, tune=not groups or groups <= 1,
                                 bounds=(entry.get("min"), entry.get("max"))).to_dict()
    out.update(groups=groups_all, reason=None)
    return out


def correct_entries(ctx: ScoringContext, human: HumanLabels) -> dict[tuple, dict]:
    """entry key -> ``human_corrected`` for every score entry of ``ctx`` (scored already, the score
    stage's way): the corrected value and interval, or why there is none."""
    if not human.probes:
        return {entry_key(e): _not_corrected("no people's labels count for correction (see human_labels.suites)")
                for e in ctx.scores}
    people, auto, every = _contexts(ctx, human)
    by_key = [{entry_key(e): e for e in c.scores if e.get("defined")} for c in (people, auto)]
    out = {}
    for entry in ctx.scores:
        key = entry_key(entry)
        if not entry.get("defined"):
            out[key] = _not_corrected("the automatic score is undefined")
            continue
        h, a = by_key[0].get(key), by_key[1].get(key)
        if h is None or a is None:
            out[key] = _not_corrected(_reason_without(people, entry, human))
            continue
        out[key] = _corrected(entry, every, people, auto, human, (h, a))
    return out
