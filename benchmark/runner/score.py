"""The scoring stage: RUN_DIR's manifest and label files -> scores, results.json, detail tables.

``score_run(run_dir)`` reads only files (``run_config.json``, ``manifest.parquet``,
``labels/*.parquet``, optionally ``timings.json``), so it can be re-run alone
(``t2ibench score RUN_DIR``). It writes

* ``RUN_DIR/results.json`` (:mod:`benchmark.results`, schema in
  ``benchmark/results_schema.json``);
* ``RUN_DIR/scores/*.parquet``: the per-item tables behind the scores (GEP vectors per
  attribute, micro STS per identity, gender / skin-tone / attribute distributions per
  profession, MCAS per target and category);
* with ``report=True``, ``RUN_DIR/report/`` (:mod:`benchmark.runner.report`; the pipeline
  calls ``write_report`` itself).

Every number comes from the score functions of :mod:`benchmark.scores`; this module only
joins labels to probe rows and chooses what each paper aggregates over (see
``docs/results.md``). A suite whose labels are missing is reported "not scored", never
an error; images flagged NSFW are left out and counted.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmark.probes import dalleval as dalleval_probes
from benchmark.probes.paintskills import SUITE_OF as PAINTSKILLS_SUITE_OF
from benchmark import results as res
from benchmark.scores.bootstrap import bootstrap_ci
from benchmark.scores.diffusion_bias import COMPONENTS, internal_bias_table, summarise
from benchmark.scores.gep import gep, gep_unbounded
from benchmark.scores.mad import average_value_score, mad_score
from benchmark.scores.mcas import _overall, _Prepared, mcas_score
from benchmark.scores.sts import individuals, most_biased_identities, sts

LABEL_FILES = {
    "gender": "labels/gender.parquet",
    "attributes": "labels/attributes.parquet",
    "skin_tone": "labels/skin_tone.parquet",
    "embeddings": "labels/embeddings.parquet",
    "detections": "labels/detections.parquet",
}
SCORES_DIR = "scores"
GEP_SUITES = ("gep_neutral", "gep_explicit", "gep_occupation")
PST_SUITES = ("pst_single", "pst_paired_occupation", "pst_paired_power", "pst_intervention")
MCAS_SUITES = ("mcas_attributes", "mcas_targets")
PAINTSKILLS_SUITES = {suite: skill for skill, suite in PAINTSKILLS_SUITE_OF.items()}  # suite -> skill
# Estimators whose `score` is an existence probability (GEP Eq. 1); C / CC are raw cosines
# (gep_unbounded); VQA and human answers are read from `label`.
PROBABILITY_ESTIMATORS = ("CLS",)
SIMILARITY_ESTIMATORS = ("C", "CC")
# Which suite, and which part of it, feeds each STS key.
STS_KEYS = {("pst_single", "occupation"): "sts_occupation_single", ("pst_single", "power"): "sts_power_single",
            ("pst_paired_occupation", None): "sts_occupation_paired", ("pst_paired_power", None): "sts_power_paired"}
N_MOST_BIASED = 5


class ScoreStageError(ValueError):
    """RUN_DIR cannot be scored at all (no manifest); the message is one line."""


@dataclass
class ScoringOptions:
    n_resamples: int = 1000
    confidence_level: float = 0.95
    random_state: int = 0
    unidentifiable: str = "exclude"  # PST policy for "unidentifiable" persons (benchmark.scores.sts)

    def ci_kwargs(self) -> dict:
        return {"n_resamples": self.n_resamples, "confidence_level": self.confidence_level,
                "random_state": self.random_state}


@dataclass
class SuiteStatus:
    name: str
    n_images: int = 0
    n_scored_images: int = 0
    status: str = "not scored"
    reason: str | None = None
    excluded: dict = field(default_factory=dict)

    def add_excluded(self, kind: str, n: int) -> None:
        if n:
            self.excluded[kind] = self.excluded.get(kind, 0) + int(n)

    def to_dict(self) -> dict:
        return {"name": self.name, "status": self.status, "reason": self.reason, "n_images": self.n_images,
                "n_scored_images": self.n_scored_images,
                "excluded": {k: int(v) for k, v in sorted(self.excluded.items())}}


class _Context:
    """What the suite scorers share: the run's images, label files, and the outputs being built."""

    def __init__(self, run_dir: Path, options: ScoringOptions):
        self.run_dir = run_dir
        self.options = options
        self.config = _read_json(run_dir / "run_config.json") or {}
        manifest_path = run_dir / "manifest.parquet"
        if not manifest_path.is_file():
            raise ScoreStageError(f"{manifest_path} not found: run the generation stage first "
                                  f"(t2ibench run) or give a run folder")
        manifest = pd.read_parquet(manifest_path)
        for col in ("probe_id", "suite"):
            if col not in manifest.columns:
                raise ScoreStageError(f"{manifest_path} has no {col!r} column: not a run manifest")
        if manifest["probe_id"].duplicated().any():
            dup = manifest.loc[manifest["probe_id"].duplicated(), "probe_id"].iloc[0]
            raise ScoreStageError(f"{manifest_path} lists probe {dup!r} twice")
        self.manifest = manifest
        nsfw = manifest["nsfw"].map(lambda v: v is True or v == 1 or (isinstance(v, np.bool_) and bool(v))) \
            if "nsfw" in manifest.columns else pd.Series(False, index=manifest.index)
        self.nsfw = nsfw.astype(bool)
        self.images = manifest[~self.nsfw].set_index("probe_id", drop=False)
        suites = list(dict.fromkeys(list(self.config.get("suites") or []) + list(manifest["suite"].unique())))
        self.status: dict[str, SuiteStatus] = {s: SuiteStatus(s) for s in suites}
        for s, st in self.status.items():
            in_suite = manifest["suite"] == s
            st.n_images = int(in_suite.sum())
            st.add_excluded("nsfw", int((in_suite & self.nsfw).sum()))
            if st.n_images == 0:
                st.reason = "no images in manifest.parquet"
        self.labels: dict[str, pd.DataFrame | None] = {}
        self.scores: list[dict] = []
        self.details: dict[str, pd.DataFrame] = {}
        self.notes: list[str] = []
        self.annotators: list[dict] = []

    # -- label files
    def label(self, kind: str) -> pd.DataFrame | None:
        if kind not in self.labels:
            path = self.run_dir / LABEL_FILES[kind]
            self.labels[kind] = pd.read_parquet(path) if path.is_file() else None
        return self.labels[kind]

    def missing(self, kind: str) -> str:
        return f"missing {LABEL_FILES[kind]}"

    def suite_images(self, suite: str) -> pd.DataFrame:
        return self.images[self.images["suite"] == suite]

    def has_suite(self, suite: str) -> bool:
        return suite in self.status and self.status[suite].n_images > 0

    def labels_for(self, kind: str, suite: str) -> tuple[pd.DataFrame | None, str | None]:
        """Label rows of ``kind`` for the kept (non-NSFW) images of ``suite``, joined with their
        probe fields; or (None, reason)."""
        df = self.label(kind)
        if df is None:
            return None, self.missing(kind)
        imgs = self.suite_images(suite)
        if imgs.empty:
            return None, "every image was excluded (nsfw)"
        rows = df[df["probe_id"].isin(imgs.index)]
        if rows.empty:
            return None, f"no rows for this suite in {LABEL_FILES[kind]}"
        probe_cols = [c for c in imgs.columns if c not in rows.columns or c == "probe_id"]
        joined = rows.merge(imgs[probe_cols].reset_index(drop=True), on="probe_id", how="left")
        self.status[suite].add_excluded(f"unlabelled ({kind})", int((~imgs.index.isin(rows["probe_id"])).sum()))
        return joined, None

    # -- outputs
    def add(self, name: str, suite: str, value: Any, **kw) -> dict | None:
        if not res.has_metadata(name):
            where = ", ".join(str(x) for x in (suite, kw.get("estimator"), kw.get("subset")) if x)
            self.notes.append(f"{name} ({where}) = "
                              f"{_fmt(value)} is in the detail tables only: SCORE_METADATA has no entry {name!r}")
            return None
        entry = res.score_entry(name, suite, value, **kw)
        self.scores.append(entry)
        return entry

    def scored(self, suite: str, n_images: int) -> None:
        st = self.status[suite]
        st.status, st.reason = "scored", None
        st.n_scored_images = max(st.n_scored_images, int(n_images))

    def not_scored(self, suite: str, reason: str) -> None:
        st = self.status.get(suite)
        if st is not None and st.status != "scored":
            st.reason = reason

    def detail(self, name: str, frame: pd.DataFrame) -> None:
        if frame is None or frame.empty:
            return
        prev = self.details.get(name)
        self.details[name] = frame if prev is None else pd.concat([prev, frame], ignore_index=True)

    def annotator(self, file_kind: str, frame: pd.DataFrame, by: list[str]) -> None:
        cols = [c for c in by if c in frame.columns]
        if not cols:
            return
        for keys, sub in frame.groupby(cols, dropna=False, sort=True):
            keys = keys if isinstance(keys, tuple) else (keys,)
            named = {c: (None if pd.isna(k) else str(k)) for c, k in zip(cols, keys)}
            entry = {"file": LABEL_FILES[file_kind], **named, "n_rows": int(len(sub))}
            self.annotators.append(entry)


def _read_json(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ScoreStageError(f"{path} is not valid JSON ({exc})") from None


def _fmt(value: Any) -> str:
    try:
        return f"{float(value):.4g}"
    except (TypeError, ValueError):
        return "undefined"


def _is_listed(value: Any, listed: Any) -> bool:
    if listed is None or (isinstance(listed, float) and np.isnan(listed)):
        return True  # no list recorded: keep the row
    return str(value) in {str(v) for v in list(listed)}


def _groups(frame: pd.DataFrame, col: str) -> list[tuple[str | None, pd.DataFrame]]:
    """Split by annotator (or estimator) keeping None as a group of its own."""
    if col not in frame.columns:
        return [(None, frame)]
    out = []
    for key, sub in frame.groupby(frame[col].fillna("").astype(str), sort=True):
        out.append((key or None, sub))
    return out


# --------------------------------------------------------------------------- GEP (seed 000)


def _gep_pairs(suite: str, frame: pd.DataFrame) -> list[tuple[str, str, str, str | None]]:
    """(group column, group_a, group_b, subset label) pairs compared in ``suite``."""
    if suite in ("gep_neutral", "gep_explicit"):
        return [("gender", "woman", "man", None)]
    # Occupation case study (Sec. 7, Table 10): each gendered prompt against the unspecified one.
    base = frame.loc[frame["gender"] == "unspecified", "group"]
    if base.empty:
        return []
    b = str(base.iloc[0])
    return [("group", str(g), b, f"{g} vs {b}") for g in dict.fromkeys(frame.loc[frame["gender"] != "unspecified",
                                                                                   "group"])]


def score_gep(ctx: _Context) -> None:
    opts = ctx.options
    for suite in GEP_SUITES:
        if not ctx.has_suite(suite):
            continue
        frame, why = ctx.labels_for("attributes", suite)
        if frame is None:
            ctx.not_scored(suite, why)
            continue
        if "annotated_attributes" in frame.columns:
            # Only the attributes the suite asks about (explicit: the prompt's own attribute).
            asked = frame.apply(lambda r: _is_listed(r["attribute"], r["annotated_attributes"]), axis=1)
            frame = frame[asked.astype(bool)]
        name = {"gep_neutral": "gep_score_neutral", "gep_explicit": "gep_score_explicit",
                "gep_occupation": "gep_score_occupation"}[suite]
        vectors = []
        for (estimator, annotator), sub in frame.groupby([frame["estimator"].astype(str),
                                                          frame["annotator"].fillna("").astype(str)], sort=True):
            annotator = annotator or None
            column = "score" if estimator in PROBABILITY_ESTIMATORS + SIMILARITY_ESTIMATORS else "label"
            sub = sub[sub[column].notna()]
            if sub.empty:
                continue
            fn = gep_unbounded if estimator in SIMILARITY_ESTIMATORS else gep
            for group_col, ga, gb, subset in _gep_pairs(suite, sub):
                pair = sub[sub[group_col].isin([ga, gb])]
                # An attribute needs rows of both groups (a --limit can leave one out).
                both = pair.groupby("attribute")[group_col].nunique()
                dropped = sorted(both[both < 2].index)
                pair = pair[pair["attribute"].isin(both[both == 2].index)]
                if dropped:
                    ctx.notes.append(f"{suite} ({estimator}{', ' + subset if subset else ''}): attributes "
                                     f"{dropped} left out of GEP, labelled for one group only")
                n_img = int(pair["probe_id"].nunique())
                if pair.empty:
                    ctx.add(name, suite, None, n=0, estimator=estimator, annotator=annotator, subset=subset,
                            reason=f"no attribute is labelled for both {ga!r} and {gb!r}")
                    continue
                out = fn(pair[column].astype(float).to_numpy(), pair[group_col].astype(str).to_numpy(),
                         pair["attribute"].astype(str).to_numpy(), group_a=ga, group_b=gb,
                         image_ids=pair["probe_id"].to_numpy(), **opts.ci_kwargs())
                ci_note = None
                if estimator in SIMILARITY_ESTIMATORS:
                    ci_note = ("GEP from raw CLIP cosines (C / CC): its scale differs from label frequencies; "
                               "compare models by rank under one estimator")
                ctx.add(name, suite, out["gep_score"], ci=out["gep_score_ci"], n=n_img, estimator=estimator,
                        annotator=annotator, subset=subset, ci_note=ci_note)
                for attr, v in out["gep_vector"].items():
                    vectors.append({
                        "suite": suite, "estimator": estimator, "annotator": annotator, "group_a": ga, "group_b": gb,
                        "attribute": attr, "difference": v, "frequency_a": out["frequencies"][ga][attr],
                        "frequency_b": out["frequencies"][gb][attr], "n_a": out["counts"][ga][attr],
                        "n_b": out["counts"][gb][attr], "gep_score": out["gep_score"]})
                ctx.scored(suite, int(sub["probe_id"].nunique()))
        ctx.detail("gep_vectors", pd.DataFrame(vectors))
        if ctx.status[suite].status != "scored":
            ctx.not_scored(suite, "no usable rows in labels/attributes.parquet")


# --------------------------------------------------------------------------- DALL-Eval (seed 001)


def score_dalleval(ctx: _Context) -> None:
    suite = "dalleval_bias"
    if not ctx.has_suite(suite):
        return
    opts = ctx.options
    reasons = []
    # ---- perceived gender: average gender and gender MAD over the "A person" prompts (Tables 6, 8)
    frame, why = ctx.labels_for("gender", suite)
    if frame is None:
        reasons.append(why)
    else:
        cats = dalleval_probes.gender_categories()
        dist_rows = []
        for annotator, sub in _groups(frame, "annotator"):
            sub = sub.drop_duplicates("probe_id")
            counts = (sub.assign(label=sub["label"].astype(str))
                      .groupby(["gender_indicator", "profession", "label"]).size().rename("n").reset_index())
            counts["annotator"] = annotator
            dist_rows.append(counts)
            neutral = sub[sub["gender_neutral"].astype(bool) & (sub["profession"].astype(str) != "")]
            known = neutral[neutral["label"].isin(cats)]
            n_unid = int(len(neutral) - len(known))
            ctx.status[suite].add_excluded("unidentifiable gender", int((~sub["label"].isin(cats)).sum()))
            subset = "gender-neutral prompts, per profession"
            if known.empty:
                reason = ("no image of a gender-neutral profession prompt has an identifiable gender"
                          if not neutral.empty else "no gender-neutral profession prompt was labelled")
                for nm in ("average_gender", "mad_gender"):
                    ctx.add(nm, suite, None, n=0, annotator=annotator, subset=subset, reason=reason)
                continue
            labels = known["label"].astype(str).to_numpy()
            prof = known["profession"].astype(str).to_numpy()
            m = mad_score(labels, cats, groups=prof, **opts.ci_kwargs())
            a = average_value_score(labels, dalleval_probes.gender_values(), groups=prof, **opts.ci_kwargs())
            note = f"{n_unid} unidentifiable left out" if n_unid else None
            ctx.add("mad_gender", suite, m["mad"], ci=m["mad_ci"], n=m["n_images"], annotator=annotator,
                    subset=subset, ci_note=note)
            ctx.add("average_gender", suite, a["average"], ci=a["average_ci"], n=a["n_images"], annotator=annotator,
                    subset=subset, ci_note=note)
            per = pd.DataFrame({"profession": list(m["per_group_mad"]),
                                "mad_gender": list(m["per_group_mad"].values())})
            per["average_gender"] = per["profession"].map(a["per_group_average"])
            per["annotator"] = annotator
            ctx.detail("dalleval_gender_mad", per)
            ctx.scored(suite, len(known))
        ctx.detail("dalleval_gender", pd.concat(dist_rows, ignore_index=True))

    # ---- skin tone: MAD over the 10 Monk Skin Tones and average MST (Tables 7, 8)
    frame, why = ctx.labels_for("skin_tone", suite)
    if frame is None:
        reasons.append(why)
    else:
        cats = dalleval_probes.skin_tone_categories()
        for annotator, sub in _groups(frame, "annotator"):
            sub = sub.drop_duplicates("probe_id")
            face = sub["face_found"].fillna(False).astype(bool) & sub["mst"].notna()
            ctx.status[suite].add_excluded("no face", int((~face).sum()))
            known = sub[face]
            if known.empty:
                for nm in ("mad_skin_tone", "average_skin_tone"):
                    ctx.add(nm, suite, None, n=0, annotator=annotator, subset="per prompt",
                            reason="no face was found in any image")
                continue
            mst = known["mst"].astype(int).astype(str).to_numpy()
            prompt = known["prompt"].astype(str).to_numpy()
            note = f"{int((~face).sum())} images without a face left out" if (~face).any() else None
            m = mad_score(mst, cats, groups=prompt, **opts.ci_kwargs())
            a = average_value_score(mst, dalleval_probes.skin_tone_values(), groups=prompt, **opts.ci_kwargs())
            ctx.add("mad_skin_tone", suite, m["mad"], ci=m["mad_ci"], n=m["n_images"], annotator=annotator,
                    subset="per prompt", ci_note=note)
            ctx.add("average_skin_tone", suite, a["average"], ci=a["average_ci"], n=a["n_images"],
                    annotator=annotator, subset="per prompt", ci_note=note)
            dist = (known.assign(mst=known["mst"].astype(int))
                    .groupby(["profession", "gender_indicator", "mst"]).size().rename("n").reset_index())
            dist["annotator"] = annotator
            ctx.detail("dalleval_skin_tone", dist)
            ctx.scored(suite, len(known))

    # ---- attribute presence by gender (Table 9) and attribute MAD
    frame, why = ctx.labels_for("attributes", suite)
    if frame is None:
        reasons.append(why)
    else:
        rows = []
        for (estimator, annotator), sub in frame.groupby([frame["estimator"].astype(str),
                                                          frame["annotator"].fillna("").astype(str)], sort=True):
            annotator = annotator or None
            sub = sub[sub["label"].notna()]
            if sub.empty:
                continue
            presence = sub.assign(label=sub["label"].astype(float)).pivot_table(
                index="attribute", columns="gender_indicator", values="label", aggfunc="mean")
            for attr, r in presence.iterrows():
                row = {"estimator": estimator, "annotator": annotator, "attribute": attr}
                for ind in presence.columns:
                    row[f"presence_{ind}"] = r[ind]
                if {"woman", "man"} <= set(presence.columns):
                    row["woman_minus_man"] = r["woman"] - r["man"]
                rows.append(row)
            neutral = sub[sub["gender_neutral"].astype(bool)]
            if neutral.empty:
                continue
            yn = np.where(neutral["label"].astype(float) >= 0.5, "yes", "no")
            m = mad_score(yn, ["yes", "no"], groups=neutral["attribute"].astype(str).to_numpy(), **opts.ci_kwargs())
            ctx.add("mad_attribute", suite, m["mad"], ci=m["mad_ci"], n=int(neutral["probe_id"].nunique()),
                    estimator=estimator, annotator=annotator, subset="gender-neutral prompts, per attribute")
            ctx.scored(suite, int(sub["probe_id"].nunique()))
        ctx.detail("dalleval_attributes", pd.DataFrame(rows))
    if ctx.status[suite].status != "scored":
        ctx.not_scored(suite, "; ".join(reasons) or "no usable labels")
    elif reasons:
        ctx.notes.append(f"{suite}: partly scored ({'; '.join(reasons)})")


# --------------------------------------------------------------------------- PST (seed 002)


def _persons(frame: pd.DataFrame, suite_rows: pd.DataFrame) -> pd.DataFrame:
    """One row per person (probe_id, position, identity, stereotyped_gender, perceived) for one annotator."""
    people = individuals(suite_rows.reset_index(drop=True))
    lab = frame[["probe_id", "person", "label"]].drop_duplicates(["probe_id", "person"])
    lab = lab.rename(columns={"person": "position", "label": "perceived"})
    return people.merge(lab, on=["probe_id", "position"], how="inner")


def _sts_entry(ctx: _Context, name: str, suite: str, persons: pd.DataFrame, annotator: str | None,
               subset: str | None, detail_kind: str) -> dict | None:
    opts = ctx.options
    n_img = int(persons["probe_id"].nunique())
    try:
        out = sts(persons["perceived"].astype(str).to_numpy(), persons["stereotyped_gender"].astype(str).to_numpy(),
                  persons["identity"].astype(str).to_numpy(), unidentifiable=opts.unidentifiable, **opts.ci_kwargs())
    except ValueError as exc:
        ctx.add(name, suite, None, n=n_img, annotator=annotator, subset=subset, reason=str(exc))
        return None
    note = (f"{out['n_unidentifiable']} unidentifiable persons, policy {out['unidentifiable']!r}"
            if out["n_unidentifiable"] else None)
    ctx.add(name, suite, out["sts"], ci=out["sts_ci"], n=n_img, annotator=annotator, subset=subset, ci_note=note)
    micro = pd.DataFrame({"identity": list(out["micro_sts"]), "micro_sts": list(out["micro_sts"].values())})
    micro["stereotyped_gender"] = micro["identity"].map(out["stereotyped_gender"])
    micro["percent_feminine"] = micro["identity"].map(out["percent_feminine"])
    for c in ("masculine", "feminine", "unidentifiable"):
        micro[f"n_{c}"] = micro["identity"].map(lambda i, c=c: out["counts"][i][c])
    micro.insert(0, "score", name)
    micro.insert(0, "subset", detail_kind)
    micro.insert(0, "suite", suite)
    micro["annotator"] = annotator
    ctx.detail("pst_micro_sts", micro)
    return out


def score_pst(ctx: _Context) -> None:
    paired_micro: dict[str | None, dict] = {}
    for suite in PST_SUITES:
        if not ctx.has_suite(suite):
            continue
        frame, why = ctx.labels_for("gender", suite)
        if frame is None:
            ctx.not_scored(suite, why)
            continue
        # Columns of other suites are all-null here (the manifest holds every suite); drop them so
        # that single-person rows are not mistaken for paired ones.
        suite_rows = ctx.suite_images(suite).dropna(axis=1, how="all")
        for annotator, sub in _groups(frame, "annotator"):
            persons = _persons(sub, suite_rows)
            ctx.status[suite].add_excluded("unidentifiable person", int((persons["perceived"] == "unidentifiable")
                                                                        .sum()))
            if persons.empty:
                continue
            if suite == "pst_single":
                kinds = suite_rows.set_index("probe_id")["identity_kind"]
                persons["kind"] = persons["probe_id"].map(kinds)
                for kind in ("occupation", "power"):
                    part = persons[persons["kind"] == kind]
                    if not part.empty:
                        _sts_entry(ctx, STS_KEYS[(suite, kind)], suite, part, annotator, kind, kind)
            elif suite in ("pst_paired_occupation", "pst_paired_power"):
                out = _sts_entry(ctx, STS_KEYS[(suite, None)], suite, persons, annotator, None,
                                 suite.rsplit("_", 1)[1])
                if out is not None and suite == "pst_paired_occupation":
                    paired_micro[annotator] = out
            else:  # pst_intervention (Table 5 / 6)
                aspect = suite_rows.set_index("probe_id")["bias_aspect"]
                male_id = suite_rows.set_index("probe_id")["male_identity"]
                female_id = suite_rows.set_index("probe_id")["female_identity"]
                persons["aspect"] = persons["probe_id"].map(aspect)
                for asp in ("occupation", "power"):
                    part = persons[persons["aspect"] == asp]
                    if part.empty:
                        continue
                    subset = f"{asp}: all pairs"
                    if asp == "occupation":
                        ref = paired_micro.get(annotator)
                        if ref is None:
                            subset = ("occupation: all pairs (pst_paired_occupation not scored with this "
                                      "annotator, so the most biased pairs could not be chosen)")
                        else:
                            top = most_biased_identities(ref["micro_sts"], ref["stereotyped_gender"], N_MOST_BIASED)
                            keep = (part["probe_id"].map(male_id).isin(top["masculine"])
                                    & part["probe_id"].map(female_id).isin(top["feminine"]))
                            part = part[keep]
                            subset = f"occupation: pairs of the {N_MOST_BIASED} most biased occupations per gender"
                            if part.empty:
                                ctx.add("sts_intervention", suite, None, n=0, annotator=annotator, subset=subset,
                                        reason="no labelled image of the most biased pairs")
                                continue
                    _sts_entry(ctx, "sts_intervention", suite, part, annotator, subset, asp)
            ctx.scored(suite, int(persons["probe_id"].nunique()))
        if ctx.status[suite].status != "scored":
            ctx.not_scored(suite, "no usable rows in labels/gender.parquet")


# --------------------------------------------------------------------------- MCAS (seeds 003, 004)


def _target_info(ctx: _Context) -> pd.DataFrame:
    rows = ctx.manifest[ctx.manifest["suite"] == "mcas_targets"]
    cols = [c for c in ("keyword", "category", "stereotype") if c in rows.columns]
    return rows[cols].drop_duplicates("keyword").set_index("keyword")


def score_mcas(ctx: _Context) -> None:
    present = [s for s in MCAS_SUITES if ctx.has_suite(s)]
    if not present:
        return
    if len(present) < 2:
        for s in present:
            ctx.not_scored(s, f"MCAS needs both {MCAS_SUITES[0]} and {MCAS_SUITES[1]} images")
        return
    emb = ctx.label("embeddings")
    if emb is None:
        for s in present:
            ctx.not_scored(s, ctx.missing("embeddings"))
        return
    opts = ctx.options
    info = _target_info(ctx)
    kept = set(ctx.images.index[ctx.images["suite"].isin(MCAS_SUITES)])
    images = emb[(emb["kind"] == "image") & emb["probe_id"].isin(kept)]
    texts = emb[emb["kind"] == "text"]
    encoders = list(dict.fromkeys(emb["encoder"].astype(str)))
    # Images embedded by every encoder, in one order, so that one resample of images serves all encoders.
    shared = None
    for enc in encoders:
        ids = set(images.loc[images["encoder"].astype(str) == enc, "probe_id"])
        shared = ids if shared is None else shared & ids
    shared_ids = sorted(shared or [])
    if not shared_ids:
        for s in present:
            ctx.not_scored(s, "no image of the mcas suites in labels/embeddings.parquet")
        return
    preps, perms = {}, {}
    per_enc_tables = {}
    try:
        for enc in encoders:
            img = images[(images["encoder"].astype(str) == enc) & images["probe_id"].isin(shared)]
            img = img.drop_duplicates("probe_id").set_index("probe_id").loc[shared_ids].reset_index()
            txt = texts[texts["encoder"].astype(str) == enc]
            # A --limit run may have images of a few targets only: score those, say so.
            imaged = set(img.loc[img["role"] == "target_image", "target"].astype(str))
            no_image = sorted(set(txt.loc[txt["role"] == "target_text", "target"].astype(str)) - imaged)
            if no_image:
                txt = txt[(txt["role"] != "target_text") | txt["target"].astype(str).isin(imaged)]
                if enc == encoders[0]:
                    ctx.notes.append(f"MCAS: targets {no_image} have no generated image and are left out")
            rows = pd.concat([img, txt], ignore_index=True)
            vecs = np.stack([np.asarray(v, dtype=np.float64) for v in rows["embedding"]])
            roles = rows["role"].astype(str).to_numpy()
            targets = rows["target"].fillna("").astype(str).to_numpy()
            preps[enc] = _Prepared(vecs, roles, targets)
            perms[enc] = np.arange(len(img))  # image rows come first, in shared_ids order
            if len(encoders) > 1:
                out = mcas_score(vecs, roles, targets, **opts.ci_kwargs())
                ctx.add("mcas", "mcas_targets", out["mcas"], ci=out["mcas_ci"], n=len(img), estimator=enc,
                        subset="one encoder")
                per_enc_tables[enc] = out["per_target"]
    except ValueError as exc:
        for s in present:
            ctx.not_scored(s, f"labels/embeddings.parquet cannot be scored: {exc}")
        return

    names = preps[encoders[0]].target_names
    for enc in encoders[1:]:
        if preps[enc].target_names != names and set(preps[enc].target_names) != set(names):
            for s in present:
                ctx.not_scored(s, f"encoders {encoders[0]!r} and {enc!r} cover different targets")
            return
    order = {enc: [preps[enc].target_names.index(t) for t in names] for enc in encoders}
    n_img = len(shared_ids)

    def components(weights: np.ndarray) -> np.ndarray:
        comps = []
        for enc in encoders:
            p = preps[enc]
            w = np.ones(p.n)
            w[:n_img] = weights[perms[enc]]
            comps.append(p.components(w)[order[enc]])
        return np.mean(comps, axis=0)

    comp = components(np.ones(n_img))
    table = internal_bias_table(pd.DataFrame(comp, columns=list(COMPONENTS), index=pd.Index(names, name="target")))
    overall = _overall(comp, 1e-12)
    estimator = encoders[0] if len(encoders) == 1 else f"mean over {len(encoders)} encoders: {', '.join(encoders)}"

    # Strata as in mcas_score: each target's images, the A images, the B images.
    id_role = images.drop_duplicates("probe_id").set_index("probe_id")
    id_key = id_role["role"].astype(str) + "|" + id_role["target"].fillna("").astype(str)
    strata = id_key.loc[shared_ids].to_numpy(dtype=object)

    def ci_of(key: str) -> dict | None:
        if not opts.n_resamples:
            return None
        return bootstrap_ci(lambda idx: _overall(components(np.bincount(idx, minlength=n_img).astype(float)),
                                                 1e-12)[key],
                            n_img, strata=strata, confidence_level=opts.confidence_level,
                            n_resamples=opts.n_resamples, random_state=opts.random_state).to_dict()

    subset = None if len(encoders) == 1 else "components averaged over encoders (seed 004 Sec. 5.2)"
    ctx.add("mcas", "mcas_targets", overall["mcas"], ci=ci_of("mcas"), n=n_img, estimator=estimator, subset=subset)
    for c in COMPONENTS:
        if c == "TT":
            ctx.add(c, "mcas_targets", overall[c], n=n_img, estimator=estimator, subset=subset,
                    ci_note="texts are fixed lists, not samples: TT has no sampling variation")
        else:
            ctx.add(c, "mcas_targets", overall[c], ci=ci_of(c), n=n_img, estimator=estimator, subset=subset)
    ctx.add("diffusion_bias", "mcas_targets", overall["diffusion_bias"], ci=ci_of("diffusion_bias"), n=n_img,
            estimator=estimator, subset=subset)
    undefined = [t for t, ok in table["bias_amplification_defined"].items() if not ok]
    ba = overall["bias_amplification"]
    if np.isfinite(ba):
        note = None if not undefined else f"TT = 0 for {undefined}: left out of the mean over targets"
        ctx.add("bias_amplification", "mcas_targets", ba, ci=ci_of("bias_amplification"), n=n_img,
                estimator=estimator, subset=subset, ci_note=note)
    else:
        ctx.add("bias_amplification", "mcas_targets", None, n=n_img, estimator=estimator, subset=subset,
                reason=str(table["bias_amplification_note"].iloc[0]) + "; no target has a defined alpha")

    detail = table.reset_index()
    detail.insert(0, "encoder", "mean" if len(encoders) > 1 else encoders[0])
    for col in ("category", "stereotype"):
        detail[col] = detail["target"].map(info[col]) if col in info.columns else None
    counts = pd.Series(strata).value_counts()
    detail["n_images"] = detail["target"].map(lambda t: int(counts.get(f"target_image|{t}", 0)))
    frames = [detail]
    for enc, per_target in per_enc_tables.items():
        t = pd.DataFrame.from_dict(per_target, orient="index").rename_axis("target").reset_index()
        t.insert(0, "encoder", enc)
        for col in ("category", "stereotype"):
            t[col] = t["target"].map(info[col]) if col in info.columns else None
        frames.append(t)
    ctx.detail("mcas_per_target", pd.concat(frames, ignore_index=True))
    if "category" in info.columns:
        by = {t: str(info["category"].get(t, "other")) for t in names}
        summary = summarise(table, by=by, columns=("mcas", "diffusion_bias", "bias_amplification")).reset_index()
        summary.insert(0, "encoder", detail["encoder"].iloc[0])
        ctx.detail("mcas_per_category", summary)
    ctx.notes.extend([] if len(encoders) == 1 else
                     [f"MCAS components averaged over {len(encoders)} encoders before MCAS, Diffusion Bias and "
                      "Bias Amplification (seed 004 Sec. 5.2); per-encoder MCAS entries have subset 'one encoder'"])
    n_attr = int(sum(1 for s in strata if s.startswith("attribute_")))
    ctx.scored("mcas_targets", n_img - n_attr)
    ctx.scored("mcas_attributes", n_attr)


# --------------------------------------------------------------------------- PaintSkills (seed 001)


def _split_subset(skill: str, split: str) -> str:
    return f"N = {split}" if skill == "count" else f"relation: {split}"


def score_paintskills(ctx: _Context) -> None:
    """Skill accuracy per PaintSkills suite and detector (Table 2), per count N / relation
    (Fig. 5a), the first task of Fig. 5b, the mean of the three skills; one row per image in
    ``scores/paintskills.parquet``."""
    from benchmark.models.detector import Detections
    from benchmark.probes import paintskills as ps_probes
    from benchmark.scores.paintskills import evaluate_skill

    opts = ctx.options
    threshold, object_threshold = ps_probes.threshold(), ps_probes.object_threshold()
    per_detector: dict[str | None, dict[str, np.ndarray]] = {}
    for suite, skill in PAINTSKILLS_SUITES.items():
        if not ctx.has_suite(suite):
            continue
        frame, why = ctx.labels_for("detections", suite)
        if frame is None:
            ctx.not_scored(suite, why)
            continue
        for detector, sub in _groups(frame, "detector"):
            sub = sub.drop_duplicates("probe_id")
            truths = [{"target": r["target"], "count": None if pd.isna(r.get("count")) else int(r["count"]),
                       "relation": r.get("relation"), "target_b": r.get("target_b")}
                      for r in sub.to_dict("records")]
            dets = [Detections.from_record(r) for r in sub.to_dict("records")]
            try:
                out = evaluate_skill(skill, dets, truths, threshold=threshold, object_threshold=object_threshold,
                                     **opts.ci_kwargs())
            except ValueError as exc:
                ctx.add(f"paintskills_{skill}", suite, None, n=len(sub), annotator=detector,
                        reason=f"labels/detections.parquet cannot be scored: {exc}")
                continue
            n = out["n_images"]
            ctx.add(f"paintskills_{skill}", suite, out["accuracy"], ci=out["accuracy_ci"], n=n, annotator=detector)
            for split, block in out["per_split"].items():
                ctx.add(f"paintskills_{skill}", suite, block["accuracy"], ci=block["accuracy_ci"],
                        n=block["n_images"], annotator=detector, subset=_split_subset(skill, split))
            if skill == "count":
                ctx.add("paintskills_count_number", suite, out["count_right_accuracy"], n=n, annotator=detector,
                        ci=_mean_ci([o["count_right"] for o in out["outcomes"]], opts))
            elif skill == "spatial":
                ctx.add("paintskills_spatial_objects", suite, out["objects_accuracy"], n=n, annotator=detector,
                        ci=_mean_ci([o["objects_correct"] for o in out["outcomes"]], opts))
            per_detector.setdefault(detector, {})[skill] = np.asarray([o["correct"] for o in out["outcomes"]], float)
            rows = sub[["probe_id", "scene_id", "target", "count", "relation", "target_b"]].reset_index(drop=True)
            rows = pd.concat([rows, pd.DataFrame(out["outcomes"])], axis=1)
            rows.insert(0, "detector", detector)
            rows.insert(0, "skill", skill)
            rows.insert(0, "suite", suite)
            rows["threshold"] = threshold
            ctx.detail("paintskills", rows)
            ctx.scored(suite, n)
        if ctx.status[suite].status != "scored":
            ctx.not_scored(suite, "no usable rows in labels/detections.parquet")
    # Table 2's "Avg.": with all three skills scored by one detector; the interval resamples
    # images within each skill.
    for detector, skills in per_detector.items():
        if len(skills) < 3:
            continue
        values = np.concatenate(list(skills.values()))
        strata = np.concatenate([[k] * len(v) for k, v in skills.items()])
        names = list(skills)

        def avg(idx: np.ndarray) -> float:
            return float(np.mean([100.0 * values[idx][strata[idx] == k].mean() for k in names]))

        ci = None
        if opts.n_resamples:
            ci = bootstrap_ci(avg, len(values), strata=strata, confidence_level=opts.confidence_level,
                              n_resamples=opts.n_resamples, random_state=opts.random_state).to_dict()
        ctx.add("paintskills_average", "paintskills_spatial", avg(np.arange(len(values))), ci=ci, n=len(values),
                annotator=detector, subset="mean of object, count, spatial")
    if per_detector and any(str(d or "").startswith("builtin:") for d in per_detector):
        ctx.notes.append("PaintSkills scored with builtin:tiny-detr, a random-weight detector: its accuracies are "
                         "meaningless")


def _mean_ci(flags: list, opts: ScoringOptions) -> dict | None:
    v = np.asarray(flags, dtype=float)
    if not opts.n_resamples or v.size == 0:
        return None
    return bootstrap_ci(lambda idx: 100.0 * float(np.mean(v[idx])), v.size, **opts.ci_kwargs()).to_dict()


# --------------------------------------------------------------------------- the stage


def _model_block(config: dict, manifest: pd.DataFrame) -> dict:
    m = config.get("model")
    spec = m.get("spec") if isinstance(m, dict) else m
    model_id = (m.get("model_id") if isinstance(m, dict) else None) or spec
    if not model_id and "model_id" in manifest.columns and len(manifest):
        model_id = str(manifest["model_id"].iloc[0])
    revision = (m.get("revision") if isinstance(m, dict) else None) or config.get("revision")
    if revision is None and "revision" in manifest.columns and len(manifest) and pd.notna(manifest["revision"].iloc[0]):
        revision = str(manifest["revision"].iloc[0])
    builtin = (m.get("builtin") if isinstance(m, dict) else None)
    if builtin is None:
        builtin = config.get("builtin")
    builtin = bool(builtin) or any(str(v or "").startswith("builtin:") for v in (spec, model_id))
    return {"id": str(model_id or "unknown"), "spec": None if spec is None else str(spec),
            "revision": None if revision is None else str(revision), "builtin": builtin}


def score_run(run_dir: str | Path, *, n_resamples: int = 1000, confidence_level: float = 0.95,
              random_state: int = 0, unidentifiable: str = "exclude", report: bool = False) -> dict:
    """Score every suite of RUN_DIR from its files; write results.json, scores/*.parquet and,
    with ``report=True``, the report (:func:`benchmark.runner.report.write_report`). Returns the
    results document (as written).

    Raises :class:`ScoreStageError` (one line) only when RUN_DIR has no usable manifest;
    missing label files make their suites "not scored" with the reason.
    """
    start = time.perf_counter()
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ScoreStageError(f"{run_dir} is not a folder: give the run folder of `t2ibench run`")
    options = ScoringOptions(n_resamples, confidence_level, random_state, unidentifiable)
    ctx = _Context(run_dir, options)
    for scorer in (score_gep, score_dalleval, score_pst, score_mcas, score_paintskills):
        scorer(ctx)
    by = {"attributes": ["estimator", "annotator"], "gender": ["annotator"], "skin_tone": ["annotator"],
          "embeddings": ["encoder"], "detections": ["annotator"]}
    for kind in LABEL_FILES:  # every label file read, with its annotators (whatever suites used it)
        if ctx.labels.get(kind) is not None:
            frame = ctx.labels[kind]
            if kind == "detections":  # the detector is the annotator of this file
                frame = frame[["detector"]].rename(columns={"detector": "annotator"})
            ctx.annotator(kind, frame, by[kind])
    for st in ctx.status.values():
        if st.status != "scored" and st.reason is None:
            st.reason = "no scorer for this suite yet"

    # Detail tables: rewrite the folder so a re-run leaves no stale table.
    scores_dir = run_dir / SCORES_DIR
    scores_dir.mkdir(parents=True, exist_ok=True)
    for old in scores_dir.glob("*.parquet"):
        if old.stem not in ctx.details:
            old.unlink()
    details = {}
    for name, frame in sorted(ctx.details.items()):
        path = scores_dir / f"{name}.parquet"
        tmp = path.with_suffix(".parquet.tmp")
        frame.reset_index(drop=True).to_parquet(tmp, index=False)
        tmp.replace(path)
        details[name] = f"{SCORES_DIR}/{name}.parquet"

    for st in ctx.status.values():
        if st.status != "scored":
            ctx.notes.append(f"{st.name}: not scored: {st.reason}")
        if st.excluded.get("nsfw"):
            ctx.notes.append(f"{st.name}: {st.excluded['nsfw']} images flagged NSFW by the safety checker were "
                             "left out of every score")
    cfg = ctx.config
    model = _model_block(cfg, ctx.manifest)
    if model["builtin"]:
        ctx.notes.insert(0, res.BUILTIN_WARNING)
    settings = cfg.get("settings")
    if settings is None and "settings" in ctx.manifest.columns and len(ctx.manifest):
        try:
            settings = json.loads(str(ctx.manifest["settings"].iloc[0]))
        except json.JSONDecodeError:
            settings = {"raw": str(ctx.manifest["settings"].iloc[0])}
    timings = res.read_timings(run_dir)
    timings["score"] = round(time.perf_counter() - start, 3)
    device = (settings or {}).get("device") if isinstance(settings, dict) else None
    results = res.build_results(
        model=model,
        package_version=cfg.get("package_version") or _package_version(),
        run={"n_images": int(len(ctx.manifest)), "n_nsfw_excluded": int(ctx.nsfw.sum()),
             "limit_per_suite": cfg.get("limit_per_suite", cfg.get("limit")), "batch_size": cfg.get("batch_size"),
             "scored_with_package_version": _package_version()},
        suites=[st.to_dict() for st in ctx.status.values()],
        settings=settings or {},
        seeds={"policy": res.SEED_POLICY, "bootstrap_random_state": random_state},
        scoring={"confidence_level": confidence_level, "n_resamples": n_resamples, "ci_method": "percentile",
                 "pst_unidentifiable": unidentifiable, "nsfw": "excluded"},
        hardware=cfg.get("hardware") if isinstance(cfg.get("hardware"), dict) else res.hardware_info(device),
        timings=timings, annotators=ctx.annotators, scores=ctx.scores, details=details, notes=ctx.notes,
    )
    res.write_results(run_dir, results)
    if report:
        from benchmark.runner.report import write_report

        write_report(run_dir, results)
    return results


def _package_version() -> str:
    import benchmark

    return getattr(benchmark, "__version__", "unknown")


__all__ = ["LABEL_FILES", "ScoreStageError", "ScoringOptions", "score_run"]
