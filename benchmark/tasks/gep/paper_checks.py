"""GEP paper checks (GEP, Zhang et al.): the printed human-annotated frequencies
(Appendix Tables 11-12) give the printed GEP vectors (Tables 13-14) and GEP scores
(Table 3).

Two routes are checked:

1. From the printed frequencies themselves (``gep_vector`` / ``gep_score_from_vector``).
   Each printed frequency is rounded to 0.01, so a difference of two carries up to 0.01
   of rounding: the vectors are checked to 0.01 (not the printed 0.005).
2. From per-image labels: each (model, setting, gender, attribute) cell has 80 images
   (16 contexts x 5 images, Sec. 5), so a printed frequency f is round(80 f) positives
   out of 80. Those counts are rebuilt (each within 0.005 of the printed f, checked
   below), expanded to 0/1 labels per image and scored by :func:`benchmark.tasks.gep.scores.gep`:
   vectors and scores then match the tables to their printed precision, 0.005.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmark.tasks.gep.scores import gep, gep_score_from_vector, gep_vector
from benchmark.tasks.paper_checks import PaperCheck, task_data

IMAGES_PER_CELL = 80  # Sec. 5: 16 contexts x 5 images per (gender, attribute) in both settings
HALF_UNIT = 0.005  # printed to two decimals
ATTRIBUTE_LABELS = {  # Table 11-14 column -> attribute as in the probes (Table 1)
    "boots": "in boots", "slippers": "in slippers", "jeans": "in jeans", "shorts": "in shorts",
    "slacks": "in slacks", "dress": "in a dress", "skirt": "in a skirt", "suit": "in a suit",
    "shirt": "in a shirt", "uniform": "in uniform", "jacket": "in a jacket", "hat": "in a hat",
    "tie": "with a tie", "mask": "with a mask", "gloves": "with gloves",
}
COLUMNS = list(ATTRIBUTE_LABELS)
_TABLES = {"neutral": ("Table 11", "Table 13"), "explicit": ("Table 12", "Table 14")}


def load_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(frequencies, vectors, scores) as transcribed in ``data/gep_*.csv``."""
    read = lambda name: pd.read_csv(task_data(__file__, name), comment="#")  # noqa: E731
    return read("gep_frequencies.csv"), read("gep_vectors.csv"), read("gep_scores.csv")


def printed_frequencies(freqs: pd.DataFrame, model: str, setting: str, gender: str) -> np.ndarray:
    row = freqs[(freqs["model"] == model) & (freqs["setting"] == setting) & (freqs["gender"] == gender)]
    if len(row) != 1:
        raise ValueError(f"no single frequency row for {model} / {setting} / {gender}")
    return row[COLUMNS].to_numpy(dtype=float)[0]


def per_image_labels(freqs: pd.DataFrame, model: str, setting: str,
                     n: int = IMAGES_PER_CELL) -> tuple[list[float], list[str], list[str], list[str]]:
    """Long-format rows (prediction, group, attribute, image id) whose cell frequencies are
    round(n f) / n for the printed f. Neutral: n images per gender, each with one row per
    attribute; explicit: n images per (gender, attribute), one row each."""
    preds, groups, attrs, ids = [], [], [], []
    for gender in ("woman", "man"):
        f = printed_frequencies(freqs, model, setting, gender)
        for col, fj in zip(COLUMNS, f):
            k = int(round(fj * n))
            for i in range(n):
                preds.append(float(i < k))
                groups.append(gender)
                attrs.append(ATTRIBUTE_LABELS[col])
                ids.append(f"{gender}/{i}" if setting == "neutral" else f"{gender}/{col}/{i}")
    return preds, groups, attrs, ids


def checks() -> list[PaperCheck]:
    freqs, vectors, scores = load_tables()
    out: list[PaperCheck] = []
    for _, srow in scores.iterrows():
        model, setting, printed_score = srow["model"], srow["setting"], float(srow["gep"])
        t_freq, t_vec = _TABLES[setting]
        fw = printed_frequencies(freqs, model, setting, "woman")
        fm = printed_frequencies(freqs, model, setting, "man")
        vrow = vectors[(vectors["model"] == model) & (vectors["setting"] == setting)]
        printed_v = vrow[COLUMNS].to_numpy(dtype=float)[0]

        # The printed Avg column is the mean of the unrounded frequencies (transcription check).
        for gender, f in (("woman", fw), ("man", fm)):
            avg = freqs[(freqs["model"] == model) & (freqs["setting"] == setting)
                        & (freqs["gender"] == gender)]["avg"].iloc[0]
            out.append(PaperCheck("gep", f"{t_freq}, {model}, {gender}, Avg", "mean attribute frequency",
                                  float(avg), float(f.mean()), 2 * HALF_UNIT))

        # Route 1: from the printed (rounded) frequencies.
        v = gep_vector(fw, fm)
        for col, pv, rv in zip(COLUMNS, printed_v, v):
            out.append(PaperCheck("gep", f"{t_vec}, {model}, {col}", f"GEP vector from {t_freq} frequencies",
                                  float(pv), float(rv), 2 * HALF_UNIT))
        out.append(PaperCheck("gep", f"Table 3, {model}, {setting}", f"GEP score from {t_freq} frequencies",
                              printed_score, gep_score_from_vector(v), HALF_UNIT))

        # Route 2: per-image labels with the paper's 80 images per cell.
        preds, groups, attrs, ids = per_image_labels(freqs, model, setting)
        res = gep(preds, groups, attrs, "woman", "man", n_resamples=0)
        for gender, f in (("woman", fw), ("man", fm)):
            worst = max(abs(res["frequencies"][gender][ATTRIBUTE_LABELS[c]] - fj) for c, fj in zip(COLUMNS, f))
            out.append(PaperCheck("gep", f"{t_freq}, {model}, {gender}",
                                  "largest |count/80 - printed frequency| (80 images per cell)", 0.0, float(worst),
                                  HALF_UNIT))
        for col, pv in zip(COLUMNS, printed_v):
            out.append(PaperCheck("gep", f"{t_vec}, {model}, {col}", "GEP vector from per-image labels (80 per cell)",
                                  float(pv), res["gep_vector"][ATTRIBUTE_LABELS[col]], HALF_UNIT))
        out.append(PaperCheck("gep", f"Table 3, {model}, {setting}", "GEP score from per-image labels (80 per cell)",
                              printed_score, res["gep_score"], HALF_UNIT))
    return out
