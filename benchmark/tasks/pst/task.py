"""Paired Stereotype Test (Wan & Chang): perceived gender of each person -> overall and micro
Stereotype Test Scores (PST Eq. 1-2), single and paired, occupations and power roles, and the
fairness intervention (PST Tables 5-6).

Which score a suite gets comes from its rows: ``setting`` (single / paired / intervention)
and the aspect (``identity_kind`` for single persons, ``bias_aspect`` for pairs). STS is
binary by definition (a perceived gender matches the stereotype or contradicts it), so a
config whose stereotype groups are not exactly male / female is refused in one line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmark.tasks.pst.scores import individuals, most_biased_identities, sts
from benchmark.tasks.context import ScoringContext, labellers_of
from benchmark.tasks.pst import metadata
from benchmark.tasks.pst import probes as pst_probes
from benchmark.tasks.pst.citation import PST_PAPER
from benchmark.tasks.pst.figures import plot_micro_sts
from benchmark.tasks.pst.human_validation import HUMAN_VALIDATION
from benchmark.tasks.pst.paper_checks import checks
from benchmark.tasks.pst.questions import human_questions
from benchmark.registries import Registrations
from benchmark.tasks.registry import ImageLayout, Task, TaskReport

N_MOST_BIASED = 5  # PST Sec. 5: the pairs of the 5 most biased occupations per gender
SETTING_ORDER = ("single", "paired", "intervention")  # the intervention needs the paired micro STS first
SELECTED = f"occupation: pairs of the {N_MOST_BIASED} most biased occupations per gender"
#: why images are left out of this task's scores (the report's legend of the suites table)
UNIDENTIFIABLE = "unidentifiable person"
EXCLUDED = {UNIDENTIFIABLE: "the annotator could not tell a gender; left out of STS (the default rule, recorded "
                            "in results.json as scoring.pst_unidentifiable)"}


def _persons(frame: pd.DataFrame, suite_rows: pd.DataFrame) -> pd.DataFrame:
    """One row per person (probe_id, position, identity, stereotyped_gender, perceived) for one annotator."""
    people = individuals(suite_rows.reset_index(drop=True))
    lab = frame[["probe_id", "person", "label"]].drop_duplicates(["probe_id", "person"])
    lab = lab.rename(columns={"person": "position", "label": "perceived"})
    return people.merge(lab, on=["probe_id", "position"], how="inner")


def _sts_entry(ctx: ScoringContext, name: str, suite: str, persons: pd.DataFrame, who: tuple,
               subset: str | None, detail_kind: str | None) -> dict | None:
    """One STS score entry (and, with ``detail_kind``, its micro STS rows in pst_micro_sts);
    ``who`` is the labels' (estimator, annotator)."""
    opts = ctx.options
    estimator, annotator = who
    n_img = int(persons["probe_id"].nunique())
    try:
        out = sts(persons["perceived"].astype(str).to_numpy(), persons["stereotyped_gender"].astype(str).to_numpy(),
                  persons["identity"].astype(str).to_numpy(),
                  unidentifiable=opts.of("pst")["unidentifiable"], keys=persons["probe_id"].to_numpy(),
                  **opts.ci_kwargs())
    except ValueError as exc:
        ctx.add(name, suite, None, n=n_img, estimator=estimator, annotator=annotator, subset=subset, reason=str(exc))
        return None
    note = (f"{out['n_unidentifiable']} unidentifiable persons, policy {out['unidentifiable']!r}"
            if out["n_unidentifiable"] else None)
    ctx.add(name, suite, out["sts"], ci=out["sts_ci"], n=n_img, estimator=estimator, annotator=annotator,
            subset=subset, ci_note=note)
    if detail_kind is not None:
        micro = pd.DataFrame({"identity": list(out["micro_sts"]), "micro_sts": list(out["micro_sts"].values())})
        micro["stereotyped_gender"] = micro["identity"].map(out["stereotyped_gender"])
        micro["percent_feminine"] = micro["identity"].map(out["percent_feminine"])
        for c in ("masculine", "feminine", "unidentifiable"):
            micro[f"n_{c}"] = micro["identity"].map(lambda i, c=c: out["counts"][i][c])
        micro.insert(0, "score", name)
        micro.insert(0, "subset", detail_kind)
        micro.insert(0, "suite", suite)
        micro["estimator"] = estimator
        micro["annotator"] = annotator
        ctx.detail("pst_micro_sts", micro)
    return out


def _most_biased_pairs(persons: pd.DataFrame, rows: pd.DataFrame, top: dict) -> pd.Series:
    male_id = rows.set_index("probe_id")["male_identity"]
    female_id = rows.set_index("probe_id")["female_identity"]
    return (persons["probe_id"].map(male_id).isin(top["masculine"])
            & persons["probe_id"].map(female_id).isin(top["feminine"]))


def _score_intervention(ctx: ScoringContext, suite: str, persons: pd.DataFrame, rows: pd.DataFrame,
                        who: tuple, paired: dict) -> None:
    """PST Table 6: STS of the intervened prompts; for occupations over the pairs of the most
    biased occupations (from the paired micro STS), beside the original prompts' STS on those pairs."""
    persons = persons.assign(aspect=persons["probe_id"].map(rows.set_index("probe_id")["bias_aspect"]))
    for asp in ("occupation", "power"):
        part = persons[persons["aspect"] == asp]
        if part.empty:
            continue
        subset = f"{asp}: all pairs"
        if asp == "occupation":
            ref = paired.get(who)
            if ref is None:
                subset = ("occupation: all pairs (pst_paired_occupation not scored with this annotator, so the most "
                          "biased pairs could not be chosen)")
            else:
                micro, ref_suite, ref_persons, ref_rows = ref
                top = most_biased_identities(micro["micro_sts"], micro["stereotyped_gender"], N_MOST_BIASED)
                part, subset = part[_most_biased_pairs(part, rows, top)], SELECTED
                if part.empty:
                    ctx.add("sts_intervention", suite, None, n=0, estimator=who[0], annotator=who[1], subset=subset,
                            reason="no labelled image of the most biased pairs")
                    continue
                base = ref_persons[_most_biased_pairs(ref_persons, ref_rows, top)]
                _sts_entry(ctx, "sts_intervention_baseline", ref_suite, base, who, SELECTED, None)
        _sts_entry(ctx, "sts_intervention", suite, part, who, subset, asp)


def _setting(ctx: ScoringContext, suite: str) -> str:
    """single / paired / intervention, from the suite's rows (``setting``)."""
    rows = ctx.manifest[ctx.manifest["suite"] == suite]
    values = rows["setting"].dropna().astype(str) if "setting" in rows.columns else pd.Series([], dtype=str)
    setting = values.iloc[0] if len(values) else ("single" if "identity" in rows.columns and
                                                  rows["identity"].notna().any() else "paired")
    if setting not in SETTING_ORDER:
        raise ValueError(f"{suite}: unknown PST setting {setting!r}; expected one of {SETTING_ORDER}")
    return setting


def _score_suite(ctx: ScoringContext, suite: str, frame: pd.DataFrame, paired: dict) -> None:
    # Columns of other suites are all-null here (the manifest holds every suite); drop them so
    # that single-person rows are not mistaken for paired ones.
    rows = ctx.suite_images(suite).dropna(axis=1, how="all")
    setting = _setting(ctx, suite)
    for estimator, annotator, sub in labellers_of(frame):
        who = (estimator, annotator)
        persons = _persons(sub, rows)
        ctx.status[suite].add_excluded(UNIDENTIFIABLE, int((persons["perceived"] == "unidentifiable").sum()))
        if persons.empty:
            continue
        if setting == "single":
            kinds = persons["probe_id"].map(rows.set_index("probe_id")["identity_kind"])
            for kind in ("occupation", "power"):
                part = persons[kinds == kind]
                if not part.empty:
                    _sts_entry(ctx, f"sts_{kind}_single", suite, part, who, kind, kind)
        elif setting == "paired":
            aspect = str(rows["bias_aspect"].iloc[0])
            out = _sts_entry(ctx, f"sts_{aspect}_paired", suite, persons, who, None, aspect)
            if out is not None and aspect == "occupation":
                paired[who] = (out, suite, persons, rows)
        else:
            _score_intervention(ctx, suite, persons, rows, who, paired)
        ctx.scored(suite, int(persons["probe_id"].nunique()))


def score_pst(ctx: ScoringContext, suites: list[str]) -> None:
    paired: dict = {}  # annotator -> the occupation pairs' micro STS, suite, persons, rows
    present = [s for s in suites if ctx.has_suite(s)]
    for suite in sorted(present, key=lambda s: SETTING_ORDER.index(_setting(ctx, s))):
        frame, why = ctx.labels_for("gender", suite)
        if frame is None:
            ctx.not_scored(suite, why)
            continue
        _score_suite(ctx, suite, frame, paired)
        if ctx.status[suite].status != "scored":
            ctx.not_scored(suite, "no usable rows in labels/gender.parquet")


#: the answers closed-set VQA scores for PST's "What gender is the {id} ...?" (config ``vqa_answers``)
DEFAULT_VQA_ANSWERS = ("male", "female")


def gender_questions(row: dict, config: dict) -> list[tuple[str, str, tuple[str, ...]]]:
    """PST's questions (Tables 10-11): the row's ``question`` for one person, its two
    ``questions`` (left, right) for a pair; closed-set answers from the config (male, female)."""
    answers = tuple(config.get("vqa_answers") or DEFAULT_VQA_ANSWERS)
    qs = row.get("questions")
    if isinstance(qs, (list, tuple, np.ndarray)):  # a paired row (other rows hold None / NaN here)
        qs = list(qs)
        if len(qs) != 2 or not all(isinstance(q, str) and q for q in qs):
            raise ValueError(f"probe {row['probe_id']!r} must have two questions (left, right), got {qs!r}")
        return [("left", qs[0], answers), ("right", qs[1], answers)]
    q = row.get("question")
    if not isinstance(q, str) or not q:
        raise ValueError(f"probe {row['probe_id']!r} has no question")
    return [("single", q, answers)]


def check_pst_config(config: dict) -> None:
    occ = config.get("occupations")
    if isinstance(occ, dict) and set(occ) != set(pst_probes.GENDERS):
        raise ValueError(f"PST's Stereotype Test Score is binary by definition (PST Eq. 1: each perceived gender "
                         f"matches the stereotype or not): `occupations` needs exactly the groups "
                         f"{list(pst_probes.GENDERS)}, got {list(occ)}")
    pst_probes.occupations(config)


def pst_figures(read_detail, scores, out_dir) -> list[tuple[str, str]]:
    micro = read_detail("pst_micro_sts")
    return plot_micro_sts(micro, out_dir) if micro is not None and len(micro) else []


SINGLE_LAYOUT = ImageLayout("Identities by stereotyped gender", ("stereotyped_gender",), "identity", (), ("identity",),
                            "{0}-stereotyped")
PAIRED_LAYOUT = ImageLayout("The same pair in both orders (left | right as prompted)",
                            ("male_identity", "female_identity"), "order", ("male_first", "female_first"),
                            ("identity_left", "identity_right"), "{0} & {1}")


def pst_layout(rows: pd.DataFrame) -> ImageLayout:
    single = "identity" in rows.columns and rows["identity"].notna().any()
    return SINGLE_LAYOUT if single else PAIRED_LAYOUT


TASK = Task(
    name="pst", family="pst", papers=("pst",), annotators={"vqa_gender": gender_questions}, score=score_pst,
    check_config=check_pst_config,
    description="Paired Stereotype Test: overall and micro STS (PST Eq. 1-2), single, paired and intervention.",
    report=TaskReport("PST: Paired Stereotype Test", figures=pst_figures, layout=pst_layout, excluded=EXCLUDED),
    paper_checks=checks,
    human_questions=human_questions,
    human_validation=HUMAN_VALIDATION,
    options={"unidentifiable": "exclude"},  # benchmark.tasks.pst.scores: exclude, zero or anti_stereotype
    headline_checks=(("pst", "Table 2", "STS (single) from Table 14"), ("pst", "Table 2", "STS (paired) from Table 14")),
)

#: everything this folder adds to the registries (the loader registers it, in folder order)
REGISTRATIONS = Registrations(papers=(PST_PAPER,), scores=metadata.SCORES,
                              probe_configs={"pst": pst_probes.PROBE_CONFIG}, suites=pst_probes.SUITES,
                              evaluate_modules=metadata.EVALUATE_MODULES, tasks=(TASK,))
