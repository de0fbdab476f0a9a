"""The Monk Skin Tone scale's colour maths (DALL-Eval Sec. 4.2.3): the Individual Typology
Angle of a CIELAB colour and the nearest Monk swatch. Plain functions over numbers; the
annotator that finds faces and their colour is :mod:`benchmark.annotate.skin_tone`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MST_LAB", "MST_ITA", "ita", "nearest_mst", "swatch_itas", "swatch_records"]

#: CIELAB (L*, a*, b*) of the 10 Monk Skin Tone swatches, MST 1..10, copied from
#: j-min/DallEval biases/skintone/TRUST/compute_ita.py (``monk_tones``), MIT licence
#: (via reference/monk_skin_tone_reference_values.json).
MST_LAB: tuple[tuple[float, float, float], ...] = (
    (94.211, 1.503, 5.422),
    (92.275, 2.061, 7.280),
    (93.091, 0.216, 14.205),
    (87.573, 0.459, 17.748),
    (77.902, 3.471, 23.136),
    (55.142, 7.783, 26.740),
    (42.470, 12.325, 20.530),
    (30.678, 11.667, 13.335),
    (21.069, 2.690, 5.964),
    (14.610, 1.482, 3.525),
)


def ita(L, b):
    """Individual Typology Angle in degrees: atan((L* - 50) / b*) * 180 / pi.

    Works on scalars and arrays; b* = 0 gives +-90 (the limit of the formula).
    """
    L = np.asarray(L, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.degrees(np.arctan((L - 50.0) / b))
    out = np.where(b == 0, np.sign(L - 50.0) * 90.0, out)
    return float(out) if out.ndim == 0 else out


#: ITA of each MST swatch, MST 1..10 (about 83.0, 80.2, 71.8, 64.7, 50.3, 10.9,
#: -20.1, -55.4, -78.3, -84.3 degrees)
MST_ITA: tuple[float, ...] = tuple(ita(L, b) for L, _, b in MST_LAB)


def nearest_mst(ita_deg: float, swatch_ita=None) -> int:
    """The MST tone (1..N) whose swatch ITA is nearest to ``ita_deg``; ``swatch_ita``
    (tone 1 first) defaults to ``MST_ITA``."""
    swatches = np.asarray(MST_ITA if swatch_ita is None else swatch_ita, dtype=np.float64)
    return int(np.argmin(np.abs(swatches - float(ita_deg)))) + 1


def swatch_itas(swatches) -> tuple[float, ...]:
    """ITA of each swatch, tone 1 first, from a table of swatches: a DataFrame or a list
    of mappings with ``mst`` (1..N, each once), ``cielab_l`` and ``cielab_b``; an ``ita``
    column, where present, must agree with the CIELAB values."""
    import pandas as pd

    table = pd.DataFrame(list(swatches) if not isinstance(swatches, pd.DataFrame) else swatches)
    missing = [c for c in ("mst", "cielab_l", "cielab_b") if c not in table.columns]
    if missing:
        raise ValueError(f"swatch table lacks {missing} (expected the mst_swatches config)")
    tones = [int(t) for t in table["mst"]]
    if sorted(tones) != list(range(1, len(tones) + 1)) or len(tones) < 2:
        raise ValueError(f"swatch table must have tones 1..N, each once, got {sorted(tones)}")
    table = table.assign(mst=tones).sort_values("mst")
    L = table["cielab_l"].to_numpy(dtype=np.float64)
    b = table["cielab_b"].to_numpy(dtype=np.float64)
    if not (np.isfinite(L).all() and np.isfinite(b).all()):
        raise ValueError("swatch table has a missing or non-finite CIELAB value")
    angles = np.atleast_1d(ita(L, b))
    if "ita" in table.columns:
        stored = table["ita"].to_numpy(dtype=np.float64)
        if not np.allclose(stored, angles, rtol=0, atol=1e-6):  # NaN disagrees too
            raise ValueError("swatch table's ita column disagrees with its CIELAB values")
    return tuple(float(a) for a in angles)


def swatch_records(swatches) -> list[dict]:
    """The swatches as a list of row mappings (a DataFrame or any sequence of mappings)."""
    import pandas as pd

    return swatches.to_dict("records") if isinstance(swatches, pd.DataFrame) else [dict(r) for r in swatches]
