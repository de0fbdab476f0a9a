"""What people's labels of the calibration sample measure about the annotator (results.json's
``human_labels.annotator_errors`` and ``human_labels.shares``):

* its error rate per group, with Wilson intervals: overall, by people's own answer (how often an
  image people see as a woman is read otherwise), and by skin tone (people's Monk tone where they
  gave one, else the annotator's): light MST 1-3, medium 4-7, dark 8-10. An error is any difference
  from people's label (more than one tone apart for skin tones). Only images of the random sample
  (or a census) count, so the rates describe the audit's images, not the ones people chose;
* for a label file whose values are no label (detections), the annotator's and people's rows both
  judged by the task's own rule (an image right or wrong for its skill) and compared;
* the share of images in each category corrected with people's labels (PPI++ through ppi-python:
  :func:`benchmark.scores.ppi.corrected_share`) beside the annotator's share: perceived gender per
  person position, and the skin tone groups.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd

from benchmark.annotate.label_files import LABEL_FILES
from benchmark.extras import MissingExtraError
from benchmark.runner.human_correction import HumanLabels, HumanTable
from benchmark.scores import ppi
from benchmark.tasks.context import ScoringContext

__all__ = ["SKIN_GROUPS", "skin_group", "annotator_errors", "corrected_shares"]

#: Monk Skin Tone groups the error rates and shares are broken down by
SKIN_GROUPS = (("light (MST 1-3)", 1, 3), ("medium (MST 4-7)", 4, 7), ("dark (MST 8-10)", 8, 10))
WHO = ("estimator", "annotator")


def skin_group(tone) -> str | None:
    """The :data:`SKIN_GROUPS` name of a Monk tone (None when there is none)."""
    try:
        t = int(tone)
    except (TypeError, ValueError):
        return None
    return next((name for name, lo, hi in SKIN_GROUPS if lo <= t <= hi), None)


def _skin_of(ctx: ScoringContext, human: HumanLabels) -> dict[str, str]:
    """probe_id -> skin tone group: people's tone where they gave one, else the annotator's."""
    out: dict[str, str] = {}
    auto = ctx.label("skin_tone")
    if auto is not None and {"probe_id", "mst"} <= set(auto.columns):
        for pid, tone in zip(auto["probe_id"].astype(str), auto["mst"]):
            g = skin_group(tone)
            if g:
                out.setdefault(pid, g)
    people = human.tables.get("skin_tone")
    if people is not None and "mst" in people.frame.columns:
        for pid, tone in zip(people.frame["probe_id"].astype(str), people.frame["mst"]):
            g = skin_group(tone)
            if g:
                out[pid] = g
    return out


def _judged(ctx: ScoringContext, table: HumanTable, rows: pd.DataFrame) -> np.ndarray:
    """``table.judged`` of label rows joined with their probe fields (the task's rule, its config)."""
    fields = ctx.manifest.loc[:, [c for c in ctx.manifest.columns if c not in rows.columns or c == "probe_id"]]
    joined = rows.merge(fields, on="probe_id", how="left")
    return np.asarray(table.judged(joined, ctx.family_config(table.family)), dtype=object)


def _joined(ctx: ScoringContext, table: HumanTable, probes: set[str]) -> pd.DataFrame | None:
    """The annotator's rows of the labelled images beside people's value (column ``people``): the
    first value column, or both rows judged by the task's rule (``table.judged``)."""
    auto = ctx.label(table.kind)
    value = table.values[0]
    if auto is None or value not in auto.columns:
        return None
    rows = auto[auto["probe_id"].astype(str).isin(probes)].reset_index(drop=True)
    keys = list(table.keys)
    if table.judged is not None:
        people = table.frame.loc[:, keys].assign(people=_judged(ctx, table, table.frame))
        rows = rows.assign(**{value: _judged(ctx, table, rows)})
        if table.annotator_column != "annotator" and table.annotator_column in rows.columns:
            rows = rows.assign(annotator=rows[table.annotator_column])
    else:
        people = table.frame.loc[:, keys + [value]].rename(columns={value: "people"})
    joined = rows.merge(people, on=keys, how="inner")
    for col in WHO:
        joined[col] = joined[col].fillna("").astype(str) if col in joined.columns else ""
    suite = ctx.manifest.set_index("probe_id")["suite"]
    joined["suite"] = joined["probe_id"].map(suite).astype(str)
    return joined.rename(columns={value: "auto"})


def _wrong(frame: pd.DataFrame, tolerance: float) -> np.ndarray:
    if tolerance > 0:
        a = pd.to_numeric(frame["auto"], errors="coerce").to_numpy(float)
        p = pd.to_numeric(frame["people"], errors="coerce").to_numpy(float)
        return ~(np.abs(a - p) <= tolerance)  # no automatic value (no face found) counts as an error
    return frame["auto"].astype(str).to_numpy() != frame["people"].astype(str).to_numpy()


def _groups(frame: pd.DataFrame, table: HumanTable, skin: dict[str, str]) -> Iterator[tuple[str, str, pd.Series]]:
    yield "all", "all", pd.Series(True, index=frame.index)
    people = frame["people"].map(skin_group) if table.tolerance > 0 else frame["people"].astype(str)
    for g in sorted(set(people.dropna())):
        yield "people's label", str(g), people == g
    tone = frame["probe_id"].astype(str).map(skin)
    for name, _, _ in SKIN_GROUPS:
        if (tone == name).any():
            yield "skin tone", name, tone == name


def annotator_errors(ctx: ScoringContext, human: HumanLabels) -> list[dict]:
    """One row per label file, suite, annotator and group: the annotator's error rate on the
    images whose people's labels count for correction, with its Wilson interval."""
    rows, skin, level = [], _skin_of(ctx, human), ctx.options.confidence_level
    for table in human.tables.values():
        joined = _joined(ctx, table, human.probes)
        if joined is None or joined.empty:
            continue
        joined["wrong"] = _wrong(joined, table.tolerance)
        for (suite, est, ann), sub in joined.groupby(["suite", *WHO], sort=True):
            for by, group, mask in _groups(sub, table, skin):
                part = sub[mask.to_numpy()]
                rows.append({"file": LABEL_FILES[table.kind].relpath, "suite": suite, "estimator": est or None,
                             "annotator": ann or None, "by": by, "group": group,
                             **ppi.error_rate(int(part["wrong"].sum()), len(part), confidence_level=level)})
    return rows


def _share_rows(ctx: ScoringContext, human: HumanLabels, table: HumanTable) -> Iterator[dict]:
    """Category shares of one label file: per suite, annotator and (gender) person position."""
    auto = ctx.label(table.kind)
    value = table.values[0]
    if auto is None or value not in auto.columns:
        return
    kept = ctx.images.index.astype(str)
    auto = auto[auto["probe_id"].astype(str).isin(set(kept))].copy()
    for col in WHO:
        auto[col] = auto[col].fillna("").astype(str) if col in auto.columns else ""
    auto["suite"] = auto["probe_id"].map(ctx.manifest.set_index("probe_id")["suite"]).astype(str)
    position = "person" if "person" in auto.columns else None
    grouped = auto.groupby(["suite", *WHO] + ([position] if position else []), sort=True)
    people = table.frame.set_index(list(table.keys))[value]
    categorise = skin_group if table.tolerance > 0 else (lambda v: None if pd.isna(v) else str(v))
    for keys, sub in grouped:
        suite = keys[0]
        labelled = human.labelled.get(suite) or set()
        lab = sub[sub["probe_id"].astype(str).isin(labelled)]
        rest = sub[~sub["probe_id"].astype(str).isin(labelled)]
        truth = [people.get(tuple(r[k] for k in table.keys) if len(table.keys) > 1 else r[table.keys[0]])
                 for _, r in lab.iterrows()]
        people_cat = pd.Series([categorise(v) for v in truth], index=lab.index)
        auto_cat, rest_cat = lab[value].map(categorise), rest[value].map(categorise)
        ok = people_cat.notna()
        if ok.sum() < ppi.MIN_HUMAN_LABELS:
            continue
        for cat in sorted(set(people_cat.dropna()) | set(auto_cat.dropna())):
            c = ppi.corrected_share((people_cat[ok] == cat).astype(float), (auto_cat[ok] == cat).astype(float),
                                    (rest_cat == cat).astype(float), confidence_level=ctx.options.confidence_level)
            yield {"file": LABEL_FILES[table.kind].relpath, "suite": suite, "estimator": keys[1] or None,
                   "annotator": keys[2] or None, "position": keys[3] if position else None, "category": cat,
                   "automatic": float((sub[value].map(categorise) == cat).mean()), **c.to_dict()}


def corrected_shares(ctx: ScoringContext, human: HumanLabels) -> tuple[list[dict], str | None]:
    """(rows, why none) of the category shares corrected by PPI++; the reason when ppi-python is
    not installed."""
    rows: list[dict] = []
    try:
        for table in human.tables.values():
            if table.shares:
                rows += list(_share_rows(ctx, human, table))
    except MissingExtraError as exc:
        return [], str(exc)
    return rows, None
