"""GEP vector and score (GEP: Zhang et al., "Auditing Gender Presentation
Differences in Text-to-Image Models", Sec. 3, Eq. 1-2).

Input is long-format: one row per (image, attribute) pair that was checked, with the
existence of the attribute in the image (a 0/1 label, or a probability / similarity
from an automatic estimator, Sec. 4), the image's group (gender indicator) and the
attribute. The same function serves both settings of the paper:

* neutral: each image has one row per attribute (all 15 are checked);
* explicit: each image has one row, for the attribute its prompt asked for.

f_g,a is the mean existence over the rows of (g, a) (Eq. 1 / Eq. 3), the GEP vector is
v_a = f_group_a,a - f_group_b,a and the GEP score is the normalised l1 norm
mean_a |v_a| (Eq. 2).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from benchmark.scores.bootstrap import bootstrap_ci
from benchmark.scores.validation import (
    as_float_array,
    as_str_array,
    check_binary_or_probability,
    check_same_length,
)


def gep_vector(freq_a: Sequence[float], freq_b: Sequence[float]) -> np.ndarray:
    """v_j = f_a,j - f_b,j (Eq. 2), from two frequency vectors over the same attributes."""
    fa = as_float_array("freq_a", freq_a)
    fb = as_float_array("freq_b", freq_b)
    check_same_length(freq_a=fa, freq_b=fb)
    return fa - fb


def gep_score_from_vector(vector: Sequence[float]) -> float:
    """GEP = ||v||_1 / n (Eq. 2): the mean absolute attribute-wise difference."""
    v = as_float_array("vector", vector)
    return float(np.mean(np.abs(v)))


def attribute_frequencies(predictions: Any, groups: Any, attributes: Any) -> pd.DataFrame:
    """f_g,a (Eq. 1): mean existence per (group, attribute) cell; rows = groups, columns = attributes,
    both in order of first appearance. A cell with no rows is NaN."""
    preds, grp, att = _validated(predictions, groups, attributes)
    df = pd.DataFrame({"g": grp, "a": att, "p": preds})
    table = df.pivot_table(index="g", columns="a", values="p", aggfunc="mean", sort=False)
    return table.reindex(index=pd.unique(grp), columns=pd.unique(att))


def gep(
    predictions: Any,
    groups: Any,
    attributes: Any,
    group_a: str = "woman",
    group_b: str = "man",
    *,
    image_ids: Any = None,
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    random_state: int = 0,
    keys: Any = None,
) -> dict:
    """GEP vector and score between ``group_a`` and ``group_b`` (GEP, Eq. 1-2).

    Parameters
    ----------
    predictions : existence of the row's attribute in the row's image, in [0, 1]
        (human 0/1 labels, or CLS probabilities; C / CC similarities are not
        probabilities, use :func:`gep_unbounded` for them).
    groups, attributes : the row's group (e.g. "woman") and attribute (e.g. "in a dress").
    group_a, group_b : v = f_a - f_b. Rows of other groups are ignored, so one table may
        hold several groups (e.g. a non-binary indicator, or the occupation prompts).
    image_ids : optional image identifier per row. With it, the bootstrap resamples
        whole images (all rows of an image together, within group x attribute-set
        strata), which respects the correlation between the 15 labels of one neutral
        image; without it each row is a resampling unit within its group x attribute cell.
    confidence_level, n_resamples, random_state : the bootstrap interval
        (:func:`benchmark.scores.bootstrap.bootstrap_ci`); ``n_resamples=0`` skips it and
        ``gep_score_ci`` is None.
    keys : optional probe id per row, for paired resampling across runs
        (:func:`benchmark.scores.bootstrap.resample_plan`); without a plan it changes nothing.

    Returns
    -------
    dict with ``gep_score`` (in [0, 1] for 0/1 labels; lower = groups presented more
    alike), ``gep_vector`` {attribute: v}, ``frequencies`` {group: {attribute: f}},
    ``counts`` {group: {attribute: rows}}, ``gep_score_ci`` (percentile bootstrap
    interval, see :mod:`benchmark.scores.bootstrap`), ``group_a``, ``group_b``, ``n_units``.
    """
    preds, grp, att = _validated(predictions, groups, attributes)
    check_binary_or_probability("predictions", preds)
    return _gep(preds, grp, att, group_a, group_b, image_ids, confidence_level, n_resamples, random_state,
                keys)


def gep_unbounded(
    predictions: Any,
    groups: Any,
    attributes: Any,
    group_a: str = "woman",
    group_b: str = "man",
    *,
    image_ids: Any = None,
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    random_state: int = 0,
    keys: Any = None,
) -> dict:
    """:func:`gep` for real-valued existence scores: GEP_C / GEP_CC (Sec. 4.1) average
    cosine similarities, which need not lie in [0, 1]. Their scale differs from human
    frequencies, so compare them by rank only (Sec. 4, Table 6)."""
    preds, grp, att = _validated(predictions, groups, attributes)
    return _gep(preds, grp, att, group_a, group_b, image_ids, confidence_level, n_resamples, random_state,
                keys)


def _validated(predictions: Any, groups: Any, attributes: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    preds = as_float_array("predictions", predictions)
    grp = as_str_array("groups", groups)
    att = as_str_array("attributes", attributes)
    check_same_length(predictions=preds, groups=grp, attributes=att)
    return preds, grp, att


def _gep(preds, grp, att, group_a, group_b, image_ids, confidence_level, n_resamples, random_state,
         keys=None) -> dict:
    present = list(pd.unique(grp))
    for name, g in (("group_a", group_a), ("group_b", group_b)):
        if g not in present:
            raise ValueError(f"{name} {g!r} is not in the data; groups present: {present}")
    if group_a == group_b:
        raise ValueError(f"group_a and group_b are both {group_a!r}; GEP compares two different groups")

    keep = (grp == group_a) | (grp == group_b)
    preds, grp, att = preds[keep], grp[keep], att[keep]
    if keys is not None:
        keys = np.asarray(as_str_array("keys", keys), dtype=object)
        if len(keys) != len(keep):
            raise ValueError(f"keys has {len(keys)} entries for {len(keep)} rows")
        keys = keys[keep]
    # codes in order of first appearance: keeps the probe's attribute order
    a_code, uniques = pd.factorize(att)
    a_code, attr_names = a_code.astype(np.int64), [str(a) for a in uniques]
    g_code = (grp == group_b).astype(np.int64)  # 0 = group_a, 1 = group_b
    n_attr = len(attr_names)
    cell = g_code * n_attr + a_code
    counts = np.bincount(cell, minlength=2 * n_attr)
    for j, a in enumerate(attr_names):
        for k, g in enumerate((group_a, group_b)):
            if counts[k * n_attr + j] == 0:
                raise ValueError(f"attribute {a!r} has no rows for group {g!r}; the GEP vector needs both groups")

    def vector_of(rows: np.ndarray) -> np.ndarray:
        sums = np.bincount(cell[rows], weights=preds[rows], minlength=2 * n_attr)
        cnt = np.bincount(cell[rows], minlength=2 * n_attr)
        with np.errstate(invalid="ignore", divide="ignore"):
            f = sums / cnt
        return f[:n_attr] - f[n_attr:]

    all_rows = np.arange(len(preds))
    v = vector_of(all_rows)
    f_all = np.bincount(cell, weights=preds, minlength=2 * n_attr) / counts

    if image_ids is None:
        # Each row is a unit; strata = group x attribute cells: no row moves to another cell, and
        # no cell is left empty (benchmark.scores.bootstrap: sizes kept, or varied by a paired plan).
        n_units, strata, rows_of, first = len(preds), cell, (lambda idx: idx), slice(None)
    else:
        n_units, strata, rows_of, first = _image_units(image_ids, keep, g_code, a_code, n_attr)

    def statistic(idx: np.ndarray) -> float:
        # an attribute without images of both groups among idx (a subset of two runs' rows,
        # t2ibench compare's randomization test) is left out, as the task leaves it out
        v = np.abs(vector_of(rows_of(idx)))
        return float(np.mean(v[np.isfinite(v)]))

    # n_resamples=0 skips the interval (point estimates only, e.g. for the paper checks).
    ci = None if n_resamples == 0 else bootstrap_ci(
        statistic, n_units, strata=strata, confidence_level=confidence_level, n_resamples=n_resamples,
        random_state=random_state, keys=None if keys is None else keys[first])
    return {
        "gep_score": float(np.mean(np.abs(v))),
        "gep_vector": {a: float(v[j]) for j, a in enumerate(attr_names)},
        "frequencies": {g: {a: float(f_all[k * n_attr + j]) for j, a in enumerate(attr_names)}
                        for k, g in enumerate((group_a, group_b))},
        "counts": {g: {a: int(counts[k * n_attr + j]) for j, a in enumerate(attr_names)}
                   for k, g in enumerate((group_a, group_b))},
        "gep_score_ci": None if ci is None else ci.to_dict(),
        "group_a": group_a,
        "group_b": group_b,
        "n_units": int(n_units),
    }


def _image_units(image_ids: Any, keep: np.ndarray, g_code: np.ndarray, a_code: np.ndarray, n_attr: int):
    """Images as bootstrap units: row ranges per image, a stratum per image (its group and the
    set of attributes checked on it), and the first row of each image."""
    ids = np.asarray([str(i) for i in image_ids], dtype=object)
    if len(ids) != len(keep):
        raise ValueError(f"image_ids has {len(ids)} entries for {len(keep)} rows")
    ids = ids[keep]
    # sorted like np.unique (the units' order is the bootstrap's), by hashing instead of sorting every row
    img, uniq = pd.factorize(ids, sort=True)
    order = np.argsort(img, kind="stable")
    lengths = np.bincount(img, minlength=len(uniq))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    strata = []
    for u in range(len(uniq)):
        rows = order[starts[u]:starts[u] + lengths[u]]
        if len(set(g_code[rows].tolist())) > 1:
            raise ValueError(f"image {uniq[u]!r} has rows in both groups")
        strata.append(f"{g_code[rows[0]]}:" + ",".join(map(str, sorted(set(a_code[rows].tolist())))))
    strata = np.asarray(strata, dtype=object)

    def rows_of(idx: np.ndarray) -> np.ndarray:
        # Concatenate the row ranges of the chosen images without a Python loop.
        lens = lengths[idx]
        offsets = np.repeat(starts[idx] - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
        return order[offsets + np.arange(lens.sum())]

    return len(uniq), strata, rows_of, order[starts]
