"""MCAS paper checks (Mandal, Leavy, Little 2023).

MCAS does not print the four components (II, ITP, ITA, TT) of any target: it shows
per-target MCAS only as bar charts (Figs. 3-6). So the component -> MCAS formula cannot be
checked against printed numbers (the package's tests check it on constructed embeddings
instead). What the paper does let us recompute (Generated Bias Tables 3-4 are checked in
``benchmark/tasks/generated_bias/paper_checks.py``):

1. MCAS Table 5: the "All categories" row is the mean of the four category rows
   (equal weight per category), to the printed 4 decimals (0.00005, plus 0.00005 for the
   rounding of the category values: 0.0001). Left out: DALL-E 2 "terms with male bias"
   standard deviation, printed 0.0052, where the category rows give 0.0070.
   Table 5's per-category values themselves come from the bar charts' data, which the
   paper does not print.
2. MCAS Table 5, the standard deviation of "All terms" per category, from the other five
   columns of the row: with the population std (ddof 0) the law of total variance gives
   it exactly from the male- and female-bias stds and averages, the share of male-bias
   terms w following from the averages (all = w male + (1 - w) female), without the
   number of terms. The inputs are printed to 3 decimals (0.0005 each); the tolerance is
   half a unit of the printed std plus the largest change of the recomputed std over that
   rounding box. This is what makes ``summarise`` default to ddof 0: the rows it can be
   checked on agree with the population std and not with the sample std (which needs
   the number of terms per category, Table 4 of the paper; the check's test shows the
   sample std misses them). Left out (``TABLE5_STD_MISFITS``): DALL-E 2 occupations
   (printed 0.0890, population 0.0854; the sample std, 0.0900, fits this row only),
   Stable Diffusion objects (0.0860 against 0.0846) and sports (0.0590 against 0.0534),
   and Stable Diffusion occupations, whose female average is misprinted (-0.9800).

The MCAS task scores the Generated Bias scores too, so it declares both papers' checks
(:func:`checks`: Generated Bias's first, then these).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from benchmark.tasks.generated_bias import paper_checks as generated_bias
from benchmark.tasks.paper_checks import PaperCheck, task_data

# (model, column) of MCAS Table 5's "All categories" row not equal to the category mean.
TABLE5_MISPRINTS = {("dalle2", "male_std")}
# (model, category) of MCAS Table 5 whose "All terms" std does not follow from the row with
# the population std (see the module docstring).
TABLE5_STD_MISFITS = {("dalle2", "occupations"), ("sd2", "objects"), ("sd2", "sports"), ("sd2", "occupations")}
#: MCAS Table 5's per-category values carry 3 decimals (printed as 0.0080)
TABLE5_HALF_UNIT = 0.0005


def load_table5() -> pd.DataFrame:
    """MCAS Table 5 as transcribed in data/."""
    return pd.read_csv(task_data(__file__, "mcas_table5.csv"), comment="#")


def _table5_checks(table5: pd.DataFrame) -> list[PaperCheck]:
    out = []
    columns = ["male_std", "male_avg", "female_std", "female_avg", "all_std", "all_avg"]
    for model, label in {"dalle2": "DALL-E 2", "sd2": "Stable Diffusion"}.items():  # MCAS's names
        rows = table5[table5["model"] == model].set_index("category")
        cats = rows.drop(index="all categories")
        for col in columns:
            if (model, col) in TABLE5_MISPRINTS:
                continue
            out.append(PaperCheck(
                paper="mcas", source=f"Table 5, {label}, All categories",
                quantity=f"{col.replace('_', ' ')} = mean of the 4 category rows",
                printed=float(rows.loc["all categories", col]), recomputed=float(cats[col].mean()),
                tolerance=0.0001))
    return out


def all_terms_std(male_std: float, male_avg: float, female_std: float, female_avg: float,
                  all_avg: float) -> float:
    """Population std of all terms of a category from its two groups (law of total
    variance): w (male_std^2 + (male_avg - all_avg)^2) + (1 - w) (female_std^2 +
    (female_avg - all_avg)^2), with the male-bias share w = (all_avg - female_avg) /
    (male_avg - female_avg). NaN when w is outside [0, 1] (the averages contradict)."""
    if male_avg == female_avg:
        return math.nan
    w = (all_avg - female_avg) / (male_avg - female_avg)
    if not 0.0 <= w <= 1.0:
        return math.nan
    var = w * (male_std ** 2 + (male_avg - all_avg) ** 2) + (1 - w) * (female_std ** 2 + (female_avg - all_avg) ** 2)
    return math.sqrt(var)


def all_terms_std_with_rounding(row: pd.Series, half_unit: float = TABLE5_HALF_UNIT) -> tuple[float, float]:
    """(:func:`all_terms_std` of the printed row, its largest change when each of the five
    inputs moves within half a printed unit: a 5-point grid per input)."""
    cols = ("male_std", "male_avg", "female_std", "female_avg", "all_avg")
    base = [float(row[c]) for c in cols]
    centre = all_terms_std(*base)
    steps = np.linspace(-half_unit, half_unit, 5)
    spread = 0.0
    for delta in itertools.product(steps, repeat=len(cols)):
        v = all_terms_std(*(b + d for b, d in zip(base, delta)))
        if math.isfinite(v):
            spread = max(spread, abs(v - centre))
    return centre, spread


def _table5_std_checks(table5: pd.DataFrame) -> list[PaperCheck]:
    out = []
    for model, label in {"dalle2": "DALL-E 2", "sd2": "Stable Diffusion"}.items():
        for _, row in table5[(table5["model"] == model) & (table5["category"] != "all categories")].iterrows():
            if (model, row["category"]) in TABLE5_STD_MISFITS:
                continue
            centre, spread = all_terms_std_with_rounding(row)
            out.append(PaperCheck(
                paper="mcas", source=f"Table 5, {label}, {row['category'].capitalize()}",
                quantity="All terms std from the male / female columns, population std (ddof 0)",
                printed=float(row["all_std"]), recomputed=centre, tolerance=TABLE5_HALF_UNIT + spread))
    return out


def checks() -> list[PaperCheck]:
    """The Generated Bias checks, then MCAS's."""
    table5 = load_table5()
    return [*generated_bias.checks(), *_table5_checks(table5), *_table5_std_checks(table5)]
