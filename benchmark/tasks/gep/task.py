"""GEP (Zhang et al.): attribute existence by CLIP (C, CC, CLS) -> GEP vectors and scores.

Suites of the ``gep`` family: ``gep_neutral`` / ``gep_explicit`` (setting from the rows'
``setting``) and the occupation case study ``gep_occupation`` (GEP Sec. 7). Groups are data:
the neutral and explicit settings compare every pair of the config's ``genders`` (in config
order; the first pair, woman / man in the papers' config, is the headline entry and has no
``subset``; the others are ``"a vs b"``), the occupation study compares each group with the
config's ``occupation.reference_group`` (GEP Table 10).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from benchmark.tasks.gep.scores import gep, gep_unbounded
from benchmark.tasks.context import ScoringContext
from benchmark.tasks.gep import metadata, probes
from benchmark.tasks.gep.citation import GEP_PAPER
from benchmark.tasks.gep.classifiers import classifiers
from benchmark.tasks.gep.figures import plot_gep
from benchmark.tasks.gep.human_validation import HUMAN_VALIDATION
from benchmark.tasks.gep.paper_checks import checks
from benchmark.tasks.gep.questions import human_questions
from benchmark.registries import Registrations
from benchmark.tasks.registry import ImageLayout, Task, TaskReport

# Estimators whose `score` is an existence probability (GEP Eq. 1); C / CC are raw cosines
# (gep_unbounded); VQA and human answers are read from `label`.
PROBABILITY_ESTIMATORS = ("CLS",)
SIMILARITY_ESTIMATORS = ("C", "CC")
SIMILARITY_NOTE = ("GEP from raw CLIP cosines (C / CC): its scale differs from label frequencies; compare models by "
                   "rank under one estimator")


def _listed(listed) -> frozenset | None:
    """A probe's ``annotated_attributes`` as strings; None where no list is recorded."""
    if listed is None or (isinstance(listed, float) and np.isnan(listed)):
        return None
    return frozenset(str(v) for v in list(listed))


def _asked(frame: pd.DataFrame) -> np.ndarray:
    """Whether each row's attribute is one its probe lists (a row whose probe records no list is
    kept). The list is the probe's, so it is read once per probe, not rebuilt for each of the
    millions of rows an MDD simulation scores."""
    probe = frame["probe_id"].astype(str).to_numpy()
    first = ~pd.Series(probe).duplicated().to_numpy()
    of_probe = {pid: _listed(v) for pid, v in zip(probe[first], frame["annotated_attributes"].to_numpy()[first])}
    attribute = frame["attribute"].astype(str).to_numpy()
    # membership of (probe, attribute) in one hashed lookup, not a Python test per row
    listed = [(pid, a) for pid, s in of_probe.items() if s is not None for a in s]
    asked = pd.MultiIndex.from_arrays([probe, attribute]).isin(listed) if listed else np.zeros(len(frame), bool)
    unlisted = [pid for pid, s in of_probe.items() if s is None]
    return np.asarray(asked, dtype=bool) | pd.Index(probe).isin(unlisted)


def group_pairs(config: dict, frame: pd.DataFrame, occupation: bool) -> list[tuple[str, str, str, str | None]]:
    """(group column, group_a, group_b, subset) compared in a GEP suite: every pair of the
    config's genders (the first pair has subset None), or each occupation group against the
    reference group."""
    if occupation:
        ref = str((config.get("occupation") or {}).get("reference_group") or "")
        seen = frame["group"].unique().tolist()  # in order of appearance, without iterating every row
        groups = [str(g) for g in seen if str(g) != ref]
        if not ref or ref not in {str(g) for g in seen}:
            return []
        return [("group", g, ref, f"{g} vs {ref}") for g in groups]
    order = [str(g["name"]) for g in config.get("genders") or []]
    names = order + sorted({str(g) for g in frame["gender"].unique().tolist()} - set(order))
    pairs = list(combinations(names, 2))
    first = tuple(order[:2])
    return [("gender", a, b, None if (a, b) == first else f"{a} vs {b}") for a, b in pairs]


def _score_pair(ctx: ScoringContext, name: str, suite: str, sub: pd.DataFrame, pair_spec: tuple, estimator: str,
                annotator: str | None, column: str) -> list[dict]:
    group_col, ga, gb, subset = pair_spec
    pair = sub[sub[group_col].isin([ga, gb])]
    # An attribute needs rows of both groups (a --limit can leave one out).
    both = pair.groupby("attribute")[group_col].nunique()
    dropped = sorted(both[both < 2].index)
    pair = pair[pair["attribute"].isin(both[both == 2].index)]
    if dropped:
        ctx.notes.append(f"{suite} ({estimator}{', ' + subset if subset else ''}): attributes "
                         f"{dropped} left out of GEP, labelled for one group only")
    if pair.empty:
        ctx.add(name, suite, None, n=0, estimator=estimator, annotator=annotator, subset=subset,
                reason=f"no attribute is labelled for both {ga!r} and {gb!r}")
        return []
    fn = gep_unbounded if estimator in SIMILARITY_ESTIMATORS else gep
    out = fn(pair[column].astype(float).to_numpy(), pair[group_col].astype(str).to_numpy(),
             pair["attribute"].astype(str).to_numpy(), group_a=ga, group_b=gb,
             image_ids=pair["probe_id"].to_numpy(), keys=pair["probe_id"].to_numpy(), **ctx.options.ci_kwargs())
    ctx.add(name, suite, out["gep_score"], ci=out["gep_score_ci"], n=int(pair["probe_id"].nunique()),
            estimator=estimator, annotator=annotator, subset=subset,
            ci_note=SIMILARITY_NOTE if estimator in SIMILARITY_ESTIMATORS else None)
    return [{"suite": suite, "setting": name.removeprefix("gep_score_"), "estimator": estimator,
             "annotator": annotator, "group_a": ga, "group_b": gb,
             "attribute": attr, "difference": v, "frequency_a": out["frequencies"][ga][attr],
             "frequency_b": out["frequencies"][gb][attr], "n_a": out["counts"][ga][attr],
             "n_b": out["counts"][gb][attr], "gep_score": out["gep_score"]} for attr, v in out["gep_vector"].items()]


def _score_suite(ctx: ScoringContext, suite: str, frame: pd.DataFrame) -> None:
    config = ctx.family_config("gep")
    if "annotated_attributes" in frame.columns:
        # Only the attributes the suite asks about (explicit: the prompt's own attribute).
        frame = frame[_asked(frame)]
    setting = str(frame["setting"].dropna().iloc[0]) if "setting" in frame.columns and frame["setting"].notna().any() \
        else suite.rsplit("_", 1)[-1]
    name = f"gep_score_{setting}"
    vectors: list[dict] = []
    keys = [frame["estimator"].astype(str), frame["annotator"].fillna("").astype(str)]
    for (estimator, annotator), sub in frame.groupby(keys, sort=True):
        column = "score" if estimator in PROBABILITY_ESTIMATORS + SIMILARITY_ESTIMATORS else "label"
        sub = sub[sub[column].notna()]
        if sub.empty:
            continue
        for pair_spec in group_pairs(config, sub, occupation=setting == "occupation"):
            vectors += _score_pair(ctx, name, suite, sub, pair_spec, estimator, annotator or None, column)
        ctx.scored(suite, int(sub["probe_id"].nunique()))
    ctx.detail("gep_vectors", pd.DataFrame(vectors))


def score_gep(ctx: ScoringContext, suites: list[str]) -> None:
    """GEP Eq. 1-2 for every suite, estimator and annotator of labels/attributes.parquet."""
    for suite in suites:
        if not ctx.has_suite(suite):
            continue
        frame, why = ctx.labels_for("attributes", suite)
        if frame is None:
            ctx.not_scored(suite, why)
            continue
        _score_suite(ctx, suite, frame)
        if ctx.status[suite].status != "scored":
            ctx.not_scored(suite, "no usable rows in labels/attributes.parquet")


def check_gep_config(config: dict) -> None:
    names = [str(g.get("name")) for g in config.get("genders") or [] if isinstance(g, dict)]
    if len(names) < 2:
        raise ValueError(f"a GEP config needs at least two groups under `genders` to compare, got {names}")
    if len(set(names)) != len(names):
        raise ValueError(f"GEP group names must be distinct, got {names}")


def gep_figures(read_detail, scores, out_dir) -> list[tuple[str, str]]:
    vectors = read_detail("gep_vectors")
    return plot_gep(vectors, out_dir) if vectors is not None and len(vectors) else []


GEP_LAYOUTS = {
    "neutral": ImageLayout("Prompt pairs: the same context, woman and man", ("context",), "gender", ("woman", "man"),
                           ("gender",)),
    "explicit": ImageLayout("Prompt pairs: the same attribute and context, woman and man", ("attribute", "context"),
                            "gender", ("woman", "man"), ("gender",), "{0}, {1}"),
    "occupation": ImageLayout("The unspecified, female and male occupation prompt (same sample)", ("sample_index",),
                              "group", ("lawyer", "female lawyer", "male lawyer"), ("group",), "sample {0}"),
}


def gep_layout(rows: pd.DataFrame) -> ImageLayout | None:
    settings = rows["setting"].dropna() if "setting" in rows.columns else pd.Series([], dtype=object)
    return GEP_LAYOUTS.get(str(settings.iloc[0])) if len(settings) else None


TASK = Task(
    name="gep", family="gep", papers=("gep",), annotators={"clip_existence": classifiers}, score=score_gep,
    check_config=check_gep_config,
    description="GEP vectors and scores (GEP Eq. 1-2) for every pair of groups, from CLIP existence estimators.",
    report=TaskReport("GEP: gender presentation differences", figures=gep_figures, layout=gep_layout),
    paper_checks=checks,
    human_questions=human_questions,
    human_validation=HUMAN_VALIDATION,
    headline_checks=(("gep", "Table 3", "GEP score from Table 1"),),
)

#: everything this folder adds to the registries (the loader registers it, in folder order)
REGISTRATIONS = Registrations(papers=(GEP_PAPER,), scores=metadata.SCORES, probe_configs={"gep": probes.PROBE_CONFIG},
                              suites=probes.SUITES, evaluate_modules=metadata.EVALUATE_MODULES, tasks=(TASK,))
