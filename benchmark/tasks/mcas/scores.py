"""Multimodal Composite Association Score (MCAS: Mandal, Leavy, Little, "Multimodal
Composite Association Score: Measuring Gender Bias in Generative Multimodal Models",
Eq. 1-2; Generated Bias: "Generated Bias", Sec. 3, Eq. 1-3).

WEAT-style association of one target embedding w with two attribute sets (Eq. 1):

    s(w, A, B) = mean_{a in A} cos(w, a) - mean_{b in B} cos(w, b)

This is Caliskan et al.'s association s(w, A, B) itself, *not* WEAT's effect size: the
papers do not divide by a standard deviation. An association score is the mean of s
over a set of targets W (MCAS eq. (1), Generated Bias Eq. 2). The four components differ
in the modality of the targets and attributes (MCAS, "MCAS and its Components"):

    II   target images  x image attributes
    ITP  target prompts (text) x image attributes
    ITA  target images  x text attributes
    TT   target text    x text attributes   (the text encoder's own association)

and MCAS = II + ITP + ITA + TT (MCAS eq. (2), Generated Bias Eq. 3). A is the male set:
positive leans male, negative female. Each component is in [-2, 2] (a difference of two
mean cosines), so MCAS is in [-8, 8]; real CLIP values are a few hundredths.

Per target keyword (MCAS Figs. 3-6, Generated Bias Table 3) W is that keyword's generated
images (II, ITA) or its text (ITP, TT). The overall components are the mean over
keywords (each keyword weighs the same, whatever its number of images), so the overall
MCAS is the mean of the per-keyword MCAS, as MCAS Table 5 averages per category.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd
from sklearn.metrics.pairwise import cosine_similarity

from benchmark.scores.bootstrap import bootstrap_ci
from benchmark.tasks.generated_bias.scores import (
    COMPONENTS,
    DEFAULT_ZERO_TOL,
    UNDEFINED_REASON,
    bias_amplification_values,
    diffusion_bias_values,
    internal_bias_table,
    summarise,
)
from benchmark.scores.validation import as_float_array, as_str_array, check_in, check_same_length

ROLES = ("target_image", "target_text", "attribute_a_image", "attribute_a_text", "attribute_b_image",
         "attribute_b_text")
ATTRIBUTE_ROLES = ROLES[2:]
# component -> (target modality, attribute modality), MCAS "MCAS and its Components".
COMPONENT_MODALITIES = {"II": ("image", "image"), "ITP": ("text", "image"), "ITA": ("image", "text"),
                        "TT": ("text", "text")}
PER_TARGET_KEYS = ("mcas", *COMPONENTS, "diffusion_bias", "bias_amplification")


def _matrix(name: str, x: Any) -> np.ndarray:
    m = as_float_array(name, x, ndim=2)
    # cos is undefined for a zero vector; sklearn would silently give 0.
    zero = np.flatnonzero(np.linalg.norm(m, axis=1) == 0)
    if zero.size:
        raise ValueError(f"{name} row {int(zero[0])} is a zero vector: its cosine similarity is undefined")
    return m


def weat_association(w: Any, a: Any, b: Any) -> np.ndarray:
    """s(w, A, B) for each row of ``w`` (MCAS Eq. "s(w,A,B)"; Generated Bias Eq. 1).

    ``w`` (n x d), ``a`` (n_a x d), ``b`` (n_b x d): embeddings. Positive = closer to A.
    """
    w, a, b = _matrix("w", w), _matrix("A", a), _matrix("B", b)
    if not (w.shape[1] == a.shape[1] == b.shape[1]):
        raise ValueError(f"embedding dimensions differ: w {w.shape[1]}, A {a.shape[1]}, B {b.shape[1]}")
    return cosine_similarity(w, a).mean(axis=1) - cosine_similarity(w, b).mean(axis=1)


def association_score(w: Any, a: Any, b: Any) -> float:
    """mean_{w in W} s(w, A, B) (MCAS eq. (1); Generated Bias Eq. 2)."""
    return float(np.mean(weat_association(w, a, b)))


class _Prepared:
    """Cosine matrices computed once, so that every bootstrap resample is a few weighted
    means (a resample is a vector of row multiplicities)."""

    def __init__(self, embeddings: Any, roles: Any, targets: Any):
        if not isinstance(embeddings, np.ndarray):
            embeddings = list(embeddings)
            dims = {len(e) for e in embeddings if hasattr(e, "__len__")}
            if len(dims) > 1:
                raise ValueError(f"embeddings have inconsistent dimensions {sorted(dims)}: every embedding must "
                                 "come from one encoder")
        emb = as_float_array("embeddings", embeddings, ndim=2)
        role = as_str_array("roles", roles)
        tgt = as_str_array("targets", targets)
        check_same_length(embeddings=emb, roles=role, targets=tgt)
        check_in("roles", role, ROLES)
        absent = [r for r in ROLES if not np.any(role == r)]
        if absent:
            raise ValueError(f"roles lack {absent}: MCAS needs target images and texts and both attribute sets "
                             "as images and texts")
        zero = np.flatnonzero(np.linalg.norm(emb, axis=1) == 0)
        if zero.size:
            raise ValueError(f"embeddings row {int(zero[0])} is a zero vector: its cosine similarity is undefined")
        is_target = np.char.startswith(role.astype(str), "target_")
        bad = np.flatnonzero(is_target & (tgt == ""))
        if bad.size:
            raise ValueError(f"row {int(bad[0])} has role {role[bad[0]]!r} but an empty target keyword")
        bad = np.flatnonzero(~is_target & (tgt != ""))
        if bad.size:
            raise ValueError(f"row {int(bad[0])} has role {role[bad[0]]!r} and target {tgt[bad[0]]!r}; attribute "
                             "rows must have an empty target")
        self.n = len(role)
        self.roles = role
        self.target_names = list(dict.fromkeys(tgt[is_target]))
        problems = []
        for kind in ("image", "text"):
            have = set(tgt[role == f"target_{kind}"])
            lacking = [t for t in self.target_names if t not in have]
            if lacking:
                problems.append(f"targets {lacking} have no target_{kind} row")
        if problems:
            raise ValueError("; ".join(problems) + " (each target needs its generated images and its text)")
        code_of = {t: i for i, t in enumerate(self.target_names)}
        self.rows = {r: np.flatnonzero(role == r) for r in ROLES}
        self.codes = {k: np.array([code_of[t] for t in tgt[self.rows[f"target_{k}"]]]) for k in ("image", "text")}
        unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
        self.sims = {
            (tk, s, ak): cosine_similarity(unit[self.rows[f"target_{tk}"]], unit[self.rows[f"attribute_{s}_{ak}"]])
            for tk in ("image", "text") for s in ("a", "b") for ak in ("image", "text")
        }

    def components(self, weights: np.ndarray) -> np.ndarray:
        """(n_targets x 4) II, ITP, ITA, TT with row multiplicities ``weights``."""
        t = len(self.target_names)
        out = np.empty((t, len(COMPONENTS)))
        for j, comp in enumerate(COMPONENTS):
            tk, ak = COMPONENT_MODALITIES[comp]
            means = []
            for s in ("a", "b"):
                wa = weights[self.rows[f"attribute_{s}_{ak}"]]
                means.append(self.sims[(tk, s, ak)] @ wa / wa.sum())
            s_w = means[0] - means[1]  # s(w, A, B) per target row
            ww = weights[self.rows[f"target_{tk}"]]
            codes = self.codes[tk]
            out[:, j] = np.bincount(codes, weights=s_w * ww, minlength=t) / np.bincount(codes, weights=ww,
                                                                                          minlength=t)
        return out

    def table(self, weights: np.ndarray | None = None, zero_tol: float = DEFAULT_ZERO_TOL) -> pd.DataFrame:
        w = np.ones(self.n) if weights is None else weights
        comp = pd.DataFrame(self.components(w), columns=list(COMPONENTS),
                            index=pd.Index(self.target_names, name="target"))
        return internal_bias_table(comp, zero_tol=zero_tol)


def mcas_per_target(embeddings: Any, roles: Any, targets: Any, *, zero_tol: float = DEFAULT_ZERO_TOL) -> pd.DataFrame:
    """One row per target keyword (in order of first appearance): II, ITP, ITA, TT, mcas,
    diffusion_bias, bias_amplification (NaN where TT = 0), bias_amplification_defined,
    bias_amplification_note, n_images (generated images of the target).

    ``embeddings`` (n x d), ``roles`` (one of :data:`ROLES` per row), ``targets`` (target
    keyword per row, "" for attribute rows). Cosine similarity ignores vector length, so
    embeddings need not be normalised.
    """
    prep = _Prepared(embeddings, roles, targets)
    out = prep.table(zero_tol=zero_tol)
    out["n_images"] = np.bincount(prep.codes["image"], minlength=len(prep.target_names))
    return out


def _overall(comp: np.ndarray, zero_tol: float) -> dict[str, float]:
    """Overall scores from the (n_targets x 4) component array (fast: used per resample)."""
    ii, itp, ita, tt = comp.T
    alpha, defined = bias_amplification_values(itp, ita, tt, zero_tol=zero_tol)
    means = comp.mean(axis=0)
    return {
        "mcas": float(means.sum()), **{c: float(m) for c, m in zip(COMPONENTS, means)},
        # Generated Bias Table 4 reports delta and alpha as means over keywords.
        "diffusion_bias": float(diffusion_bias_values(ii, tt).mean()),
        "bias_amplification": float(alpha[defined].mean()) if defined.any() else float("nan"),
    }


def _json(v: float) -> float | None:
    return None if not np.isfinite(v) else float(v)


#: the overall keys that get a bootstrap interval (TT has none: texts are fixed lists, not samples)
CI_KEYS = ("mcas", "II", "ITP", "ITA", "diffusion_bias", "bias_amplification")


def _image_ids(role: np.ndarray, encoders: np.ndarray, image_ids: Any) -> np.ndarray:
    """Each image row's id (the same image has the same id under every encoder); without
    ``image_ids``, the k-th image row of each encoder is image k."""
    if image_ids is not None:
        ids = np.asarray(as_str_array("image_ids", image_ids), dtype=object)
        check_same_length(roles=role, image_ids=ids)
        return ids
    ids = np.empty(len(role), dtype=object)
    for enc in dict.fromkeys(encoders):
        rows = np.flatnonzero((encoders == enc) & np.char.endswith(role.astype(str), "_image"))
        ids[rows] = np.arange(len(rows))
    return ids


class _OverEncoders:
    """The rows of each encoder aligned on the images every encoder embedded: image rows first
    (in sorted image-id order), then that encoder's text rows; components averaged over encoders
    (Generated Bias Sec. 5.2: the mean of the association scores gives MCAS, delta and alpha)."""

    def __init__(self, embeddings: Any, role: np.ndarray, tgt: np.ndarray, enc: np.ndarray, ids: np.ndarray,
                 drop_targets_without_images: bool):
        is_image = np.char.endswith(role.astype(str), "_image")
        self.encoders = list(dict.fromkeys(enc))
        shared = None
        for e in self.encoders:
            have = set(ids[(enc == e) & is_image])
            shared = have if shared is None else shared & have
        self.shared_ids = sorted(shared or [])
        if not self.shared_ids:
            raise ValueError("no image is embedded by every encoder")
        self.n_images = len(self.shared_ids)
        self.preps: dict[str, _Prepared] = {}
        self.rows: dict[str, list[int]] = {}
        self.targets_without_images: list[str] = []
        first_row: dict = {}
        for e in self.encoders:
            pos: dict = {}
            for i in np.flatnonzero((enc == e) & is_image):
                pos.setdefault(ids[i], i)  # one row per image
                first_row.setdefault(ids[i], i)
            img = [pos[k] for k in self.shared_ids]
            txt = list(np.flatnonzero((enc == e) & ~is_image))
            imaged = {tgt[i] for i in img if role[i] == "target_image"}
            lacking = sorted({tgt[i] for i in txt if role[i] == "target_text"} - imaged)
            if lacking and drop_targets_without_images:
                txt = [i for i in txt if not (role[i] == "target_text" and tgt[i] in lacking)]
                if e == self.encoders[0]:
                    self.targets_without_images = lacking
            rows = img + txt
            dims = {np.size(embeddings[i]) for i in rows}
            if len(dims) > 1:
                raise ValueError(f"embeddings have inconsistent dimensions {sorted(dims)}: the embeddings of one "
                                 "encoder must all come from it")
            vecs = np.stack([np.asarray(embeddings[i], dtype=np.float64) for i in rows])
            self.preps[e] = _Prepared(vecs, role[rows], tgt[rows])
            self.rows[e] = rows
        self.names = self.preps[self.encoders[0]].target_names
        for e in self.encoders[1:]:
            if set(self.preps[e].target_names) != set(self.names):
                raise ValueError(f"encoders {self.encoders[0]!r} and {e!r} cover different targets")
        self.order = {e: [self.preps[e].target_names.index(t) for t in self.names] for e in self.encoders}
        # bootstrap strata: each target's images, the A images, the B images
        self.strata = np.array([f"{role[first_row[k]]}|{tgt[first_row[k]]}" for k in self.shared_ids], dtype=object)
        self.first_rows = [first_row[k] for k in self.shared_ids]  # an input row of each resampled image

    def components(self, weights: np.ndarray) -> np.ndarray:
        """(n_targets x 4) components, mean over encoders, with image multiplicities ``weights``."""
        comps = []
        for e in self.encoders:
            p = self.preps[e]
            w = np.ones(p.n)
            w[:self.n_images] = weights
            comps.append(p.components(w)[self.order[e]])
        return np.mean(comps, axis=0)


def mcas_score(
    embeddings: Any,
    roles: Any,
    targets: Any,
    *,
    encoders: Any = None,
    image_ids: Any = None,
    categories: Mapping[str, str] | None = None,
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    random_state: int = 0,
    zero_tol: float = DEFAULT_ZERO_TOL,
    drop_targets_without_images: bool = False,
    keys: Any = None,
) -> dict:
    """MCAS, its components, Diffusion Bias and Bias Amplification, overall and per target,
    from one CLIP encoder or averaged over several.

    ``encoders`` (optional, one name per row): rows of several CLIP encoders; each component is
    computed per encoder and averaged over encoders before MCAS, delta and alpha (Generated
    Bias Sec. 5.2), over the images every encoder embedded. ``image_ids`` (optional, one per
    row; ignored for text rows) says which image rows of different encoders are the same
    image; without it the k-th image row of each encoder is image k.

    Overall: each component is the mean over target keywords of its per-keyword value and
    ``mcas`` their sum; ``diffusion_bias`` and ``bias_amplification`` are the means over
    keywords of the per-keyword delta and alpha (Generated Bias Table 4). Keywords whose alpha
    is undefined (TT = 0) are left out of the mean and listed in
    ``bias_amplification_undefined_targets``; with none defined, ``bias_amplification`` is
    None and ``bias_amplification_note`` says why. A target with texts but no image is an
    error, or with ``drop_targets_without_images`` left out and listed in
    ``targets_without_images``.

    ``categories`` (optional, keyword -> category) adds ``per_category``: mean, std, min and max
    of the per-keyword MCAS per category and over all (MCAS Table 5). With several encoders,
    ``per_encoder`` holds each encoder's own result.

    Intervals (``<key>_ci`` for mcas, II, ITP, ITA, diffusion_bias, bias_amplification):
    percentile bootstrap over *images*, resampled within each (role, target) stratum: each
    target's generated images, the A images, the B images; one resample serves every encoder.
    ``keys`` (optional, one per row: the probe of an image row) serve paired resampling across
    runs (:func:`benchmark.scores.bootstrap.resample_plan`) and change nothing outside a plan.
    Texts (attribute words, target keywords) are fixed lists, not samples, so TT has no
    sampling variation (``TT_ci`` is None). ``n_resamples=0`` skips the intervals.
    """
    role = as_str_array("roles", roles)
    tgt = as_str_array("targets", targets)
    n = len(role)
    if len(embeddings) != n:
        raise ValueError(f"inputs must have the same length, got embeddings={len(embeddings)}, roles={n}")
    enc = np.full(n, "", dtype=object) if encoders is None else np.asarray(as_str_array("encoders", encoders), object)
    check_same_length(roles=role, targets=tgt, encoders=enc)
    check_in("roles", role, ROLES)
    data = _OverEncoders(embeddings, role, tgt, enc, _image_ids(role, enc, image_ids), drop_targets_without_images)
    comp = data.components(np.ones(data.n_images))
    table = internal_bias_table(pd.DataFrame(comp, columns=list(COMPONENTS), index=pd.Index(data.names, name="target")),
                                zero_tol=zero_tol)
    counts = pd.Series(data.strata).value_counts()
    table["n_images"] = [int(counts.get(f"target_image|{t}", 0)) for t in data.names]
    result = _summary(table, _overall(comp, zero_tol))
    result["per_target"] = _per_target(table)
    if categories is not None:
        result["per_category"] = _per_category(table, data.names, categories)
    unit_keys = None if keys is None else np.asarray(list(keys), dtype=object)[data.first_rows]
    _add_intervals(result, data, zero_tol=zero_tol, confidence_level=confidence_level, n_resamples=n_resamples,
                   random_state=random_state, keys=unit_keys)
    first = data.preps[data.encoders[0]]
    result.update({"n_targets": len(data.names), "n_images": data.n_images,
                   "n_rows": {r: int(len(first.rows[r])) for r in ROLES},
                   "encoders": [str(e) for e in data.encoders] if encoders is not None else [],
                   "targets_without_images": data.targets_without_images})
    if len(data.encoders) > 1:
        result["per_encoder"] = {
            str(e): mcas_score([embeddings[i] for i in rows], role[rows], tgt[rows], categories=None,
                               confidence_level=confidence_level, n_resamples=n_resamples,
                               random_state=random_state, zero_tol=zero_tol,
                               keys=None if keys is None else np.asarray(list(keys), dtype=object)[rows])
            for e, rows in data.rows.items()}
    return result


def _add_intervals(result: dict, data: "_OverEncoders", *, zero_tol: float, confidence_level: float,
                   n_resamples: int, random_state: int, keys: Any = None) -> None:
    """``<key>_ci`` for each of CI_KEYS: percentile bootstrap over images (see :func:`mcas_score`)."""
    def stat(key: str):
        return lambda idx: _overall(data.components(np.bincount(idx, minlength=data.n_images).astype(np.float64)),
                                    zero_tol)[key]

    for key in CI_KEYS:
        ci = None
        if n_resamples and result[key] is not None:
            ci = bootstrap_ci(stat(key), data.n_images, strata=data.strata, confidence_level=confidence_level,
                              n_resamples=n_resamples, random_state=random_state, keys=keys).to_dict()
        result[f"{key}_ci"] = ci
    result["TT_ci"] = None


def _summary(table: pd.DataFrame, overall: dict[str, float]) -> dict[str, Any]:
    undefined = [t for t, ok in table["bias_amplification_defined"].items() if not ok]
    result: dict[str, Any] = {k: _json(v) for k, v in overall.items()}
    result["bias_amplification_undefined_targets"] = undefined
    result["bias_amplification_note"] = (
        None if not undefined else
        f"{UNDEFINED_REASON}; " + ("no target has a defined alpha" if len(undefined) == len(table)
                                   else f"mean over the other {len(table) - len(undefined)} targets")
    )
    return result


def _per_target(table: pd.DataFrame) -> dict[str, dict]:
    per_target = {}
    for t, row in table.iterrows():
        entry = {k: _json(float(row[k])) for k in PER_TARGET_KEYS}
        entry["bias_amplification_defined"] = bool(row["bias_amplification_defined"])
        entry["bias_amplification_note"] = row["bias_amplification_note"] or None
        entry["n_images"] = int(row["n_images"])
        per_target[str(t)] = entry
    return per_target


def _per_category(table: pd.DataFrame, names: list[str], categories: Mapping[str, str]) -> dict[str, dict]:
    missing = [t for t in names if t not in categories]
    if missing:
        raise ValueError(f"categories lacks targets {missing}")
    summary = summarise(table, by={t: categories[t] for t in names}, columns=("mcas",))
    return {g: {"mcas_mean": _json(r["mcas_mean"]), "mcas_std": _json(r["mcas_std"]), "mcas_min": _json(r["mcas_min"]),
                "mcas_max": _json(r["mcas_max"]), "n_targets": int(r["mcas_n"])} for g, r in summary.iterrows()}
