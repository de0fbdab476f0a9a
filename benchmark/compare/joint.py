"""Two runs scored together, for the paired randomization test of every score
(:mod:`benchmark.scores.randomization`).

One table holds both runs: the manifest rows of the compared probes of A and of B, each probe id
tagged with its run (:func:`benchmark.scores.randomization.tag`), and, per label file, A's rows
and B's rows tagged alike (rows of no probe of either run, such as a reference's attribute images
or text embeddings, are A's, untagged: both sides share them). The tasks' own scoring code scores
that table once under a :class:`~benchmark.scores.randomization.JointPlan`; every score it adds
carries its :class:`~benchmark.scores.randomization.JointDraws` (each run's value, paired
resamples, swaps) and whether the two runs hold the same rows of every label file read before it
(``same_labels``: a rerun with the same labels is *identical*, a score no swap can change is
not). The comparison checks each run's value there against the run scored alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from benchmark.annotate.label_files import get_label_file
from benchmark.compare.runs import Run
from benchmark.scores.bootstrap import resample_plan
from benchmark.scores.randomization import JointDraws, JointPlan, tag
from benchmark.tasks.context import ScoringContext, ScoringOptions
from benchmark.tasks.of_run import tasks_of_run

__all__ = ["JointContext", "same_rows", "score_jointly", "score_pairs"]


def _compared(run: Run, probes: set | None) -> pd.DataFrame:
    m = run.manifest
    return m if probes is None else m[m["probe_id"].astype(str).isin(probes)]


class JointContext(ScoringContext):
    """A scoring context over several runs' rows (see the module doc): ``sides``, each run with the
    tag of its probe ids ("a" and "b" for a comparison; "<pair>a" / "<pair>b" for many pairs of
    simulated audits); labels are merged when a task first asks for a label file."""

    def __init__(self, sides: Sequence[tuple[Run, str]], probes: set | None, options: ScoringOptions):
        parts = []
        for run, side in sides:
            rows = _compared(run, probes).copy()
            rows["probe_id"] = pd.Series(tag(rows["probe_id"].astype(str), side), index=rows.index, dtype=object)
            parts.append(rows)
        first = sides[0][0]
        super().__init__(Path(first.path) if first.is_folder else Path(), options, config=first.config,
                         manifest=pd.concat(parts, ignore_index=True))
        self.sides = list(sides)
        self.compared = [set(_compared(r, probes)["probe_id"].astype(str)) for r, _ in sides]
        self.own = set().union(*(set(r.manifest["probe_id"].astype(str)) for r, _ in sides))
        #: label file -> whether both runs hold the same rows of it (on the compared probes; two runs only)
        self.same: dict[str, bool] = {}

    def label(self, kind: str) -> pd.DataFrame | None:
        if kind not in self.labels:
            frames, own = [], []
            for i, (run, side) in enumerate(self.sides):
                frame = run.label_frame(kind)
                if frame is None:
                    own.append(None)
                    continue
                ids = frame["probe_id"].astype(str)
                mine = frame[ids.isin(self.compared[i])]
                own.append(mine)
                frames.append(mine.assign(probe_id=pd.Series(tag(mine["probe_id"].astype(str), side), index=mine.index,
                                                             dtype=object)))
                if i == 0:  # rows of no probe of any run: the first run's, shared by every side
                    frames.append(frame[~ids.isin(self.own)])
            ignored = [c for c in get_label_file(kind).provenance]  # how a label was made: no score reads it
            self.same[kind] = len(own) == 2 and same_rows(
                *[None if f is None else f.drop(columns=[c for c in ignored if c in f.columns]) for f in own])
            self.labels[kind] = pd.concat(frames, ignore_index=True) if frames else None
        return super().label(kind)

    def same_labels(self, key: tuple) -> bool:
        """Whether both runs hold the same rows of every label file read before entry ``key``."""
        kinds = self.read_by.get(key) or ()
        return bool(kinds) and all(self.same.get(k, False) for k in kinds)


def _row_hashes(frame: pd.DataFrame) -> np.ndarray:
    """One 64-bit hash per row of a label frame (arrays as their bytes, columns in name order),
    sorted: two frames with the same rows in any order give the same array."""
    cols = {}
    for c in sorted(frame.columns):
        values = frame[c]
        if values.dtype == object and any(isinstance(v, (list, tuple, np.ndarray)) for v in values.head(50)):
            values = values.map(lambda v: None if v is None else np.asarray(v).tobytes())
        cols[c] = values.astype(object).where(values.notna(), None)
    return np.sort(pd.util.hash_pandas_object(pd.DataFrame(cols), index=False).to_numpy())


def same_rows(a: pd.DataFrame | None, b: pd.DataFrame | None) -> bool:
    """Whether two runs' rows of one label file are the same (both missing counts as the same)."""
    if a is None or b is None:
        return a is None and b is None
    return len(a) == len(b) and set(a.columns) == set(b.columns) and np.array_equal(_row_hashes(a), _row_hashes(b))


def score_jointly(a: Run, b: Run, probes: set | None, options: ScoringOptions, plan: JointPlan) -> dict:
    """Entry key -> :class:`JointDraws` of every score the tasks give on both runs' rows together
    (``probes``: the compared ones; None: every probe of each run)."""
    ctx = JointContext([(a, "a"), (b, "b")], probes, options)
    with resample_plan(plan):
        for task, suites in tasks_of_run(ctx.run_dir, list(ctx.status), ctx.config):
            ctx.read = []
            task.score(ctx, suites)
    out = {}
    for key, draws in ctx.resamples.items():
        if isinstance(draws, JointDraws):
            draws.same_labels = ctx.same_labels(key)
            draws.label_files = ctx.read_by.get(key, ())  # the label files read before it, its own last
            out[key] = draws
    return out


def score_pairs(sides: Sequence[tuple[Run, str]], options: ScoringOptions, plan) -> tuple[dict, dict]:
    """Many pairs of runs scored together (``sides`` tagged "<pair>a" / "<pair>b", ``plan`` a
    :class:`benchmark.scores.randomization.PairsPlan`): entry key -> the
    :class:`~benchmark.scores.randomization.PairDraws`, and entry key -> the label files read
    before it (its own last)."""
    ctx = JointContext(sides, None, options)
    with resample_plan(plan):
        for task, suites in tasks_of_run(ctx.run_dir, list(ctx.status), ctx.config):
            ctx.read = []
            task.score(ctx, suites)
    return dict(ctx.resamples), dict(ctx.read_by)
