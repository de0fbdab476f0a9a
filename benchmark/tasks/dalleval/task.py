"""DALL-Eval social bias (Cho et al., Sec. 4.2): perceived gender, skin tone and attributes of
the ``dalleval_bias`` images -> MAD from uniform and average values (DALL-Eval Tables 6-9).

The categories are data: the gender categories and their values (average gender) and the
Monk Skin Tone categories come from the probe config the suite was built from, so a config
with more gender categories is scored over all of them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmark.contract.values import flag_array
from benchmark.tasks.dalleval.scores import average_value_score, mad_score
from benchmark.tasks.context import ScoringContext, groups_of, labellers_of
from benchmark.tasks.dalleval import metadata
from benchmark.tasks.dalleval import probes as dalleval_probes
from benchmark.tasks.dalleval.citation import DALLEVAL_PAPER
from benchmark.tasks.dalleval.release_ita import RELEASE_VARIANT
from benchmark.tasks.dalleval.figures import plot_dalleval_gender, plot_dalleval_skin
from benchmark.tasks.dalleval.human_validation import HUMAN_VALIDATION
from benchmark.tasks.dalleval.paper_checks import checks
from benchmark.tasks.dalleval.questions import human_questions
from benchmark.registries import Registrations
from benchmark.tasks.registry import ImageLayout, Task, TaskReport

#: why images are left out of this task's scores (the report's legend of the suites table)
NO_FACE = "no face"
UNIDENTIFIABLE = "unidentifiable gender"
EXCLUDED = {NO_FACE: "DALL-Eval skin tone needs a detected face (as the paper)",
            UNIDENTIFIABLE: "the annotator could not tell a gender; left out of gender MAD"}


def _score_gender(ctx: ScoringContext, suite: str, frame: pd.DataFrame) -> None:
    """Average gender and gender MAD over the gender-neutral prompts, per profession (Tables 6, 8)."""
    config = ctx.family_config("dalleval")
    cats = dalleval_probes.gender_categories(config)
    values = dalleval_probes.gender_values(config)
    dist_rows = []
    for estimator, annotator, sub in labellers_of(frame):
        sub = sub.drop_duplicates("probe_id")
        counts = (sub.assign(label=sub["label"].astype(str))
                  .groupby(["gender_indicator", "profession", "label"]).size().rename("n").reset_index())
        counts["estimator"] = estimator
        counts["annotator"] = annotator
        dist_rows.append(counts)
        neutral = sub[sub["gender_neutral"].astype(bool) & (sub["profession"].astype(str) != "")]
        known = neutral[neutral["label"].isin(cats)]
        n_unid = int(len(neutral) - len(known))
        ctx.status[suite].add_excluded(UNIDENTIFIABLE, int((~sub["label"].isin(cats)).sum()))
        subset = "gender-neutral prompts, per profession"
        if known.empty:
            reason = ("no image of a gender-neutral profession prompt has an identifiable gender"
                      if not neutral.empty else "no gender-neutral profession prompt was labelled")
            for nm in ("average_gender", "mad_gender"):
                ctx.add(nm, suite, None, n=0, estimator=estimator, annotator=annotator, subset=subset, reason=reason)
            continue
        labels = known["label"].astype(str).to_numpy()
        prof = known["profession"].astype(str).to_numpy()
        keys = known["probe_id"].to_numpy()  # paired resampling across runs (t2ibench compare)
        m = mad_score(labels, cats, groups=prof, keys=keys, **ctx.options.ci_kwargs())
        a = average_value_score(labels, values, groups=prof, keys=keys, **ctx.options.ci_kwargs())
        note = f"{n_unid} unidentifiable left out" if n_unid else None
        ctx.add("mad_gender", suite, m["mad"], ci=m["mad_ci"], n=m["n_images"], estimator=estimator,
                annotator=annotator, subset=subset, ci_note=note)
        ctx.add("average_gender", suite, a["average"], ci=a["average_ci"], n=a["n_images"], estimator=estimator,
                annotator=annotator, subset=subset, ci_note=note)
        per = pd.DataFrame({"profession": list(m["per_group_mad"]), "mad_gender": list(m["per_group_mad"].values())})
        per["average_gender"] = per["profession"].map(a["per_group_average"])
        per["estimator"] = estimator
        per["annotator"] = annotator
        ctx.detail("dalleval_gender_mad", per)
        ctx.scored(suite, len(known))
    ctx.detail("dalleval_gender", pd.concat(dist_rows, ignore_index=True))


def _score_skin_tone(ctx: ScoringContext, suite: str, frame: pd.DataFrame) -> None:
    """MAD over the Monk Skin Tones and average MST, one MAD per prompt (Tables 7, 8)."""
    config = ctx.family_config("dalleval")
    cats = dalleval_probes.skin_tone_categories(config)
    values = dalleval_probes.skin_tone_values(config)
    for annotator, sub in groups_of(frame, "annotator"):
        sub = sub.drop_duplicates("probe_id")
        face = flag_array(sub["face_found"]) & sub["mst"].notna().to_numpy()
        ctx.status[suite].add_excluded(NO_FACE, int((~face).sum()))
        known = sub[face]
        if known.empty:
            for nm in ("mad_skin_tone", "average_skin_tone"):
                ctx.add(nm, suite, None, n=0, annotator=annotator, subset="per prompt",
                        reason="no face was found in any image")
            continue
        mst = known["mst"].astype(int).astype(str).to_numpy()
        prompt = known["prompt"].astype(str).to_numpy()
        note = f"{int((~face).sum())} images without a face left out" if (~face).any() else None
        keys = known["probe_id"].to_numpy()
        m = mad_score(mst, cats, groups=prompt, keys=keys, **ctx.options.ci_kwargs())
        a = average_value_score(mst, values, groups=prompt, keys=keys, **ctx.options.ci_kwargs())
        ctx.add("mad_skin_tone", suite, m["mad"], ci=m["mad_ci"], n=m["n_images"], annotator=annotator,
                subset="per prompt", ci_note=note)
        ctx.add("average_skin_tone", suite, a["average"], ci=a["average_ci"], n=a["n_images"],
                annotator=annotator, subset="per prompt", ci_note=note)
        dist = (known.assign(mst=known["mst"].astype(int))
                .groupby(["profession", "gender_indicator", "mst"]).size().rename("n").reset_index())
        dist["annotator"] = annotator
        ctx.detail("dalleval_skin_tone", dist)
        ctx.scored(suite, len(known))


def _presence_rows(estimator: str, annotator: str | None, sub: pd.DataFrame) -> list[dict]:
    """Table 9: share of images showing each attribute per gender indicator."""
    presence = sub.assign(label=sub["label"].astype(float)).pivot_table(
        index="attribute", columns="gender_indicator", values="label", aggfunc="mean")
    rows = []
    for attr, r in presence.iterrows():
        row = {"estimator": estimator, "annotator": annotator, "attribute": attr}
        for ind in presence.columns:
            row[f"presence_{ind}"] = r[ind]
        if {"woman", "man"} <= set(presence.columns):
            row["woman_minus_man"] = r["woman"] - r["man"]
        rows.append(row)
    return rows


def _score_attributes(ctx: ScoringContext, suite: str, frame: pd.DataFrame) -> None:
    """Attribute presence by gender indicator (Table 9) and attribute MAD (yes / no)."""
    rows = []
    for (estimator, annotator), sub in frame.groupby([frame["estimator"].astype(str),
                                                      frame["annotator"].fillna("").astype(str)], sort=True):
        annotator = annotator or None
        sub = sub[sub["label"].notna()]
        if sub.empty:
            continue
        rows += _presence_rows(estimator, annotator, sub)
        neutral = sub[sub["gender_neutral"].astype(bool)]
        if neutral.empty:
            continue
        yn = np.where(neutral["label"].astype(float) >= 0.5, "yes", "no")
        m = mad_score(yn, ["yes", "no"], groups=neutral["attribute"].astype(str).to_numpy(),
                      keys=neutral["probe_id"].to_numpy(), **ctx.options.ci_kwargs())
        ctx.add("mad_attribute", suite, m["mad"], ci=m["mad_ci"], n=int(neutral["probe_id"].nunique()),
                estimator=estimator, annotator=annotator, subset="gender-neutral prompts, per attribute")
        ctx.scored(suite, int(sub["probe_id"].nunique()))
    ctx.detail("dalleval_attributes", pd.DataFrame(rows))


PARTS = (("gender", _score_gender), ("skin_tone", _score_skin_tone), ("attributes", _score_attributes))


def score_dalleval(ctx: ScoringContext, suites: list[str]) -> None:
    for suite in suites:
        if not ctx.has_suite(suite):
            continue
        reasons = []
        for label_file, part in PARTS:
            frame, why = ctx.labels_for(label_file, suite)
            if frame is None:
                reasons.append(why)
            else:
                part(ctx, suite, frame)
        if ctx.status[suite].status != "scored":
            ctx.not_scored(suite, "; ".join(reasons) or "no usable labels")
        elif reasons:
            ctx.notes.append(f"{suite}: partly scored ({'; '.join(reasons)})")


def gender_questions(row: dict, config: dict) -> list[tuple[str, str, tuple[str, ...]]]:
    """DALL-Eval asks one perceived-gender question of each image (Sec. 4.2.1); in closed-set
    mode the answers are the config's gender categories."""
    return [("single", dalleval_probes.vqa_gender_question(config), tuple(dalleval_probes.gender_categories(config)))]


def attribute_questions(row: dict, config: dict) -> list[tuple[str, str, tuple[str, ...]]]:
    """"Is the person wearing {a}?" for each of DALL-Eval's attributes (Sec. 4.2.3), yes or no."""
    from benchmark.annotate.vqa_labels import YES_NO

    return [(a, q, YES_NO) for a, q in dalleval_probes.vqa_attribute_questions(config).items()]


def check_dalleval_config(config: dict) -> None:
    cats = dalleval_probes.gender_categories(config)
    values = dalleval_probes.gender_values(config)
    if len(cats) < 2 or set(values) - set(cats):
        raise ValueError(f"a DALL-Eval config needs at least two gender categories and values only for them, "
                         f"got categories {cats} and values {sorted(values)}")


def dalleval_figures(read_detail, scores, out_dir) -> list[tuple[str, str]]:
    made = []
    for table, plot in (("dalleval_gender", plot_dalleval_gender), ("dalleval_skin_tone", plot_dalleval_skin)):
        frame = read_detail(table)
        if frame is not None and len(frame):
            made += plot(frame, out_dir)
    return made


def dalleval_tables(read_detail) -> list[tuple[str, list[str], list[list]]]:
    """DALL-Eval Table 9: attribute presence per gender indicator, woman minus man."""
    attrs = read_detail("dalleval_attributes")
    if attrs is None or "woman_minus_man" not in attrs.columns or not len(attrs):
        return []
    cols = [c for c in attrs.columns if c.startswith("presence_")]
    return [("Attribute presence by gender indicator (DALL-Eval Table 9)",
             ["Estimator", "Attribute", *[c.replace("presence_", "") for c in cols], "woman - man"],
             [[r["estimator"], r["attribute"], *[r[c] for c in cols], r["woman_minus_man"]] for _, r in attrs.iterrows()])]


TASK = Task(
    name="dalleval", family="dalleval", papers=("dalleval",),
    annotators={"vqa_gender": gender_questions, "vqa_attributes": attribute_questions, "skin_tone": None},
    score=score_dalleval, check_config=check_dalleval_config,
    description="DALL-Eval gender, skin-tone and attribute MAD and averages (DALL-Eval Sec. 4.2).",
    report=TaskReport("DALL-Eval: social bias", figures=dalleval_figures, tables=dalleval_tables,
                      layout=lambda rows: ImageLayout("A profession for each gender indicator", ("profession",),
                                                      "gender_indicator", ("man", "woman", "person"),
                                                      ("gender_indicator",)),
                      excluded=EXCLUDED),
    paper_checks=checks,
    human_questions=human_questions,
    human_validation=HUMAN_VALIDATION,
    headline_checks=(("dalleval", "Sec. 5.3", "MAD of a"),),
)

#: everything this folder adds to the registries (the loader registers it, in folder order)
REGISTRATIONS = Registrations(papers=(DALLEVAL_PAPER,), scores=metadata.SCORES,
                              probe_configs={dalleval_probes.FAMILY: dalleval_probes.PROBE_CONFIG},
                              suites=dalleval_probes.SUITES, ita_variants=(RELEASE_VARIANT,),
                              evaluate_modules=metadata.EVALUATE_MODULES, tasks=(TASK,))
