"""The artificial datasets of GEP (Sec. 6 "Data", App. C, Table 17) built from a
human-labelled run, and the comparison of automatic GEP estimators on them (Tables 5, 8, 9,
18, 19, 21).

The paper: "given an attribute, we randomly sample a number between -1 and 1 as 'an
artificial difference', create two groups (one for women, one for men) of generated images
that have the corresponding frequency difference, and finally, use such two groups of
images as 'an example of difference'". App. C: four scales of differences (Table 17); for
each attribute, 10 samples from each scale, so 15 x 4 x 10 = 600 examples per model (450
for CogView2, whose scale 1.0 could not be built for lack of images with the attributes).
Each example is one dimension of a long GEP vector: its human value is the groups'
frequency difference, an estimator's value is the difference of its mean score over the
same two groups; Kendall's tau-b / MCC of signs (Table 5, mixed over models Table 18),
Pearson (Table 19, "Artificial") and tau-b per kind of example pair (Table 21) compare
them.

What it needs: human majority labels of GEP attribute items (``gep_neutral`` /
``gep_explicit``; the table of :func:`benchmark.human.validation.human_attribute_labels`),
the manifest's ``gender`` (woman / man) and estimator scores per (image, attribute)
(``labels/attributes.parquet``; any estimator, so the variants of Tables 8 and 9 are
compared by adding their scores as further estimators). ``t2ibench agreement`` builds them
through GEP's human validation (:mod:`benchmark.tasks.gep.human_validation`).

Where the paper is silent (this module's choices, recorded in every example):

* group size: not printed. Default: per attribute, min(80, images of each gender with a
  majority label for it); 80 makes every Table 17 difference exact (its finest step is
  0.0125 = 1/80). A target difference d becomes round(d n) positives more among the women
  than the men; ``human_difference`` is the realised (k_w - k_m) / n, not the target.
* which frequencies realise d: the men's count of positives is drawn uniformly among the
  counts that the image pools allow; the women's is that plus round(d n).
* images are drawn without replacement within a group (``replace=True`` allows small
  runs); an example the pools cannot realise is skipped and listed, as CogView2's scale 1.0
  was dropped.
* the differences are sampled with replacement from each scale's 19 values.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from benchmark.annotate.label_files import LABEL_FILES
from benchmark.contract.run_folder import CONFIG_FILE, MANIFEST_FILE
from benchmark.scores.agreement import UndefinedStatisticWarning, vector_agreement

#: GEP Table 17: the scales of differences.
TABLE17_SCALES = (1.0, 0.5, 0.25, 0.125)
#: App. C: differences sampled per attribute and scale.
SAMPLES_PER_SCALE = 10
#: The group size that realises every Table 17 difference exactly (finest step 1/80).
MAX_GROUP_SIZE = 80
PAIR_TYPES = ("SA, SM", "DA, SM", "SA, DM", "DA, DM")  # Table 20/21: same/different attribute, model


def scale_differences(scale: float) -> np.ndarray:
    """The 19 differences of a Table 17 scale: scale x (-0.9, -0.8, ..., 0.8, 0.9)
    (e.g. 0.125 -> -0.1125 ... 0.1125, printed -0.112 ... 0.112)."""
    if not (isinstance(scale, (int, float)) and 0 < scale <= 1 / 0.9):
        raise ValueError(f"a scale must be a number in (0, 1.11], got {scale!r}")
    return np.round(scale * np.arange(-9, 10) / 10, 12)


def estimator_key(estimator: str, annotator: str | None) -> str:
    return estimator if not annotator else f"{estimator} [{annotator}]"


def image_pool(human: pd.DataFrame, attributes: pd.DataFrame, manifest: pd.DataFrame,
               suites: Sequence[str]) -> pd.DataFrame:
    """One row per (image, attribute) of ``suites`` with a human majority: probe_id,
    attribute, group (woman / man), human (0/1) and one column per estimator ("C [encoder]",
    ...) with its score. ``human``: the majority labels (probe_id, suite, attribute, human).
    Rows lacking any estimator's score are dropped, so every estimator is compared on the
    same images."""
    if "gender" not in manifest.columns:
        raise ValueError("manifest lacks the gender column (expected RUN_DIR/manifest.parquet)")
    human = human[human["suite"].isin(list(suites))]
    human = human.merge(manifest[["probe_id", "gender"]].rename(columns={"gender": "group"}), on="probe_id")
    human = human[human["group"].isin(["woman", "man"])]
    auto = attributes.merge(human[["probe_id", "attribute"]], on=["probe_id", "attribute"])
    if auto.empty:
        raise ValueError("no human-labelled GEP (image, attribute) pair has an automatic score")
    auto["key"] = [estimator_key(e, a if isinstance(a, str) else None)
                   for e, a in zip(auto["estimator"], auto["annotator"])]
    wide = auto.pivot_table(index=["probe_id", "attribute"], columns="key", values="score", aggfunc="first")
    wide.columns = [str(c) for c in wide.columns]
    pool = human.merge(wide.reset_index(), on=["probe_id", "attribute"], how="inner")
    est = list(wide.columns)
    pool = pool.dropna(subset=est).reset_index(drop=True)
    return pool[["probe_id", "attribute", "group", "human", *est]]


@dataclass
class ArtificialDataset:
    """``examples``: one row per example (model, attribute, scale, target_difference,
    group_size, k_woman, k_man, human_difference, one column per estimator with its
    difference, woman_images / man_images); ``skipped``: the examples the pools could not
    realise, with the reason; ``estimators``: the estimator columns."""

    examples: pd.DataFrame
    skipped: pd.DataFrame
    estimators: list[str]
    settings: dict = field(default_factory=dict)


def _feasible_range(n: int, d: int, caps: dict) -> tuple[int, int]:
    """Counts k_m of positives among the men such that k_w = k_m + d and both groups of n
    can be drawn from the pools (caps: how many each pool can give)."""
    lo = max(0, -d, n - caps["man_neg"], n - d - caps["woman_neg"])
    hi = min(n, n - d, caps["man_pos"], caps["woman_pos"] - d)
    return lo, hi


def build_artificial_dataset(pool: pd.DataFrame, *, scales: Sequence[float] = TABLE17_SCALES,
                             n_per_scale: int = SAMPLES_PER_SCALE, group_size: int | None = None,
                             replace: bool = False, random_state: int = 0, model: str = "run",
                             attributes: Sequence[str] | None = None) -> ArtificialDataset:
    """GEP App. C from an :func:`image_pool`: for each attribute and each scale,
    ``n_per_scale`` differences sampled from the scale (Table 17), each realised by a group
    of women's and a group of men's images (see the module docstring for the choices)."""
    base = {"probe_id", "attribute", "group", "human"}
    if not base <= set(pool.columns):
        raise ValueError(f"pool lacks {sorted(base - set(pool.columns))}; build it with image_pool()")
    estimators = [c for c in pool.columns if c not in base]
    if not estimators:
        raise ValueError("pool has no estimator score column")
    if pool.empty:
        raise ValueError("no GEP image has both a human majority label and automatic scores")
    if n_per_scale < 1:
        raise ValueError(f"n_per_scale must be at least 1, got {n_per_scale}")
    if group_size is not None and group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")
    for s in scales:
        scale_differences(s)
    rng = np.random.default_rng(random_state)
    attrs = list(dict.fromkeys(pool["attribute"])) if attributes is None else list(attributes)
    rows, skipped = [], []
    for attr in attrs:
        a = pool[pool["attribute"] == attr]
        # per (gender, label) pool: probe ids and the estimators' scores as arrays (fast sampling)
        parts = {}
        for g in ("woman", "man"):
            for h in (1, 0):
                sub = a[(a["group"] == g) & (a["human"] == h)]
                parts[f"{g}_{'pos' if h else 'neg'}"] = (sub["probe_id"].to_numpy(object),
                                                          sub[estimators].to_numpy(float))
        n_w, n_m = int((a["group"] == "woman").sum()), int((a["group"] == "man").sum())
        n = group_size or min(MAX_GROUP_SIZE, n_w, n_m)
        for scale in scales:
            values = scale_differences(scale)
            for target in rng.choice(values, size=n_per_scale, replace=True):
                info = {"model": model, "attribute": attr, "scale": float(scale), "target_difference": float(target)}
                if n == 0:
                    skipped.append({**info, "reason": "no labelled image of one gender for this attribute"})
                    continue
                d = int(round(float(target) * n))
                caps = {k: (n if (replace and len(v[0])) else len(v[0])) for k, v in parts.items()}
                lo, hi = _feasible_range(n, d, caps)
                if lo > hi:
                    skipped.append({**info, "reason": f"the pools (woman {caps['woman_pos']}+/{caps['woman_neg']}-, "
                                    f"man {caps['man_pos']}+/{caps['man_neg']}-) cannot give groups of {n} "
                                    f"with {d:+d} positives"})
                    continue
                k_m = int(rng.integers(lo, hi + 1))
                k_w = k_m + d
                ids, means, freq = {}, {}, {}
                for g, k in (("woman", k_w), ("man", k_m)):
                    (pid_p, sc_p), (pid_n, sc_n) = parts[f"{g}_pos"], parts[f"{g}_neg"]
                    tp = rng.choice(len(pid_p), size=k, replace=replace) if k else np.array([], int)
                    tn = rng.choice(len(pid_n), size=n - k, replace=replace) if n - k else np.array([], int)
                    ids[g] = pid_p[tp].tolist() + pid_n[tn].tolist()
                    means[g] = np.concatenate([sc_p[tp], sc_n[tn]]).mean(axis=0)
                    # the group's human frequency, summed in the same order as the scores
                    freq[g] = np.concatenate([np.ones(k), np.zeros(n - k)]).mean()
                diff = means["woman"] - means["man"]
                rows.append({**info, "group_size": n, "k_woman": k_w, "k_man": k_m,
                             "human_difference": float(freq["woman"] - freq["man"]),
                             **{e: float(diff[j]) for j, e in enumerate(estimators)},
                             "woman_images": ids["woman"], "man_images": ids["man"]})
    cols = ["model", "attribute", "scale", "target_difference", "group_size", "k_woman", "k_man", "human_difference",
            *estimators, "woman_images", "man_images"]
    settings = {"scales": [float(s) for s in scales], "n_per_scale": n_per_scale, "group_size": group_size,
                "replace": replace, "random_state": random_state}
    return ArtificialDataset(pd.DataFrame(rows, columns=cols),
                             pd.DataFrame(skipped, columns=["model", "attribute", "scale", "target_difference",
                                                            "reason"]),
                             estimators, settings)


def compare_estimators(examples: pd.DataFrame, estimators: Sequence[str], *, by_model: bool = True) -> pd.DataFrame:
    """Kendall's tau-b, MCC of signs and Pearson's r of each estimator's differences against
    the human differences: one row per model (Table 5, and Table 19 "Artificial"), plus
    "mix" over all models when there are several (Tables 18, 19 "Mix")."""
    if examples.empty:
        raise ValueError("the artificial dataset has no example")
    missing = [e for e in estimators if e not in examples.columns]
    if missing:
        raise ValueError(f"estimators {missing} are not columns of the examples")
    groups: list[tuple[str, pd.DataFrame]] = []
    models = list(dict.fromkeys(examples["model"]))
    if by_model:
        groups += [(m, examples[examples["model"] == m]) for m in models]
    if len(models) > 1 or not by_model:
        groups.append(("mix", examples))
    rows = []
    for name, sub in groups:
        for e in estimators:
            va = vector_agreement(sub[e].to_numpy(float), sub["human_difference"].to_numpy(float))
            rows.append({"model": name, "estimator": e, "n": va["n"], "kendall_tau_b": va["kendall_tau_b"],
                         "sign_mcc": va["sign_mcc"], "pearson": va["pearson"], "notes": "; ".join(va["notes"].values())})
    return pd.DataFrame(rows, columns=["model", "estimator", "n", "kendall_tau_b", "sign_mcc", "pearson", "notes"])


def tau_b_on_pairs(x: np.ndarray, y: np.ndarray, i: np.ndarray, j: np.ndarray) -> tuple[float, int]:
    """Kendall's tau-b restricted to the pairs (i[k], j[k]): (C - D) / sqrt((C + D + T_x)(C + D + T_y)),
    T_x / T_y the pairs tied in x only / y only (pairs tied in both count in neither), as
    scipy's tau-b over all pairs. NaN when the denominator is 0."""
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    s = dx * dy
    c, d = int((s > 0).sum()), int((s < 0).sum())
    tx, ty = int(((dx == 0) & (dy != 0)).sum()), int(((dy == 0) & (dx != 0)).sum())
    denom = math.sqrt((c + d + tx) * (c + d + ty))
    return (float("nan") if denom == 0 else (c - d) / denom), int(len(i))


def tau_b_by_pair_type(examples: pd.DataFrame, estimators: Sequence[str]) -> pd.DataFrame:
    """Kendall's tau-b of each estimator on the four kinds of example pairs of GEP
    App. D.3 / Table 21: same or different attribute (A) x same or different model (M).
    One row per estimator with the tau and pair count of each kind (NaN when a kind has no
    pair, e.g. DM kinds with a single run)."""
    if examples.empty:
        raise ValueError("the artificial dataset has no example")
    n = len(examples)
    i, j = np.triu_indices(n, k=1)
    attr = examples["attribute"].to_numpy()
    model = examples["model"].to_numpy()
    same_a, same_m = attr[i] == attr[j], model[i] == model[j]
    masks = {"SA, SM": same_a & same_m, "DA, SM": ~same_a & same_m, "SA, DM": same_a & ~same_m,
             "DA, DM": ~same_a & ~same_m}
    y = examples["human_difference"].to_numpy(float)
    rows = []
    for e in estimators:
        x = examples[e].to_numpy(float)
        row: dict = {"estimator": e}
        for kind, mask in masks.items():
            tau, count = tau_b_on_pairs(x, y, i[mask], j[mask])
            row[kind] = tau
            row[f"n_pairs {kind}"] = count
        rows.append(row)
    return pd.DataFrame(rows)


def artificial_from_run(run_dir, human: pd.DataFrame, suites: Sequence[str], **kwargs) -> ArtificialDataset:
    """:func:`build_artificial_dataset` from a run folder's label files and the human majority
    labels of its attribute items (``human``: probe_id, suite, attribute, human), images of
    ``suites``; ``model`` defaults to the run's model id."""
    run_dir = Path(run_dir)
    attributes = LABEL_FILES["attributes"].relpath
    for rel in (MANIFEST_FILE, attributes):
        if not (run_dir / rel).is_file():
            raise ValueError(f"{run_dir / rel} is missing: the artificial datasets need it")
    if "model" not in kwargs:
        try:
            cfg = json.loads((run_dir / CONFIG_FILE).read_text(encoding="utf-8"))
            kwargs["model"] = str((cfg.get("model") or {}).get("model_id") or (cfg.get("model") or {}).get("spec")
                                  or run_dir.name)
        except (OSError, ValueError):
            kwargs["model"] = run_dir.name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        pool = image_pool(human, pd.read_parquet(run_dir / attributes), pd.read_parquet(run_dir / MANIFEST_FILE),
                          suites)
    return build_artificial_dataset(pool, **kwargs)
