"""Automatic annotators against the human majority.

* Attribute existence (GEP Sec. 6.2, Tables 7 and 16): ROC-AUC of each estimator's
  ``score`` in ``labels/attributes.parquet`` against the human majority, per attribute and
  averaged over attributes; also Cohen's kappa and accuracy of its 0/1 ``label``.
* The tasks' own comparisons on the attribute labels (``Task.human_validation``), e.g.
  GEP's vectors (GEP Sec. 6, Tables 4 and 19: the human GEP vector from majority labels
  against each estimator's over the same images, per setting; in
  ``benchmark/tasks/gep/human_validation.py``).
* Perceived gender (PST App. E, Table 12): Cohen's kappa of ``labels/gender.parquet``
  against each human annotator, their average (the paper's number), and the majority, per
  subset of images that the image's task names.
* Skin tone (DALL-Eval Sec. 4.2.3 checks its automatic MST against human evaluation):
  exact and within-one-tone agreement, mean absolute tone difference and quadratic-weighted
  Cohen's kappa over the 10 Monk tones, against the majority and each annotator.

Human answers come as the answers table (:data:`benchmark.human.stats.ANSWER_COLUMNS`);
items whose majority is a tie are left out of every comparison with the majority and
counted. Undefined statistics are NaN with the reason in ``notes``.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from benchmark.annotate.label_files import LABEL_FILES
from benchmark.human.stats import MONK_TONES, item_majorities, validate_answers
from benchmark.scores.agreement import UndefinedStatisticWarning, cohen_kappa, roc_auc
from benchmark.probes.source import suite_families
from benchmark.contract.run_folder import MANIFEST_FILE
from benchmark.tasks import Task, list_tasks, tasks_for_suites
from benchmark.tasks.of_run import tasks_of_run
YES_NO = {"yes": 1, "no": 0}
MONK_VALUES = tuple(int(t) for t in MONK_TONES)


def _capture(fn: Callable[[], Any]) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedStatisticWarning)
        value = fn()
    return value, [str(w.message) for w in caught if issubclass(w.category, UndefinedStatisticWarning)]


def human_gender_label(answer: str) -> str:
    """``male`` / ``female`` / ``unidentifiable`` for a human answer, with the same reading as
    the VQA answers (PST's "masculine" / "feminine" / "cannot identify" included)."""
    from benchmark.annotate.vqa_labels import perceived_gender_label

    return perceived_gender_label(answer)


# --------------------------------------------------------------------------- attributes


def human_attribute_labels(majorities: pd.DataFrame) -> pd.DataFrame:
    """Attribute items with a majority: probe_id, suite, attribute, human (1 = yes, 0 = no)."""
    att = majorities[(majorities["question_type"] == "attribute") & ~majorities["tie"].astype(bool)]
    bad = att[~att["majority"].isin(list(YES_NO))]
    if not bad.empty:
        raise ValueError(f"attribute answer {bad['majority'].iloc[0]!r} (item {bad['item_id'].iloc[0]!r}) "
                         "is not yes / no")
    return pd.DataFrame({"probe_id": att["probe_id"].to_numpy(), "suite": att["suite"].to_numpy(),
                         "attribute": att["question_key"].to_numpy(),
                         "human": att["majority"].map(YES_NO).astype(int).to_numpy()})


def joined_attributes(majorities: pd.DataFrame, attributes: pd.DataFrame) -> pd.DataFrame:
    """The human-majority attribute labels (:func:`human_attribute_labels`) joined with the
    automatic scores of the same (image, attribute): probe_id, suite, attribute, human, and
    annotator, estimator, label, score of ``labels/attributes.parquet``."""
    need = {"probe_id", "attribute", "score", "label", "estimator", "annotator"}
    if not need <= set(attributes.columns):
        raise ValueError(f"attributes table lacks {sorted(need - set(attributes.columns))} "
                         "(expected labels/attributes.parquet)")
    human = human_attribute_labels(majorities)
    auto = attributes.loc[:, sorted(need)].copy()
    auto["annotator"] = auto["annotator"].fillna("").astype(str)
    return human.merge(auto, on=["probe_id", "attribute"], how="inner")


def attribute_auc(majorities: pd.DataFrame, attributes: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ROC-AUC of automatic existence scores against the human majority (GEP Table 16 per
    attribute, Table 7 the mean over attributes), per (estimator, annotator).

    Returns (per_attribute, summary). per_attribute: estimator, annotator, attribute, n,
    n_present, roc_auc (NaN when the humans saw one class only), notes. summary: estimator,
    annotator, n (pairs), n_attributes, mean_roc_auc (over attributes whose AUC is defined),
    cohen_kappa and accuracy of the 0/1 ``label``, notes.
    """
    joined = joined_attributes(majorities, attributes)
    per, summary = [], []
    for (est, ann), sub in joined.groupby(["estimator", "annotator"], sort=True):
        aucs = []
        for attr, a in sub.groupby("attribute", sort=False):
            auc, why = _capture(lambda: roc_auc(a["score"].astype(float), a["human"]))
            per.append({"estimator": est, "annotator": ann, "attribute": attr, "n": len(a),
                        "n_present": int(a["human"].sum()), "roc_auc": auc, "notes": "; ".join(why)})
            aucs.append(auc)
        defined = [v for v in aucs if not math.isnan(v)]
        kappa, why = _capture(lambda: cohen_kappa(sub["label"].astype(int), sub["human"]))
        notes = list(why) + ([] if defined else ["no attribute has both present and absent human labels"])
        summary.append({"estimator": est, "annotator": ann, "n": len(sub), "n_attributes": len(aucs),
                        "n_attributes_defined": len(defined),
                        "mean_roc_auc": float(np.mean(defined)) if defined else float("nan"),
                        "cohen_kappa": kappa, "accuracy": float(np.mean(sub["label"].astype(int) == sub["human"])),
                        "notes": "; ".join(notes)})
    cols_p = ["estimator", "annotator", "attribute", "n", "n_present", "roc_auc", "notes"]
    cols_s = ["estimator", "annotator", "n", "n_attributes", "n_attributes_defined", "mean_roc_auc", "cohen_kappa",
              "accuracy", "notes"]
    return pd.DataFrame(per, columns=cols_p), pd.DataFrame(summary, columns=cols_s)


# --------------------------------------------------------------------------- perceived gender


def gender_subsets(manifest: pd.DataFrame | None, tasks: Mapping[str, Task] | None = None) -> dict[str, str]:
    """probe_id -> the row of the perceived-gender table its image belongs to, as its task's
    ``human_validation.gender_subset`` says ("" when it says nothing). ``tasks``: suite ->
    task (default: the suites' registered tasks)."""
    if manifest is None or "probe_id" not in manifest.columns:
        return {}
    if tasks is None:
        suites = [str(s) for s in dict.fromkeys(manifest["suite"])] if "suite" in manifest.columns else []
        tasks = {s: task for task, its in tasks_for_suites(suite_families(None, suites)) for s in its}
    out = {}
    for _, row in manifest.iterrows():
        task = tasks.get(str(row.get("suite")))
        hv = task.human_validation if task is not None else None
        out[str(row["probe_id"])] = hv.gender_subset(row) if hv is not None and hv.gender_subset else ""
    return out


def gender_kappa(answers: pd.DataFrame, gender: pd.DataFrame, manifest: pd.DataFrame | None = None,
                 tasks: Mapping[str, Task] | None = None) -> pd.DataFrame:
    """Cohen's kappa between automatic perceived gender and humans (PST App. E, Table 12),
    per (suite, subset, VQA annotator), then pooled per setting (single / paired).

    Human answers and VQA labels are both read as male / female / unidentifiable. Columns:
    suite, subset (the task's :func:`gender_subsets`, e.g. occupation / power for PST; ``tasks``:
    suite -> task, default the registered ones), setting, annotator (the
    VQA spec), n_items, kappa_mean (average over human annotators of their kappa with the
    VQA labels on the items each answered: the paper's "averaged" score), kappa_per_annotator
    ({annotator: kappa}), kappa_majority (items with a majority), accuracy_majority,
    n_ties, notes.
    """
    df = validate_answers(answers)
    df = df[df["question_type"].isin(["gender_single", "gender_paired"])].copy()
    cols = ["suite", "subset", "setting", "annotator", "n_items", "kappa_mean", "kappa_per_annotator",
            "kappa_majority", "accuracy_majority", "n_ties", "notes"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    need = {"probe_id", "person", "label", "annotator"}
    if not need <= set(gender.columns):
        raise ValueError(f"gender table lacks {sorted(need - set(gender.columns))} (expected labels/gender.parquet)")
    df["person"] = np.where(df["question_type"] == "gender_single", "single", df["question_key"])
    df["human"] = df["answer"].map(human_gender_label)
    maj = item_majorities(answers)
    maj = maj[maj["question_type"].isin(["gender_single", "gender_paired"])].copy()
    maj["human_majority"] = [None if m is None or (isinstance(m, float) and math.isnan(m)) else human_gender_label(m)
                             for m in maj["majority"]]
    # Majority of the *mapped* labels would differ only if two wordings meant one gender;
    # the app offers one wording per gender, so the item majority maps one to one.
    subset = gender_subsets(manifest, tasks)
    auto = gender.loc[:, ["probe_id", "person", "label", "annotator"]].rename(columns={"annotator": "vqa",
                                                                                      "label": "auto"})
    auto["vqa"] = auto["vqa"].fillna("").astype(str)
    if "estimator" in gender.columns:  # closed-set and free-text labels of one model are two annotators
        auto["vqa"] = auto["vqa"] + " (" + gender["estimator"].fillna("").astype(str).to_numpy() + ")"
    rows = []

    def one(keys: dict, ans: pd.DataFrame, mj: pd.DataFrame) -> None:
        notes: list[str] = []
        per = {}
        for name, a in ans.groupby("annotator", sort=True):
            k, why = _capture(lambda: cohen_kappa(a["auto"], a["human"]))
            per[name] = k
            notes += [f"{name}: {w}" for w in why]
        defined = [v for v in per.values() if not math.isnan(v)]
        mj_ok = mj[mj["human_majority"].notna()]
        if len(mj_ok):
            km, why = _capture(lambda: cohen_kappa(mj_ok["auto"], mj_ok["human_majority"]))
            notes += [f"majority: {w}" for w in why]
            acc = float(np.mean(mj_ok["auto"].to_numpy() == mj_ok["human_majority"].to_numpy()))
        else:
            km, acc = float("nan"), float("nan")
            notes.append("no item has a majority")
        rows.append({**keys, "n_items": int(mj["item_id"].nunique()),
                     "kappa_mean": float(np.mean(defined)) if defined else float("nan"),
                     "kappa_per_annotator": per, "kappa_majority": km, "accuracy_majority": acc,
                     "n_ties": int(mj["human_majority"].isna().sum()), "notes": "; ".join(notes)})

    a_all = df.merge(auto, on=["probe_id", "person"], how="inner")
    m_all = maj.assign(person=np.where(maj["question_type"] == "gender_single", "single", maj["question_key"]))
    m_all = m_all.merge(auto, on=["probe_id", "person"], how="inner")
    for frame in (a_all, m_all):
        frame["subset"] = frame["probe_id"].map(lambda p: subset.get(p, ""))
        frame["setting"] = np.where(frame["question_type"] == "gender_single", "single", "paired")
    for (suite, sub_name, vqa), a in a_all.groupby(["suite", "subset", "vqa"], sort=True):
        m = m_all[(m_all["suite"] == suite) & (m_all["subset"] == sub_name) & (m_all["vqa"] == vqa)]
        one({"suite": suite, "subset": sub_name, "setting": a["setting"].iloc[0], "annotator": vqa}, a, m)
    for (setting, vqa), a in a_all.groupby(["setting", "vqa"], sort=True):
        m = m_all[(m_all["setting"] == setting) & (m_all["vqa"] == vqa)]
        one({"suite": "all", "subset": "", "setting": setting, "annotator": vqa}, a, m)
    return pd.DataFrame(rows, columns=cols)


# --------------------------------------------------------------------------- skin tone


def tone_agreement(automatic: Any, human: Any) -> dict:
    """Monk Skin Tone agreement of two integer sequences (1..10): n, exact, within_1 (share
    at most one tone apart), mean_abs_diff, kappa_quadratic (Cohen's kappa with quadratic
    weights over the 10 tones), notes."""
    a = np.asarray(list(automatic), dtype=float)
    h = np.asarray(list(human), dtype=float)
    if a.shape != h.shape:
        raise ValueError(f"inputs must have the same length, got {a.size} and {h.size}")
    if a.size == 0:
        raise ValueError("no skin tone pairs to compare")
    if not (np.isin(a, MONK_VALUES).all() and np.isin(h, MONK_VALUES).all()):
        raise ValueError("skin tones must be Monk Skin Tone integers 1..10")
    k, why = _capture(lambda: cohen_kappa(a.astype(int), h.astype(int), weights="quadratic", labels=MONK_VALUES))
    d = np.abs(a - h)
    return {"n": int(a.size), "exact": float(np.mean(d == 0)), "within_1": float(np.mean(d <= 1)),
            "mean_abs_diff": float(d.mean()), "kappa_quadratic": k, "notes": "; ".join(why)}


def skin_tone_agreement(answers: pd.DataFrame, skin_tone: pd.DataFrame) -> pd.DataFrame:
    """Automatic Monk Skin Tone (``labels/skin_tone.parquet``) against humans, per skin-tone
    annotator: one row against the majority (items with a majority and an automatic tone)
    and one row averaging each human annotator's agreement (``reference`` = "majority" /
    "annotators (mean)"), plus ``n_no_tone``: human-labelled images without an automatic
    tone (no face found)."""
    df = validate_answers(answers)
    df = df[df["question_type"] == "skin_tone"]
    cols = ["annotator", "reference", "n", "exact", "within_1", "mean_abs_diff", "kappa_quadratic", "n_no_tone",
            "notes"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    need = {"probe_id", "mst", "annotator"}
    if not need <= set(skin_tone.columns):
        raise ValueError(f"skin tone table lacks {sorted(need - set(skin_tone.columns))} "
                         "(expected labels/skin_tone.parquet)")
    maj = item_majorities(df)
    rows = []
    for ann, auto in skin_tone.assign(annotator=skin_tone["annotator"].fillna("").astype(str)).groupby("annotator"):
        tone = {str(p): int(m) for p, m in zip(auto["probe_id"], auto["mst"]) if m is not None and not pd.isna(m)}
        labelled = set(df["probe_id"]) & set(auto["probe_id"].astype(str))
        no_tone = len([p for p in labelled if p not in tone])
        mj = maj[~maj["tie"].astype(bool) & maj["probe_id"].isin(tone)]
        if len(mj):
            r = tone_agreement([tone[p] for p in mj["probe_id"]], mj["majority"].astype(int))
            rows.append({"annotator": ann, "reference": "majority", **r, "n_no_tone": no_tone})
        per = []
        for _, a in df[df["probe_id"].isin(tone)].groupby("annotator", sort=True):
            per.append(tone_agreement([tone[p] for p in a["probe_id"]], a["answer"].astype(int)))
        if per:
            mean = {k: float(np.nanmean([p[k] for p in per])) if any(not math.isnan(p[k]) for p in per)
                    else float("nan") for k in ("exact", "within_1", "mean_abs_diff", "kappa_quadratic")}
            notes = "; ".join(dict.fromkeys(p["notes"] for p in per if p["notes"]))
            rows.append({"annotator": ann, "reference": f"annotators (mean of {len(per)})",
                         "n": int(sum(p["n"] for p in per)), **mean, "n_no_tone": no_tone, "notes": notes})
        if not len(mj) and not per:
            rows.append({"annotator": ann, "reference": "majority", "n": 0, "n_no_tone": no_tone,
                         "notes": "no human-labelled image has an automatic skin tone"})
    return pd.DataFrame(rows, columns=cols)


# --------------------------------------------------------------------------- a run folder


def task_attribute_tables(majorities: pd.DataFrame, attributes: pd.DataFrame,
                          manifest: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The tables every registered task adds from the attribute labels
    (``human_validation.attribute_tables``, e.g. GEP's vectors), in task order; a task whose
    images the run lacks adds its tables empty."""
    out: dict[str, pd.DataFrame] = {}
    pairs = joined_attributes(majorities, attributes)
    for task in list_tasks():
        hv = task.human_validation
        if hv is not None and hv.attribute_tables is not None:
            out.update(hv.attribute_tables(pairs, manifest))
    return out


def validate_run(run_dir: str | Path, answers: pd.DataFrame, majorities: pd.DataFrame | None = None) -> dict:
    """Every validation table for a run folder: ``attribute_auc``, ``attribute_auc_summary``,
    the tasks' attribute tables (:func:`task_attribute_tables`: ``gep_vectors``,
    ``gep_agreement``), ``gender_kappa``, ``skin_tone`` (DataFrames; a table is absent when its
    label file is) and ``notes`` (why a table is missing). ``majorities``:
    :func:`item_majorities` of ``answers`` when the caller has it already."""
    run_dir = Path(run_dir)
    manifest_path = run_dir / MANIFEST_FILE
    if not manifest_path.is_file():
        raise ValueError(f"{run_dir} is not a run folder (no {MANIFEST_FILE})")
    manifest = pd.read_parquet(manifest_path)
    majorities = item_majorities(answers) if majorities is None else majorities
    out: dict = {"notes": []}
    qtypes = set(majorities["question_type"])
    attributes = _read_label(run_dir, "attributes")
    if "attribute" in qtypes:
        if attributes is None:
            out["notes"].append(f"{LABEL_FILES['attributes'].relpath} is missing: no attribute validation")
        else:
            out["attribute_auc"], out["attribute_auc_summary"] = attribute_auc(majorities, attributes)
            out.update(task_attribute_tables(majorities, attributes, manifest))
    if qtypes & {"gender_single", "gender_paired"}:
        gender = _read_label(run_dir, "gender")
        if gender is None:
            out["notes"].append(f"{LABEL_FILES['gender'].relpath} is missing: no perceived-gender validation")
        else:
            suites = [str(s) for s in dict.fromkeys(manifest["suite"])] if "suite" in manifest.columns else []
            tasks = {s: task for task, its in tasks_of_run(run_dir, suites) for s in its}
            out["gender_kappa"] = gender_kappa(answers, gender, manifest, tasks)
    if "skin_tone" in qtypes:
        skin = _read_label(run_dir, "skin_tone")
        if skin is None:
            out["notes"].append(f"{LABEL_FILES['skin_tone'].relpath} is missing: no skin tone validation")
        else:
            out["skin_tone"] = skin_tone_agreement(answers, skin)
    return out


def _read_label(run_dir: Path, name: str) -> pd.DataFrame | None:
    """A label file of the run, or None when the annotate stage did not write it."""
    path = LABEL_FILES[name].path(run_dir)
    return pd.read_parquet(path) if path.is_file() else None
