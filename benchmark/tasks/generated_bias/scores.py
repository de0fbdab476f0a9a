"""Diffusion Bias and Bias Amplification (Generated Bias: Mandal, Leavy, Little, "Generated
Bias: Auditing Internal Bias Dynamics of Text-To-Image Generative Models", Sec. 4,
Eq. 4-5, Sec. 5.2, Tables 3-4), from the four MCAS association scores of one target.

    delta = | |II| - |TT| |                  (Eq. 4: bias the diffusion stage adds)
    alpha = | (ITP + ITA) / (2 TT) |         (Eq. 5: bias amplification, text -> image)

alpha divides by TT: where the text encoder shows no association (TT = 0) it is
undefined (the paper: "nondeterministic"). It is then reported as NaN with
``defined=False`` and a reason, never as infinity.

The paper computes the association scores with several CLIP encoders (RN50, RN50x4,
RN50x16, RN101, ViT-B/16, ViT-B/32) and uses their *mean* to compute MCAS, delta and
alpha (Sec. 5.2): :func:`average_over_encoders` does that from per-encoder tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from benchmark.scores.validation import as_float_array

COMPONENTS = ("II", "ITP", "ITA", "TT")
# |TT| at or below this counts as zero. Association scores are differences of mean
# cosines (order 1e-3 to 1e-1); float64 rounding of such means is ~1e-16, so 1e-12
# only catches a TT that is zero up to rounding, where alpha would be noise / 1e-17.
DEFAULT_ZERO_TOL = 1e-12
#: population standard deviation in :func:`summarise` (MCAS Table 5, see its docstring)
DEFAULT_DDOF = 0
UNDEFINED_REASON = "TT = 0: the text encoder shows no association, so alpha = |(ITP + ITA) / (2 TT)| is undefined"


def _scalar(name: str, value: Any) -> float:
    return float(as_float_array(name, [value])[0])


def diffusion_bias_values(ii: Any, tt: Any) -> np.ndarray:
    """Vectorised Eq. 4 over per-target arrays of II and TT."""
    ii, tt = as_float_array("II", ii), as_float_array("TT", tt)
    if ii.shape != tt.shape:
        raise ValueError(f"II and TT must have the same length, got {ii.size} and {tt.size}")
    return np.abs(np.abs(ii) - np.abs(tt))


def bias_amplification_values(itp: Any, ita: Any, tt: Any, *, zero_tol: float = DEFAULT_ZERO_TOL
                              ) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised Eq. 5: (alpha, defined). alpha is NaN where |TT| <= ``zero_tol``."""
    itp, ita, tt = as_float_array("ITP", itp), as_float_array("ITA", ita), as_float_array("TT", tt)
    if not (itp.shape == ita.shape == tt.shape):
        raise ValueError(f"ITP, ITA and TT must have the same length, got {itp.size}, {ita.size}, {tt.size}")
    if zero_tol < 0:
        raise ValueError(f"zero_tol must be >= 0, got {zero_tol}")
    defined = np.abs(tt) > zero_tol
    alpha = np.full(tt.shape, np.nan)
    alpha[defined] = np.abs((itp[defined] + ita[defined]) / (2.0 * tt[defined]))
    return alpha, defined


def diffusion_bias(ii: float, tt: float) -> float:
    """delta = ||II| - |TT|| (Generated Bias, Eq. 4), in [0, 2]; 0 = the images carry the same
    magnitude of association as the text encoder."""
    return float(diffusion_bias_values([_scalar("II", ii)], [_scalar("TT", tt)])[0])


@dataclass(frozen=True)
class BiasAmplification:
    """alpha of one target: ``value`` is NaN exactly when ``defined`` is False."""

    value: float
    defined: bool
    reason: str | None = None

    def to_json(self) -> float | None:
        return self.value if self.defined else None


def bias_amplification(itp: float, ita: float, tt: float, *, zero_tol: float = DEFAULT_ZERO_TOL) -> BiasAmplification:
    """alpha = |(ITP + ITA) / (2 TT)| (Generated Bias, Eq. 5), in [0, inf); 1 = the image-text
    scores carry as much association as the text encoder, above 1 = amplified.

    TT is doubled because ITP and ITA measure the text-to-image bias in two ways (Sec. 4.2).
    With |TT| <= ``zero_tol`` alpha is undefined: ``value`` NaN, ``defined`` False.
    """
    values = [_scalar("ITP", itp)], [_scalar("ITA", ita)], [_scalar("TT", tt)]
    alpha, defined = bias_amplification_values(*values, zero_tol=zero_tol)
    if not defined[0]:
        return BiasAmplification(math.nan, False, UNDEFINED_REASON)
    return BiasAmplification(float(alpha[0]), True, None)


def _component_frame(table: Any, name: str) -> pd.DataFrame:
    """Per-target components as a DataFrame indexed by target: accepts a DataFrame with a
    ``target`` column (or index) and the four component columns, or the ``per_target``
    dict of :func:`benchmark.tasks.mcas.scores.mcas_score`."""
    if isinstance(table, Mapping):
        df = pd.DataFrame.from_dict(dict(table), orient="index")
    elif isinstance(table, pd.DataFrame):
        df = table.set_index("target") if "target" in table.columns else table.copy()
    else:
        raise ValueError(f"{name}: expected a DataFrame or a per_target dict, got {type(table).__name__}")
    missing = [c for c in COMPONENTS if c not in df.columns]
    if missing:
        raise ValueError(f"{name} lacks component columns {missing}")
    if df.empty:
        raise ValueError(f"{name} is empty")
    if not df.index.is_unique:
        raise ValueError(f"{name} has duplicate targets")
    df = df[list(COMPONENTS)].astype(np.float64)
    as_float_array(f"{name} components", df.to_numpy(), ndim=2)
    df.index = df.index.map(str)
    df.index.name = "target"
    return df


def internal_bias_table(components: Any, *, zero_tol: float = DEFAULT_ZERO_TOL) -> pd.DataFrame:
    """Per-target MCAS (Eq. 2 / Generated Bias Eq. 3), delta (Eq. 4) and alpha (Eq. 5).

    ``components``: per-target II, ITP, ITA, TT (DataFrame or ``per_target`` dict). Returns
    a DataFrame indexed by target with the components, ``mcas``, ``diffusion_bias``,
    ``bias_amplification`` (NaN where undefined), ``bias_amplification_defined`` and
    ``bias_amplification_note`` (the reason, "" where defined).
    """
    df = _component_frame(components, "components").copy()
    df["mcas"] = df[list(COMPONENTS)].sum(axis=1)
    df["diffusion_bias"] = diffusion_bias_values(df["II"], df["TT"])
    alpha, defined = bias_amplification_values(df["ITP"], df["ITA"], df["TT"], zero_tol=zero_tol)
    df["bias_amplification"] = alpha
    df["bias_amplification_defined"] = defined
    df["bias_amplification_note"] = np.where(defined, "", UNDEFINED_REASON)
    return df


def average_over_encoders(tables: Mapping[str, Any], *, zero_tol: float = DEFAULT_ZERO_TOL) -> pd.DataFrame:
    """Mean of the per-target components over encoders, then MCAS, delta and alpha from
    the means (Generated Bias, Sec. 5.2: "their mean was used for calculating the internal bias
    scores and MCAS").

    ``tables``: encoder name -> per-target components (a DataFrame with ``target`` and
    II, ITP, ITA, TT, or the ``per_target`` dict of ``mcas_score``). Every encoder must
    cover the same targets. Adds ``n_encoders``.
    """
    if not isinstance(tables, Mapping) or not tables:
        raise ValueError("tables must be a non-empty mapping encoder name -> per-target components")
    frames = {str(k): _component_frame(v, f"encoder {k!r}") for k, v in tables.items()}
    first_name, first = next(iter(frames.items()))
    for name, df in frames.items():
        if set(df.index) != set(first.index):
            diff = sorted(set(df.index) ^ set(first.index))
            raise ValueError(f"encoders {first_name!r} and {name!r} cover different targets: {diff}")
    stacked = pd.concat([df.loc[first.index] for df in frames.values()], keys=list(frames), names=["encoder"])
    mean = stacked.groupby(level="target", sort=False).mean()
    out = internal_bias_table(mean, zero_tol=zero_tol)
    out["n_encoders"] = len(frames)
    return out


def summarise(
    table: pd.DataFrame, by: Mapping[str, str] | None = None, columns: Sequence[str] = ("diffusion_bias",
                                                                                         "bias_amplification"),
    *, ddof: int = DEFAULT_DDOF,
) -> pd.DataFrame:
    """min, max, mean and standard deviation of per-target columns, over all targets and
    per group, as Generated Bias Table 4 summarises its Table 3 (groups: male- /
    female-dominated) and MCAS Table 5 summarises MCAS per category.

    The standard deviation is the population one by default (``ddof=0``, divide by n):
    MCAS Table 5's "All terms" std follows from its "terms with male bias" and "terms
    with female bias" columns with the population std (law of total variance) in the rows
    where it can be checked, and not with the sample std (``benchmark.tasks.mcas.paper_checks``,
    docs/mcas.md). ``ddof=1`` gives the sample std. Generated Bias Table 4 prints no
    standard deviation (its "±" values are neither), so its check uses min, max and mean
    only and does not depend on ``ddof``.

    ``table`` is indexed by target (as :func:`internal_bias_table`); ``by`` maps every
    target to its group. NaN values (undefined alpha) are left out of that column's
    statistics, and ``<column>_n`` counts the values used (a group with n <= ddof has a
    NaN std). Rows: each group in order of first appearance, then ``all``.
    """
    if isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer)) or ddof < 0:
        raise ValueError(f"ddof must be a non-negative integer, got {ddof!r}")
    if table.empty:
        raise ValueError("table is empty")
    cols = list(columns)
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise ValueError(f"table lacks columns {missing}")
    groups: list[tuple[str, pd.DataFrame]] = []
    if by is not None:
        unmapped = [t for t in table.index if t not in by]
        if unmapped:
            raise ValueError(f"no group for targets {unmapped}")
        labels = pd.Series([str(by[t]) for t in table.index], index=table.index)
        groups = [(g, table[labels == g]) for g in dict.fromkeys(labels)]
    groups.append(("all", table))
    rows = []
    for g, sub in groups:
        row: dict[str, Any] = {"group": g}
        for c in cols:
            v = sub[c].astype(np.float64).dropna()
            row.update({f"{c}_min": v.min(), f"{c}_max": v.max(), f"{c}_mean": v.mean(),
                        f"{c}_std": v.std(ddof=int(ddof)), f"{c}_n": int(len(v))})
        rows.append(row)
    return pd.DataFrame(rows).set_index("group")
