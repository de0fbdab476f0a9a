"""Agreement statistics: between human annotators, and between an automatic annotator
and humans. Used to validate the automatic labels every score relies on.

Where the papers use them:

* majority vote of 3 annotators as ground truth, Krippendorff's alpha between
  annotators (GEP, Zhang et al., Sec. 5 "Human Annotation": alpha = 0.81);
* Fleiss' kappa between 3 annotators (PST, Wan & Chang, Table 1) and Cohen's kappa
  between a VQA model and the humans, averaged (PST, App. E, Table 12);
* automatic vs human GEP vectors (GEP, Sec. 6 and App. D): Kendall's tau-b of the
  values, MCC of their signs (non-negative -> +1, negative -> -1), Pearson's r
  (Table 19), and ROC-AUC of automatic existence scores against human labels per
  attribute, averaged over attributes (Table 7 = mean of Table 16).

Every statistic comes from scipy, scikit-learn, statsmodels or ``krippendorff``; this
module validates inputs and decides what to do where a statistic is undefined.

Undefined statistics: a statistic whose formula divides by zero on the given input
(a constant rating vector, a single class for ROC-AUC, expected agreement 1 for a
kappa) is returned as ``nan`` and an :class:`UndefinedStatisticWarning` says why.
Malformed input (different lengths, empty, NaN in scores, wrong shape, labels outside
``categories``) raises ``ValueError``.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence

import krippendorff
import numpy as np
from scipy import stats
from sklearn.metrics import cohen_kappa_score, matthews_corrcoef, roc_auc_score
from statsmodels.stats import inter_rater

from benchmark.scores.validation import as_float_array, as_str_array, check_same_length


class UndefinedStatisticWarning(RuntimeWarning):
    """A statistic is undefined on this input (returned as NaN); the message says why."""


def _undefined(name: str, reason: str) -> float:
    warnings.warn(f"{name} is undefined: {reason}; returning nan", UndefinedStatisticWarning, stacklevel=3)
    return float("nan")


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _rating_matrix(name: str, annotations: Any, *, allow_missing: bool) -> list[list]:
    """Items x annotators as lists (ragged allowed only with ``allow_missing``)."""
    if isinstance(annotations, np.ndarray):
        annotations = annotations.tolist()
    if isinstance(annotations, (str, bytes)) or not hasattr(annotations, "__len__"):
        raise ValueError(f"{name} must be a list of items, each a list of annotator labels")
    rows = []
    for i, item in enumerate(annotations):
        if isinstance(item, (str, bytes)) or not hasattr(item, "__iter__"):
            raise ValueError(f"{name}[{i}] must be a list of annotator labels, got {item!r}")
        rows.append([None if _is_missing(v) else v for v in item])
    if not rows:
        raise ValueError(f"{name} is empty")
    widths = {len(r) for r in rows}
    if not allow_missing:
        if len(widths) != 1:
            raise ValueError(f"{name} must have the same number of annotators for every item, got {sorted(widths)}")
        if any(v is None for r in rows for v in r):
            raise ValueError(f"{name} has missing labels; Fleiss' kappa needs every annotator to label every item "
                             "(use krippendorff_alpha for incomplete data)")
    if min(widths) == 0 and not allow_missing:
        raise ValueError(f"{name} has items with no annotator")
    return rows


# --- Majority vote -----------------------------------------------------------------

@dataclass(frozen=True)
class MajorityVote:
    """Per item: the majority label (``None`` on a tie), whether it is a tie, the winning
    vote count, the number of votes, and the labels tied for first place."""

    labels: list
    is_tie: np.ndarray
    n_votes: np.ndarray
    n_annotators: np.ndarray
    tied_labels: list

    @property
    def n_ties(self) -> int:
        return int(self.is_tie.sum())


def majority_vote(annotations: Any) -> MajorityVote:
    """Majority label of each item over any number of annotators (GEP Sec. 5: the
    majority of three annotations is the ground truth).

    ``annotations`` is items x annotators; items may have different numbers of labels,
    and ``None`` / NaN mark a missing label. A tie (several labels share the top count)
    is reported: ``labels[i]`` is ``None``, ``is_tie[i]`` is True and ``tied_labels[i]``
    lists the tied labels; the caller decides (the papers use 3 annotators on binary
    questions, where no tie can occur).
    """
    rows = _rating_matrix("annotations", annotations, allow_missing=True)
    labels, ties, top, n, tied = [], [], [], [], []
    for i, row in enumerate(rows):
        votes = Counter(v for v in row if v is not None)
        if not votes:
            raise ValueError(f"annotations[{i}] has no label")
        best = max(votes.values())
        winners = [v for v, c in votes.items() if c == best]
        labels.append(winners[0] if len(winners) == 1 else None)
        ties.append(len(winners) > 1)
        top.append(best)
        n.append(sum(votes.values()))
        tied.append(winners if len(winners) > 1 else [])
    return MajorityVote(labels, np.asarray(ties), np.asarray(top), np.asarray(n), tied)


# --- Between annotators ------------------------------------------------------------

def fleiss_kappa(annotations: Any, categories: Sequence[Hashable] | None = None) -> float:
    """Fleiss' kappa of items x annotators labels (PST, Table 1), via statsmodels.

    Every item needs the same number (>= 2) of labels. ``categories`` (optional) fixes the
    category list; a label outside it raises ``ValueError``. Undefined (NaN) when the
    expected agreement is 1, i.e. every label is the same category.
    """
    rows = _rating_matrix("annotations", annotations, allow_missing=False)
    if len(rows[0]) < 2:
        raise ValueError("Fleiss' kappa needs at least 2 annotators per item")
    cats = list(dict.fromkeys(v for r in rows for v in r)) if categories is None else list(categories)
    index = {c: j for j, c in enumerate(cats)}
    for i, r in enumerate(rows):
        for v in r:
            if v not in index:
                raise ValueError(f"annotations[{i}] has label {v!r}; expected one of {cats}")
    codes = np.array([[index[v] for v in r] for r in rows])
    table, _ = inter_rater.aggregate_raters(codes, n_cat=len(cats))
    if np.count_nonzero(table.sum(axis=0)) < 2:
        return _undefined("Fleiss' kappa", "every label is the same category (expected agreement is 1)")
    return float(inter_rater.fleiss_kappa(table, method="fleiss"))


def krippendorff_alpha(annotations: Any, level_of_measurement: str = "nominal") -> float:
    """Krippendorff's alpha of items x annotators labels (GEP Sec. 5), via ``krippendorff``.

    Missing labels (``None`` / NaN, or ragged rows) are allowed. ``nominal`` (default)
    accepts any labels; ``ordinal`` / ``interval`` / ``ratio`` need numbers. Undefined
    (NaN) when fewer than two distinct values occur among items labelled at least twice.
    """
    if level_of_measurement not in ("nominal", "ordinal", "interval", "ratio"):
        raise ValueError(f"level_of_measurement must be nominal, ordinal, interval or ratio, "
                         f"got {level_of_measurement!r}")
    rows = _rating_matrix("annotations", annotations, allow_missing=True)
    width = max(len(r) for r in rows)
    values = [v for r in rows for v in r if v is not None]
    if not values:
        raise ValueError("annotations has no label")
    if level_of_measurement == "nominal":
        index = {c: j for j, c in enumerate(dict.fromkeys(values))}
        to_num = lambda v: float(index[v])  # noqa: E731
    else:
        def to_num(v: Any) -> float:
            if isinstance(v, (bool, str)) or not isinstance(v, (int, float, np.number)):
                raise ValueError(f"{level_of_measurement} alpha needs numeric labels, got {v!r}")
            return float(v)
    data = np.full((width, len(rows)), np.nan)  # krippendorff wants annotators x items
    for i, r in enumerate(rows):
        for j, v in enumerate(r):
            if v is not None:
                data[j, i] = to_num(v)
    pairable = np.sum(~np.isnan(data), axis=0) >= 2
    if not pairable.any():
        raise ValueError("Krippendorff's alpha needs at least one item labelled by two annotators")
    if len(np.unique(data[:, pairable][~np.isnan(data[:, pairable])])) < 2:
        return _undefined("Krippendorff's alpha", "every pairable label has the same value (no disagreement "
                          "is possible, expected disagreement is 0)")
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level_of_measurement))


# --- Automatic vs human: labels ----------------------------------------------------

def _paired_labels(a: Any, b: Any, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(list(a), dtype=object), np.asarray(list(b), dtype=object)
    check_same_length(**{names[0]: x, names[1]: y})
    if x.size == 0:
        raise ValueError(f"{names[0]} is empty")
    for name, arr in zip(names, (x, y)):
        for i, v in enumerate(arr):
            if _is_missing(v):
                raise ValueError(f"{name}[{i}] is missing (None or NaN)")
    return x, y


def cohen_kappa(labels_a: Any, labels_b: Any, weights: str | None = None,
                labels: Sequence[Hashable] | None = None) -> float:
    """Cohen's kappa of two label sequences (PST Table 12), via scikit-learn.

    ``weights`` None / "linear" / "quadratic" as in sklearn. ``labels`` (optional) is the
    ordered list of every category, e.g. Monk Skin Tones 1..10: weighted kappa then
    penalises a disagreement by its distance in that list (without it sklearn uses the
    position among the labels present, so 1 vs 5 counts as adjacent when 2-4 never occur);
    a label outside it raises ``ValueError``. Undefined (NaN) when the expected agreement
    is 1 (both raters always give the same single label).
    """
    x, y = _paired_labels(labels_a, labels_b, ("labels_a", "labels_b"))
    if len(set(x.tolist()) | set(y.tolist())) < 2:
        return _undefined("Cohen's kappa", "both raters give one and the same label throughout "
                          "(expected agreement is 1)")
    if labels is not None:
        labels = list(labels)
        outside = [v for v in np.concatenate([x, y]).tolist() if v not in set(labels)]
        if outside:
            raise ValueError(f"label {outside[0]!r} is not in labels {labels}")
        return float(cohen_kappa_score(x.tolist(), y.tolist(), labels=labels, weights=weights))
    # sklearn sorts the labels; mixed types (e.g. 1 and "1") cannot be sorted: map to str.
    if len({type(v) for v in np.concatenate([x, y])}) > 1:
        x, y = x.astype(str), y.astype(str)
    return float(cohen_kappa_score(x.tolist(), y.tolist(), weights=weights))


def cohen_kappa_vs_annotators(predictions: Any, annotations: Any) -> dict:
    """Cohen's kappa of automatic labels against each human annotator and against their
    majority (PST App. E, Table 12 reports the average over annotators).

    ``annotations`` is items x annotators with the same number of annotators per item.
    Returns ``per_annotator`` (list), ``mean`` (over annotators whose kappa is defined)
    and ``vs_majority`` (items with a tied majority are left out).
    """
    rows = _rating_matrix("annotations", annotations, allow_missing=False)
    preds = list(predictions)
    check_same_length(predictions=preds, annotations=rows)
    per = [cohen_kappa(preds, [r[j] for r in rows]) for j in range(len(rows[0]))]
    mv = majority_vote(rows)
    keep = ~mv.is_tie
    vs_majority = (cohen_kappa([p for p, k in zip(preds, keep) if k], [l for l, k in zip(mv.labels, keep) if k])
                   if keep.any() else _undefined("Cohen's kappa vs majority", "every item is a tie"))
    defined = [k for k in per if not math.isnan(k)]
    mean = float(np.mean(defined)) if defined else _undefined("mean Cohen's kappa", "no annotator's kappa is defined")
    return {"per_annotator": per, "mean": mean, "vs_majority": vs_majority, "n_ties": mv.n_ties}


def _binary(name: str, values: Any) -> np.ndarray:
    arr = as_float_array(name, values)
    if not np.all(np.isin(arr, (0.0, 1.0))):
        bad = arr[~np.isin(arr, (0.0, 1.0))][0]
        raise ValueError(f"{name} must be binary labels 0/1, got {bad}")
    return arr.astype(int)


def mcc(labels_a: Any, labels_b: Any) -> float:
    """Matthews correlation of two binary (0/1) label sequences, via scikit-learn.

    Undefined (NaN) when either side is constant (sklearn would return 0).
    """
    a, b = _binary("labels_a", labels_a), _binary("labels_b", labels_b)
    check_same_length(labels_a=a, labels_b=b)
    return _mcc(a, b, "MCC")


def _mcc(a: np.ndarray, b: np.ndarray, name: str) -> float:
    for side, arr in (("first", a), ("second", b)):
        if len(np.unique(arr)) < 2:
            return _undefined(name, f"the {side} input has a single class")
    return float(matthews_corrcoef(a, b))


def roc_auc(scores: Any, labels: Any) -> float:
    """ROC-AUC of automatic scores against 0/1 human labels (GEP Table 16), via scikit-learn.

    Undefined (NaN) when the labels hold a single class.
    """
    s = as_float_array("scores", scores)
    y = _binary("labels", labels)
    check_same_length(scores=s, labels=y)
    if len(np.unique(y)) < 2:
        return _undefined("ROC-AUC", "the human labels hold a single class")
    return float(roc_auc_score(y, s))


def roc_auc_per_group(scores: Any, labels: Any, groups: Any) -> dict:
    """ROC-AUC per group (e.g. attribute; GEP Table 16) and their mean (Table 7).

    Groups whose AUC is undefined (one class) are NaN in ``per_group`` and left out of
    ``mean``; ``n_undefined`` counts them.
    """
    s = as_float_array("scores", scores)
    y = _binary("labels", labels)
    g = as_str_array("groups", groups)
    check_same_length(scores=s, labels=y, groups=g)
    per = {}
    for name in dict.fromkeys(g.tolist()):
        m = g == name
        per[name] = roc_auc(s[m], y[m])
    defined = [v for v in per.values() if not math.isnan(v)]
    mean = float(np.mean(defined)) if defined else _undefined("mean ROC-AUC", "no group has both classes")
    return {"per_group": per, "mean": mean, "n_undefined": len(per) - len(defined)}


# --- Automatic vs human: vectors (GEP Sec. 6, App. D) -------------------------

def _paired_floats(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = as_float_array("predictions", x), as_float_array("references", y)
    check_same_length(predictions=a, references=b)
    return a, b


def kendall_tau_b(predictions: Any, references: Any) -> float:
    """Kendall's tau-b (GEP Sec. 6, App. D), via ``scipy.stats.kendalltau``.

    Undefined (NaN) with fewer than 2 values or when either side is constant.
    """
    a, b = _paired_floats(predictions, references)
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return _undefined("Kendall's tau-b", "an input is constant or has fewer than 2 values")
    return float(stats.kendalltau(a, b, variant="b").statistic)


def signs(values: Any) -> np.ndarray:
    """+1 for non-negative values, -1 for negative ones (GEP App. D): a zero
    difference counts as positive."""
    return np.where(as_float_array("values", values) >= 0, 1, -1)


def sign_mcc(predictions: Any, references: Any) -> float:
    """MCC of the signs of two vectors (GEP Sec. 6 footnote 9 and App. D).

    Each value becomes +1 if >= 0 and -1 if < 0, so zeros count as positive. Undefined
    (NaN) when either side has a single sign.
    """
    a, b = _paired_floats(predictions, references)
    return _mcc(signs(a), signs(b), "MCC of signs")


def pearson(predictions: Any, references: Any) -> float:
    """Pearson's r (GEP App. D.2, Table 19), via ``scipy.stats.pearsonr``.

    Undefined (NaN) with fewer than 2 values or when either side is constant.
    """
    a, b = _paired_floats(predictions, references)
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return _undefined("Pearson's r", "an input is constant or has fewer than 2 values")
    return float(stats.pearsonr(a, b).statistic)


# --- Bundles used by the evaluate module -------------------------------------------

def _collect(out: dict, notes: dict, key: str, fn: Callable[[], Any]) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedStatisticWarning)
        out[key] = fn()
    reasons = [str(w.message) for w in caught if issubclass(w.category, UndefinedStatisticWarning)]
    if reasons:
        notes[key] = "; ".join(reasons)


def binary_agreement(predictions: Any, references: Any, groups: Any = None, threshold: float = 0.5) -> dict:
    """Automatic scores or 0/1 labels against 0/1 human labels.

    ``roc_auc`` uses the raw scores; ``cohen_kappa``, ``mcc`` and ``accuracy`` use
    ``predictions >= threshold`` as the automatic label. With ``groups`` (e.g. the
    attribute of each row) also ``roc_auc_per_group`` and ``roc_auc_mean`` (their mean,
    GEP Table 7). ``notes`` says why any statistic is NaN.
    """
    s = as_float_array("predictions", predictions)
    y = _binary("references", references)
    check_same_length(predictions=s, references=y)
    pred_labels = (s >= threshold).astype(int)
    out: dict = {}
    notes: dict = {}
    _collect(out, notes, "roc_auc", lambda: roc_auc(s, y))
    _collect(out, notes, "cohen_kappa", lambda: cohen_kappa(pred_labels, y))
    _collect(out, notes, "mcc", lambda: mcc(pred_labels, y))
    out["accuracy"] = float(np.mean(pred_labels == y))
    if groups is not None:
        per: dict = {}
        _collect(per, notes, "roc_auc_per_group", lambda: roc_auc_per_group(s, y, groups))
        out["roc_auc_per_group"] = per["roc_auc_per_group"]["per_group"]
        out["roc_auc_mean"] = per["roc_auc_per_group"]["mean"]
    out["n"] = int(s.size)
    out["threshold"] = float(threshold)
    out["notes"] = notes
    return out


def vector_agreement(predictions: Any, references: Any) -> dict:
    """Automatic against human vectors (e.g. GEP vectors; GEP Tables 4-5, 19):
    ``kendall_tau_b``, ``sign_mcc``, ``pearson``, ``n``; ``notes`` says why any is NaN."""
    a, b = _paired_floats(predictions, references)
    out: dict = {}
    notes: dict = {}
    _collect(out, notes, "kendall_tau_b", lambda: kendall_tau_b(a, b))
    _collect(out, notes, "sign_mcc", lambda: sign_mcc(a, b))
    _collect(out, notes, "pearson", lambda: pearson(a, b))
    out["n"] = int(a.size)
    out["notes"] = notes
    return out
