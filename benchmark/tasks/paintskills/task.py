"""PaintSkills (DALL-Eval Sec. 3, 4.1): object-detector queries of the generated images ->
object, count and spatial accuracy (DALL-Eval Table 2, Fig. 5) with the released evaluator's
rules (:mod:`benchmark.tasks.paintskills.scores`). A suite's skill is its rows' ``skill``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmark.annotate.label_files import LABEL_FILES
from benchmark.contract.model_specs import is_builtin
from benchmark.models.detector import Detections
from benchmark.scores.bootstrap import bootstrap_ci
from benchmark.tasks.paintskills.scores import evaluate_skill
from benchmark.tasks.context import ScoringContext, ScoringOptions, groups_of
from benchmark.tasks.paintskills import metadata
from benchmark.tasks.paintskills import probes as ps_probes
from benchmark.tasks.paintskills.figures import plot_paintskills
from benchmark.tasks.paintskills.human_validation import HUMAN_VALIDATION
from benchmark.tasks.paintskills.questions import human_questions
from benchmark.registries import DatasetBuilderSpec, Registrations
from benchmark.tasks.registry import ImageLayout, Task, TaskReport

DETECTION_COLUMNS = ["probe_id", "scene_id", "target", "count", "relation", "target_b"]


def _split_subset(skill: str, split: str) -> str:
    return f"N = {split}" if skill == "count" else f"relation: {split}"


def _mean_ci(flags: list, opts: ScoringOptions, keys: list | None = None) -> dict | None:
    v = np.asarray(flags, dtype=float)
    if not opts.n_resamples or v.size == 0:
        return None
    return bootstrap_ci(lambda idx: 100.0 * float(np.mean(v[idx])), v.size, keys=keys, **opts.ci_kwargs()).to_dict()


def _score_detector(ctx: ScoringContext, suite: str, skill: str, detector: str | None,
                    sub: pd.DataFrame) -> tuple[np.ndarray, list] | None:
    """Accuracy of one detector on one suite, per split, and the per-image rows; returns the
    per-image correctness and probe ids (for the average over skills)."""
    config = ctx.family_config("paintskills")
    opts = ctx.options
    threshold = ps_probes.threshold(config)
    sub = sub.drop_duplicates("probe_id")
    records = sub.to_dict("records")
    truths = [ps_probes.truth_of(r) for r in records]
    keys = [r["probe_id"] for r in records]  # paired resampling across runs (t2ibench compare)
    try:
        out = evaluate_skill(skill, [Detections.from_record(r) for r in records], truths, threshold=threshold,
                             object_threshold=ps_probes.object_threshold(config), keys=keys, **opts.ci_kwargs())
    except ValueError as exc:
        ctx.add(f"paintskills_{skill}", suite, None, n=len(sub), annotator=detector,
                reason=f"{LABEL_FILES['detections'].relpath} cannot be scored: {exc}")
        return None
    n = out["n_images"]
    ctx.add(f"paintskills_{skill}", suite, out["accuracy"], ci=out["accuracy_ci"], n=n, annotator=detector)
    for split, block in out["per_split"].items():
        ctx.add(f"paintskills_{skill}", suite, block["accuracy"], ci=block["accuracy_ci"], n=block["n_images"],
                annotator=detector, subset=_split_subset(skill, split))
    if skill == "count":
        ctx.add("paintskills_count_number", suite, out["count_right_accuracy"], n=n, annotator=detector,
                ci=_mean_ci([o["count_right"] for o in out["outcomes"]], opts, keys))
    elif skill == "spatial":
        ctx.add("paintskills_spatial_objects", suite, out["objects_accuracy"], n=n, annotator=detector,
                ci=_mean_ci([o["objects_correct"] for o in out["outcomes"]], opts, keys))
    rows = sub[[c for c in DETECTION_COLUMNS if c in sub.columns]].reset_index(drop=True)
    rows = pd.concat([rows, pd.DataFrame(out["outcomes"])], axis=1)
    rows.insert(0, "detector", detector)
    rows.insert(0, "skill", skill)
    rows.insert(0, "suite", suite)
    rows["threshold"] = threshold
    ctx.detail("paintskills", rows)
    ctx.scored(suite, n)
    return np.asarray([o["correct"] for o in out["outcomes"]], float), keys


def _average(ctx: ScoringContext, suite: str, detector: str | None, skills: dict[str, tuple]) -> None:
    """Table 2's "Avg.": with all three skills scored by one detector; the interval resamples
    images within each skill."""
    opts = ctx.options
    values = np.concatenate([v for v, _ in skills.values()])
    keys = [k for _, ks in skills.values() for k in ks]
    strata = np.concatenate([[k] * len(v) for k, (v, _) in skills.items()])
    names = list(skills)

    def avg(idx: np.ndarray) -> float:
        return float(np.mean([100.0 * values[idx][strata[idx] == k].mean() for k in names]))

    ci = None
    if opts.n_resamples:
        ci = bootstrap_ci(avg, len(values), strata=strata, confidence_level=opts.confidence_level,
                          n_resamples=opts.n_resamples, random_state=opts.random_state, keys=keys).to_dict()
    ctx.add("paintskills_average", suite, avg(np.arange(len(values))), ci=ci, n=len(values), annotator=detector,
            subset="mean of object, count, spatial")


def score_paintskills(ctx: ScoringContext, suites: list[str]) -> None:
    """Skill accuracy per suite and detector (Table 2), per count N / relation (Fig. 5a), the
    first task of Fig. 5b, the mean of the three skills; one row per image in
    ``scores/paintskills.parquet``."""
    per_detector: dict[str | None, dict[str, tuple]] = {}
    last_suite = None
    for suite in suites:
        if not ctx.has_suite(suite):
            continue
        frame, why = ctx.labels_for("detections", suite)
        if frame is None:
            ctx.not_scored(suite, why)
            continue
        skill = str(frame["skill"].iloc[0])
        last_suite = suite
        for detector, sub in groups_of(frame, "detector"):
            correct = _score_detector(ctx, suite, skill, detector, sub)
            if correct is not None:
                per_detector.setdefault(detector, {})[skill] = correct
        if ctx.status[suite].status != "scored":
            ctx.not_scored(suite, "no usable rows in labels/detections.parquet")
    for detector, skills in per_detector.items():
        if len(skills) == 3:
            _average(ctx, last_suite, detector, skills)
    if any(is_builtin(d) for d in per_detector):
        ctx.notes.append("PaintSkills scored with builtin:tiny-detr, a random-weight detector: its accuracies are "
                         "meaningless")


def paintskills_figures(read_detail, scores, out_dir) -> list[tuple[str, str]]:
    return plot_paintskills(list(scores), out_dir)


def paintskills_image_labels(read_detail):
    """Under an image: what the detector found, and whether that is right by the skill's rule."""
    table = read_detail("paintskills")
    by_probe = {} if table is None or "correct" not in table.columns else \
        {str(k): g.iloc[0] for k, g in table.groupby("probe_id", sort=False)}

    def lines(row) -> list[str]:
        r = by_probe.get(str(row["probe_id"]))
        if r is None:
            return []
        mark = "right" if bool(r["correct"]) else "wrong"
        skill = str(r.get("skill", ""))
        if skill == "count" and pd.notna(r.get("n_detected")):
            return [f"detected {int(r['n_detected'])} {r.get('target', '')}: {mark}"]
        if skill == "spatial":
            found = r.get("predicted_relation")
            return [f"detected relation: {found}: {mark}" if isinstance(found, str) and found
                    else f"both objects not detected: {mark}"]
        if isinstance(r.get("predicted"), str) and r.get("predicted"):
            conf = f" ({float(r['confidence']):.2f})" if pd.notna(r.get("confidence")) else ""
            return [f"detected: {r['predicted']}{conf}: {mark}"]
        return [f"detector: {mark}"]

    return lines


PAINTSKILLS_LAYOUTS = {"object": ImageLayout("Object prompts"),
                       "count": ImageLayout("Count prompts by N", ("count",), row_title="N = {0}"),
                       "spatial": ImageLayout("Spatial prompts by relation", ("relation",))}


def paintskills_layout(rows: pd.DataFrame) -> ImageLayout | None:
    skills = rows["skill"].dropna() if "skill" in rows.columns else pd.Series([], dtype=object)
    return PAINTSKILLS_LAYOUTS.get(str(skills.iloc[0])) if len(skills) else None


TASK = Task(
    name="paintskills", family="paintskills", papers=("dalleval",), annotators={"detections": None},
    score=score_paintskills,
    report=TaskReport("PaintSkills: skill accuracy (DALL-Eval)", figures=paintskills_figures,
                      layout=paintskills_layout, image_labels=paintskills_image_labels),
    description="PaintSkills object, count and spatial accuracy (DALL-Eval Table 2) from detector queries.",
    human_questions=human_questions, human_validation=HUMAN_VALIDATION,
)

#: everything this folder adds to the registries (the loader registers it, in folder order; the
#: ``dalleval`` folder cites the paper)
REGISTRATIONS = Registrations(
    scores=metadata.SCORES, probe_configs={ps_probes.FAMILY: ps_probes.PROBE_CONFIG}, suites=ps_probes.SUITES,
    dataset_builders=(DatasetBuilderSpec(
        "paintskills", "Build the PaintSkills dataset (DALL-Eval, DALL-Eval Sec. 3) as a Hub-layout folder: one config "
        "per skill, splits train / test, rendered images with COCO-style boxes.",
        "benchmark.tasks.paintskills.scene_dataset"),),
    evaluate_modules=metadata.EVALUATE_MODULES, tasks=(TASK,))
