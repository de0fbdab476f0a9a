"""MCAS (Mandal et al. 2023) and Diffusion Bias / Bias Amplification (Generated Bias, 2024):
CLIP embeddings of target and attribute images and texts -> II, ITP, ITA, TT, MCAS, delta and
alpha, per target and overall, averaged over the run's encoders (Generated Bias Sec. 5.2).

The number in results.json is :func:`benchmark.tasks.mcas.scores.mcas_score` with the ``encoders``
and ``image_ids`` of ``labels/embeddings.parquet``, so the ``mcas`` evaluate module reproduces
it from the same rows.

With ``t2ibench run --mcas-reference SOURCE``
(:func:`benchmark.tasks.mcas.reference.plan_mcas_reference`) the attribute
images are a published reference's (:mod:`benchmark.reference_attributes`) instead of the
model's own: the attribute suite is not generated, the annotate stage embeds the reference's
images with the run's encoders, and II / ITP compare the model's targets with them. Without
it the papers' protocol is unchanged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmark.annotate.label_files import LABEL_FILES
from benchmark.tasks.generated_bias.scores import COMPONENTS, summarise
from benchmark.tasks.mcas.scores import mcas_score
from benchmark.tasks.context import ScoringContext
from benchmark.tasks.generated_bias.paper_checks import HEADLINE_CHECKS as GENERATED_BIAS_HEADLINE
from benchmark.tasks.mcas import inputs, metadata, probes
from benchmark.tasks.mcas.citation import MCAS_PAPER
from benchmark.tasks.mcas.reference_configs import IMAGES, TEXTS
from benchmark.tasks.mcas.figures import plot_mcas
from benchmark.tasks.mcas.paper_checks import checks
from benchmark.tasks.mcas.reference import MCAS_FAMILY, describe, reference_image_id, run_reference
from benchmark.registries import DatasetBuilderSpec, Registrations
from benchmark.tasks.registry import ImageLayout, Task, TaskReport

FAMILY = MCAS_FAMILY
TT_NOTE = "texts are fixed lists, not samples: TT has no sampling variation"
AVERAGED = "components averaged over encoders (Generated Bias Sec. 5.2)"


def _target_info(ctx: ScoringContext, rows: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in ("keyword", "category", "stereotype") if c in rows.columns]
    rows = rows[rows["keyword"].notna()] if "keyword" in rows.columns else rows
    return rows[cols].drop_duplicates("keyword").set_index("keyword") if "keyword" in cols else pd.DataFrame()


def _entries(ctx: ScoringContext, suite: str, out: dict, estimator: str, subset: str | None) -> None:
    n = out["n_images"]
    ctx.add("mcas", suite, out["mcas"], ci=out["mcas_ci"], n=n, estimator=estimator, subset=subset)
    for c in COMPONENTS:
        ctx.add(c, suite, out[c], ci=out[f"{c}_ci"], n=n, estimator=estimator, subset=subset,
                ci_note=TT_NOTE if c == "TT" else None)
    ctx.add("diffusion_bias", suite, out["diffusion_bias"], ci=out["diffusion_bias_ci"], n=n, estimator=estimator,
            subset=subset)
    undefined = out["bias_amplification_undefined_targets"]
    if out["bias_amplification"] is not None:
        note = None if not undefined else f"TT = 0 for {undefined}: left out of the mean over targets"
        ctx.add("bias_amplification", suite, out["bias_amplification"], ci=out["bias_amplification_ci"], n=n,
                estimator=estimator, subset=subset, ci_note=note)
    else:
        ctx.add("bias_amplification", suite, None, n=n, estimator=estimator, subset=subset,
                reason=str(out["bias_amplification_note"]))


def _details(ctx: ScoringContext, out: dict, encoders: list[str], info: pd.DataFrame) -> None:
    def frame(per_target: dict, encoder: str) -> pd.DataFrame:
        t = pd.DataFrame.from_dict(per_target, orient="index").rename_axis("target").reset_index()
        t["bias_amplification_note"] = t["bias_amplification_note"].fillna("")  # "" where alpha is defined
        t.insert(0, "encoder", encoder)
        for col in ("category", "stereotype"):
            t[col] = t["target"].map(info[col]) if col in info.columns else None
        return t

    frames = [frame(out["per_target"], "mean" if len(encoders) > 1 else encoders[0])]
    frames += [frame(r["per_target"], enc) for enc, r in (out.get("per_encoder") or {}).items()]
    ctx.detail("mcas_per_target", pd.concat(frames, ignore_index=True))
    if "category" in info.columns:
        table = pd.DataFrame.from_dict(out["per_target"], orient="index")
        by = {t: str(info["category"].get(t, "other")) for t in table.index}
        summary = summarise(table, by=by, columns=("mcas", "diffusion_bias", "bias_amplification")).reset_index()
        summary.insert(0, "encoder", frames[0]["encoder"].iloc[0])
        ctx.detail("mcas_per_category", summary)


# --------------------------------------------------------------------------- a reference's attribute images


def _reference_ids(emb: pd.DataFrame, reference: dict) -> set[str]:
    prefix = reference_image_id(reference["fingerprint"], "")
    ids = emb.loc[emb["kind"] == "image", "probe_id"].astype(str)
    return set(ids[ids.str.startswith(prefix)])


# --------------------------------------------------------------------------- scoring


def score_mcas(ctx: ScoringContext, suites: list[str]) -> None:
    present = [s for s in suites if ctx.has_suite(s)]
    if not present:
        return
    rows = ctx.manifest[ctx.manifest["suite"].isin(present)]
    reference = run_reference(ctx.config)
    if reference is not None:  # attribute images: the reference's, not the model's
        rows = rows[rows["attribute_set"].isna()] if "attribute_set" in rows.columns else rows
        if rows.empty:
            for s in present:
                ctx.not_scored(s, "MCAS needs target images (MCAS Sec. 3)")
            return
    else:
        kinds = set(rows["attribute_set"].dropna()) if "attribute_set" in rows.columns else set()
        if not kinds or rows["attribute_set"].notna().all():
            for s in present:
                ctx.not_scored(s, "MCAS needs both attribute images and target images (MCAS Sec. 3)")
            return
    emb = ctx.label("embeddings")
    if emb is None:
        for s in present:
            ctx.not_scored(s, ctx.missing("embeddings"))
        return
    kept = set(ctx.images.index[ctx.images["suite"].isin(present)]) & set(rows["probe_id"])
    if reference is not None:
        ref_ids = _reference_ids(emb, reference)
        if not ref_ids:
            for s in present:
                ctx.not_scored(s, f"{LABEL_FILES['embeddings'].relpath} has no embeddings of the MCAS reference's "
                                  "attribute images: run `t2ibench annotate` on this run folder")
            return
        kept |= ref_ids
        ctx.notes.append(f"MCAS: attribute images from the reference {describe(reference)}, not generated by the "
                         "model: II, ITP and the scores built on them compare the model's targets with that "
                         "reference (compare only with audits against the same fingerprint)")
    use = emb[((emb["kind"] == "image") & emb["probe_id"].isin(kept)) | (emb["kind"] == "text")]
    image = (use["kind"] == "image").to_numpy()
    encoders = list(dict.fromkeys(emb["encoder"].astype(str)))
    try:
        out = mcas_score(list(use["embedding"]), use["role"].astype(str), use["target"].fillna("").astype(str),
                         encoders=use["encoder"].astype(str), image_ids=np.where(image, use["probe_id"], ""),
                         keys=np.where(image, use["probe_id"], ""), drop_targets_without_images=True,
                         **ctx.options.ci_kwargs())
    except ValueError as exc:
        for s in present:
            ctx.not_scored(s, f"{LABEL_FILES['embeddings'].relpath} cannot be scored: {exc}")
        return
    if reference is not None:
        # n counts the model's images (what validation bounds by the run's suites); the
        # reference's attribute images are resampled with them all the same
        for r in [out, *(out.get("per_encoder") or {}).values()]:
            r["n_images"] = int(r["n_images"]) - len(ref_ids)
        ctx.notes.append(f"MCAS: n counts the model's target images; the reference's {len(ref_ids)} attribute "
                         "images are resampled with them in the bootstrap intervals")
    if out["targets_without_images"]:
        ctx.notes.append(f"MCAS: targets {out['targets_without_images']} have no generated image and are left out")
    target_rows = rows[rows["attribute_set"].isna()] if "attribute_set" in rows.columns else rows
    target_suite = str(target_rows["suite"].iloc[0])
    for enc, r in (out.get("per_encoder") or {}).items():
        ctx.add("mcas", target_suite, r["mcas"], ci=r["mcas_ci"], n=r["n_images"], estimator=enc, subset="one encoder")
    several = len(encoders) > 1
    estimator = f"mean over {len(encoders)} encoders: {', '.join(encoders)}" if several else encoders[0]
    _entries(ctx, target_suite, out, estimator, AVERAGED if several else None)
    _details(ctx, out, encoders, _target_info(ctx, target_rows))
    if several:
        ctx.notes.append(f"MCAS components averaged over {len(encoders)} encoders before MCAS, Diffusion Bias and "
                         "Bias Amplification (Generated Bias Sec. 5.2); per-encoder MCAS entries have subset "
                         "'one encoder'")
    images = use[image]
    scored = set.intersection(*(set(g["probe_id"]) for _, g in images.groupby(images["encoder"].astype(str))))
    for s in present:
        ctx.scored(s, int(rows[(rows["suite"] == s) & rows["probe_id"].isin(scored)].shape[0]))


def mcas_figures(read_detail, scores, out_dir) -> list[tuple[str, str]]:
    table = read_detail("mcas_per_target")
    return plot_mcas(table, out_dir) if table is not None and len(table) else []


def mcas_tables(read_detail) -> list[tuple[str, list[str], list[list]]]:
    """MCAS per category (MCAS Table 5), Diffusion Bias and Bias Amplification means."""
    cat = read_detail("mcas_per_category")
    if cat is None or not len(cat):
        return []
    return [("MCAS per category", ["Encoder", "Category", "MCAS mean", "MCAS min", "MCAS max", "Diffusion Bias mean",
                                   "Bias Ampl. mean", "Targets"],
             [[r["encoder"], r["group"], r["mcas_mean"], r["mcas_min"], r["mcas_max"], r["diffusion_bias_mean"],
               r["bias_amplification_mean"], int(r["mcas_n"])] for _, r in cat.iterrows()])]


def mcas_layout(rows: pd.DataFrame) -> ImageLayout:
    if "attribute_set" in rows.columns and rows["attribute_set"].notna().all():
        return ImageLayout("Gender attribute images by attribute set", ("attribute_set",), "keyword", (),
                           ("keyword",), "attribute set {0}")
    return ImageLayout("Target keywords by category", ("category",), "keyword", (), ("keyword",))


def mcas_image_labels(read_detail):
    """Under a target image: its stereotype and the target's MCAS (mean over encoders)."""
    table = read_detail("mcas_per_target")
    scores: dict[str, float] = {}
    if table is not None and {"encoder", "target", "mcas"} <= set(table.columns) and len(table):
        use = table[table["encoder"] == "mean"] if (table["encoder"] == "mean").any() else table
        use = use[use["encoder"] == use["encoder"].iloc[0]]
        scores = {str(t): float(v) for t, v in zip(use["target"], use["mcas"]) if pd.notna(v)}

    def lines(row) -> list[str]:
        keyword, aset = row.get("keyword"), row.get("attribute_set")
        if not isinstance(keyword, str) or not keyword or (isinstance(aset, str) and aset):
            return []  # attribute images have no target score
        out = [f"{row['stereotype']}-associated target"] if isinstance(row.get("stereotype"), str) else []
        return out + ([f"target MCAS {scores[keyword]:+.3g}"] if keyword in scores else [])

    return lines


TASK = Task(
    name="mcas", family=FAMILY, papers=("mcas", "diffusion_bias"), annotators={"mcas_embeddings": None},
    score=score_mcas,
    report=TaskReport("MCAS and Diffusion Bias", figures=mcas_figures, tables=mcas_tables, layout=mcas_layout,
                      image_labels=mcas_image_labels),
    description="MCAS and its components (MCAS Eq. 1-2), Diffusion Bias and Bias Amplification (Generated Bias "
                "Eq. 4-5), averaged over CLIP encoders.",
    paper_checks=checks,
    headline_checks=GENERATED_BIAS_HEADLINE,
)

#: everything this folder adds to the registries (the loader registers it, in folder order; the
#: ``generated_bias`` folder registers its paper and its two scores, which this task computes)
REGISTRATIONS = Registrations(
    papers=(MCAS_PAPER,), scores=metadata.SCORES, probe_configs={FAMILY: probes.PROBE_CONFIG}, suites=probes.SUITES,
    annotators=inputs.ANNOTATORS, reference_configs=(TEXTS, IMAGES),
    dataset_builders=(DatasetBuilderSpec(
        "reference_attributes", "Publish reference attributes as a Hub dataset: the ten Monk Skin Tone swatches, the "
        "text gender attributes of MCAS and Generated Bias, and (from an audited run) MCAS image attributes one "
        "trusted model generated, so that audits of other models can score against the same images.",
        "benchmark.tasks.mcas.reference_dataset"),),
    evaluate_modules=metadata.EVALUATE_MODULES, tasks=(TASK,))
