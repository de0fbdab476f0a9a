"""Agreement between human annotators: majority vote per item, Fleiss' kappa and
Krippendorff's alpha per question type, and the items they disagree on.

Input is the answers table of the annotation app (``benchmark.human.replay.read_answers``):
one row per answer with the columns :data:`ANSWER_COLUMNS`. An item is one question about
one image (``item_id = f"{probe_id}|{question_type}|{question_key}"``).

The papers ask three annotators per item and take the majority (GEP Sec. 5: "The
majority of the three annotations determine the ground truth labels", Krippendorff's alpha
0.81; PST Sec. 4.4 / Table 1: three annotators, Fleiss' kappa). Here any number of
annotators per item is allowed; ties are reported, never broken silently.

Every statistic comes from :mod:`benchmark.scores.agreement` (statsmodels for Fleiss,
``krippendorff`` for alpha); this module shapes the answers into items x annotators.
"""

from __future__ import annotations

import warnings
from collections import Counter
from typing import Any, Callable

import numpy as np
import pandas as pd

from benchmark.human.question_types import QUESTION_TYPES
from benchmark.scores.agreement import (
    UndefinedStatisticWarning,
    fleiss_kappa,
    krippendorff_alpha,
    majority_vote,
)

ANSWER_COLUMNS = ("item_id", "probe_id", "suite", "question_type", "question_key", "answer", "annotator", "time",
                  "qualification")
# Question types whose answers are ordered numbers (Monk Skin Tone 1..10): alpha is also
# reported at the ordinal level, where 3 vs 4 is a smaller disagreement than 1 vs 10.
ORDINAL_TYPES = ("skin_tone",)
MONK_TONES = tuple(str(i) for i in range(1, 11))

_ITEM_COLUMNS = ("item_id", "probe_id", "suite", "question_type", "question_key")


def validate_answers(answers: pd.DataFrame) -> pd.DataFrame:
    """The answers with every required column, string ids and answers, one answer per
    (item, annotator): a later answer of the same annotator replaces an earlier one (the log
    is append-only, so the last row is the annotator's final word). Raises ``ValueError``."""
    if not isinstance(answers, pd.DataFrame):
        raise ValueError(f"answers must be a pandas DataFrame, got {type(answers).__name__}")
    missing = [c for c in ANSWER_COLUMNS if c not in answers.columns]
    if missing:
        raise ValueError(f"answers lacks column(s) {missing}; expected {list(ANSWER_COLUMNS)}")
    if answers.empty:
        raise ValueError("answers is empty: no human label yet (label images with `t2ibench annotate-ui RUN_DIR`)")
    df = answers.loc[:, list(ANSWER_COLUMNS)].reset_index(drop=True).copy()
    df["question_key"] = df["question_key"].fillna("")
    for col in ("item_id", "probe_id", "suite", "question_type", "question_key", "answer", "annotator"):
        bad = df[col].map(lambda v: not isinstance(v, str))
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(f"answers[{col!r}] row {i} is {df[col].iloc[i]!r}; expected a string")
    for col in ("item_id", "probe_id", "question_type", "answer", "annotator"):
        empty = df[col].str.strip() == ""
        if empty.any():
            raise ValueError(f"answers[{col!r}] row {int(np.flatnonzero(empty.to_numpy())[0])} is empty")
    # One item_id must mean one question: the same id with two question types is corrupt.
    per_item = df.groupby("item_id")[["probe_id", "question_type", "question_key"]].nunique()
    clash = per_item[(per_item > 1).any(axis=1)]
    if not clash.empty:
        raise ValueError(f"item {clash.index[0]!r} appears with different probe / question type / key")
    skin = df["question_type"].isin(ORDINAL_TYPES) & ~df["answer"].isin(MONK_TONES)
    if skin.any():
        i = int(np.flatnonzero(skin.to_numpy())[0])
        raise ValueError(f"skin tone answer {df['answer'].iloc[i]!r} (row {i}) is not a Monk Skin Tone 1..10")
    return df.drop_duplicates(["item_id", "annotator"], keep="last").reset_index(drop=True)


def _labels_per_item(df: pd.DataFrame) -> tuple[pd.DataFrame, list[list[str]], list[list[str]]]:
    """Items (first-appearance order) with their answers and annotators, answer order kept."""
    items = df.drop_duplicates("item_id").loc[:, list(_ITEM_COLUMNS)].reset_index(drop=True)
    grouped = df.groupby("item_id", sort=False)
    answers = [grouped.get_group(i)["answer"].tolist() for i in items["item_id"]]
    annotators = [grouped.get_group(i)["annotator"].tolist() for i in items["item_id"]]
    return items, answers, annotators


def item_majorities(answers: pd.DataFrame) -> pd.DataFrame:
    """One row per item: its fields, ``n_answers``, ``answers`` (list of {annotator, answer}),
    ``majority`` (``None`` on a tie), ``tie``, ``tied_answers``, ``agreement`` (share of the
    answers that equal the most frequent one) and ``unanimous``."""
    df = validate_answers(answers)
    items, labels, annotators = _labels_per_item(df)
    mv = majority_vote(labels)
    out = items.copy()
    out["n_answers"] = [len(x) for x in labels]
    out["answers"] = [[{"annotator": a, "answer": v} for a, v in zip(ann, lab)] for ann, lab in zip(annotators, labels)]
    out["majority"] = pd.Series(mv.labels, dtype=object)  # keep None (pandas 3 would make it NaN)
    out["tie"] = mv.is_tie.astype(bool)
    out["tied_answers"] = [sorted(t) for t in mv.tied_labels]
    out["agreement"] = mv.n_votes / mv.n_annotators
    out["unanimous"] = [len(set(x)) == 1 for x in labels]
    return out


def disagreements(majorities: pd.DataFrame) -> pd.DataFrame:
    """The items whose annotators did not all answer alike (ties first, then by agreement),
    from :func:`item_majorities`."""
    need = {"unanimous", "tie", "agreement", "question_type", "item_id"}
    if not need <= set(majorities.columns):
        raise ValueError(f"majorities must come from item_majorities (needs columns {sorted(need)})")
    out = majorities[~majorities["unanimous"].astype(bool)]
    return out.sort_values(["question_type", "tie", "agreement", "item_id"], ascending=[True, False, True, True],
                           kind="stable").reset_index(drop=True)


def _capture(fn: Callable[[], float]) -> tuple[float, str | None]:
    """Value of a statistic and, when it is undefined (NaN), the reason it warned."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedStatisticWarning)
        value = fn()
    reasons = [str(w.message) for w in caught if issubclass(w.category, UndefinedStatisticWarning)]
    return value, ("; ".join(reasons) or None)


def fleiss_rows(labels: list[list[str]], n_raters: int | None = None) -> tuple[list[list[str]], int]:
    """Items x ``n_raters`` rows for Fleiss' kappa, which needs the same number of raters per
    item. ``n_raters`` defaults to the most common number of answers among items answered at
    least twice (the larger on a tie); items with more answers contribute their first
    ``n_raters`` (answer order), items with fewer are left out. Returns (rows, n_raters)."""
    counts = Counter(len(x) for x in labels if len(x) >= 2)
    if n_raters is None:
        if not counts:
            return [], 0
        n_raters = max(counts, key=lambda k: (counts[k], k))
    if n_raters < 2:
        raise ValueError(f"n_raters must be at least 2, got {n_raters}")
    return [x[:n_raters] for x in labels if len(x) >= n_raters], n_raters


def alpha_matrix(labels: list[list[str]], annotators: list[list[str]]) -> list[list[Any]]:
    """Items x annotators (every annotator a column, ``None`` where one did not answer)."""
    names = list(dict.fromkeys(a for ann in annotators for a in ann))
    col = {a: j for j, a in enumerate(names)}
    rows = []
    for lab, ann in zip(labels, annotators):
        row: list[Any] = [None] * len(names)
        for a, v in zip(ann, lab):
            row[col[a]] = v
        rows.append(row)
    return rows


def agreement_by_question_type(answers: pd.DataFrame, *, n_raters: int | None = None) -> pd.DataFrame:
    """Inter-annotator agreement per question type: one row each with ``n_items``,
    ``n_items_multi`` (answered by at least 2), ``n_annotators``, ``n_answers``,
    ``fleiss_kappa`` (statsmodels; over ``fleiss_items`` items x ``fleiss_raters`` raters,
    see :func:`fleiss_rows`), ``alpha_nominal`` (krippendorff; every answer, missing allowed),
    ``alpha_ordinal`` (skin tone only: Monk tones as ordered numbers), ``n_ties``,
    ``n_disagreements`` and ``notes`` (why a statistic is undefined)."""
    df = validate_answers(answers)
    rows = []
    for qtype, sub in df.groupby("question_type", sort=False):
        _, labels, annotators = _labels_per_item(sub)
        mv = majority_vote(labels)
        notes: list[str] = []
        multi = [x for x in labels if len(x) >= 2]
        f_rows, k = fleiss_rows(labels, n_raters)
        if f_rows:
            fk, why = _capture(lambda: fleiss_kappa(f_rows))
        else:
            fk, why = float("nan"), "Fleiss' kappa needs items answered by at least 2 annotators"
        notes += [why] if why else []
        if multi:
            matrix = alpha_matrix(labels, annotators)
            a_nom, why = _capture(lambda: krippendorff_alpha(matrix, "nominal"))
            notes += [why] if why else []
            a_ord = float("nan")
            if qtype in ORDINAL_TYPES:
                numeric = [[None if v is None else int(v) for v in r] for r in matrix]
                a_ord, why = _capture(lambda: krippendorff_alpha(numeric, "ordinal"))
                notes += [why] if why else []
        else:
            a_nom = a_ord = float("nan")
            notes.append("Krippendorff's alpha needs items answered by at least 2 annotators")
        rows.append({
            "question_type": qtype,
            "n_items": len(labels),
            "n_items_multi": len(multi),
            "n_annotators": int(sub["annotator"].nunique()),
            "n_answers": int(len(sub)),
            "fleiss_kappa": fk,
            "fleiss_items": len(f_rows),
            "fleiss_raters": k,
            "alpha_nominal": a_nom,
            "alpha_ordinal": a_ord if qtype in ORDINAL_TYPES else float("nan"),
            "n_ties": mv.n_ties,
            "n_disagreements": sum(len(set(x)) > 1 for x in labels),
            "notes": "; ".join(dict.fromkeys(notes)),
        })
    order = {q: i for i, q in enumerate(QUESTION_TYPES)}
    out = pd.DataFrame(rows)
    return out.sort_values("question_type", key=lambda s: s.map(lambda q: order.get(q, len(order))),
                           kind="stable").reset_index(drop=True)
