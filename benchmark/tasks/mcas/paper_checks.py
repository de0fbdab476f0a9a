"""MCAS / Generated Bias paper checks (seeds 003 and 004, Mandal, Leavy, Little).

Neither paper prints the four components (II, ITP, ITA, TT) of any target: MCAS
shows per-target MCAS only as bar charts (Figs. 3-6), Generated Bias Table 3 prints MCAS,
delta and alpha per keyword without the components. So the component -> MCAS / delta /
alpha formulas cannot be checked against printed numbers (the package's tests check them
on constructed embeddings instead). What the papers do let us recompute:

1. Generated Bias Table 4 (min, max, mean of delta and alpha over male-dominated,
   female-dominated and all keywords) from the per-keyword values of Table 3, through
   :func:`benchmark.scores.diffusion_bias.summarise`. Min and max are printed values of
   Table 3 (tolerance: half a unit, 0.005). A mean of values each rounded to 0.01 can
   differ from the mean of the unrounded values by up to 0.005, so means are checked to
   0.005 + 0.005 = 0.01 (0.05 + 0.005 for "10.0", printed to one decimal).
   Left out, because the printed value contradicts Table 3 beyond any rounding:
   Stable Diffusion alpha means. Male-dominated 3.15 exceeds the printed maximum 2.87
   (Table 3 gives 1.70); female-dominated 11.25 (Table 3 gives 11.04); overall 6.47 is
   (1.70 + 11.25) / 2, consistent with the corrected male mean but not with Table 3 (6.37).
   The "±" values are not checked: they match neither the standard deviation nor the
   standard error of Table 3's values.
2. Generated Bias Sec. 6: "DALL-E 2 with 6 categories showing zero diffusion bias" among the
   male-dominated keywords (count of delta = 0.00 in Table 3).
3. MCAS Table 5: the "All categories" row is the mean of the four category rows
   (equal weight per category), to the printed 4 decimals (0.00005, plus 0.00005 for the
   rounding of the category values: 0.0001). Left out: DALL-E 2 "terms with male bias"
   standard deviation, printed 0.0052, where the category rows give 0.0070.
   Table 5's per-category values themselves come from the bar charts' data, which the
   paper does not print.
4. MCAS Table 5, the standard deviation of "All terms" per category, from the other five
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
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from benchmark.scores.diffusion_bias import summarise
from benchmark.tasks.paper_checks import PaperCheck, task_data

MODELS = {"dalle2": "DALL-E 2", "sd2": "Stable Diffusion v2"}
GROUP_NAMES = {"male": "male-dominated", "female": "female-dominated", "all": "overall"}
# (model, group, column) printed in Generated Bias Table 4 but contradicting Table 3 (see above).
TABLE4_MISPRINTS = {("sd2", "male", "alpha_mean"), ("sd2", "female", "alpha_mean"), ("sd2", "all", "alpha_mean")}
# (model, column) of MCAS Table 5's "All categories" row not equal to the category mean.
TABLE5_MISPRINTS = {("dalle2", "male_std")}
HALF_UNIT_2DP = 0.005
# (model, category) of MCAS Table 5 whose "All terms" std does not follow from the row with
# the population std (see the module docstring).
TABLE5_STD_MISFITS = {("dalle2", "occupations"), ("sd2", "objects"), ("sd2", "sports"), ("sd2", "occupations")}
#: MCAS Table 5's per-category values carry 3 decimals (printed as 0.0080)
TABLE5_HALF_UNIT = 0.0005


def load_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(Generated Bias Table 3, Generated Bias Table 4, MCAS Table 5) as transcribed in data/."""
    read = lambda name: pd.read_csv(task_data(__file__, name), comment="#")  # noqa: E731
    return (read("mcas_generated_bias_table3.csv"), read("mcas_generated_bias_table4.csv"),
            read("mcas_table5.csv"))


def table3_for(table3: pd.DataFrame, model: str) -> pd.DataFrame:
    """Per-keyword table of one model, indexed by keyword, as ``internal_bias_table`` names
    its columns."""
    df = table3.set_index("keyword")
    return pd.DataFrame({"mcas": df[f"{model}_mcas"], "diffusion_bias": df[f"{model}_delta"],
                         "bias_amplification": df[f"{model}_alpha"], "stereotype": df["stereotype"]})


def _decimals(printed: str) -> int:
    return len(printed.split(".")[1]) if "." in printed else 0


def _table4_checks(table3: pd.DataFrame) -> list[PaperCheck]:
    raw = pd.read_csv(task_data(__file__, "mcas_generated_bias_table4.csv"), comment="#", dtype=str)
    out = []
    for model, label in MODELS.items():
        per_kw = table3_for(table3, model)
        summary = summarise(per_kw, by=per_kw["stereotype"].to_dict())
        for _, row in raw[raw["model"] == model].iterrows():
            group = row["group"]
            for short, col in (("delta", "diffusion_bias"), ("alpha", "bias_amplification")):
                for stat in ("min", "max", "mean"):
                    key = f"{short}_{stat}"
                    if (model, group, key) in TABLE4_MISPRINTS:
                        continue
                    half_unit = 0.5 * 10 ** -_decimals(row[key])
                    # a mean of values rounded to 0.01 carries up to 0.005 of their rounding
                    tol = half_unit + (HALF_UNIT_2DP if stat == "mean" else 0.0)
                    out.append(PaperCheck(
                        paper="diffusion_bias", source=f"Table 4, {label}, {GROUP_NAMES[group]}",
                        quantity=f"{stat} {'delta' if short == 'delta' else 'alpha'} over Table 3 keywords",
                        printed=float(row[key]), recomputed=float(summary.loc[group, f"{col}_{stat}"]),
                        tolerance=tol))
    return out


def _zero_delta_check(table3: pd.DataFrame) -> PaperCheck:
    per_kw = table3_for(table3, "dalle2")
    male = per_kw[per_kw["stereotype"] == "male"]
    return PaperCheck(paper="diffusion_bias", source="Sec. 6 text (Table 3), DALL-E 2",
                      quantity="male-dominated keywords with delta = 0.00", printed=6.0,
                      recomputed=float((male["diffusion_bias"] == 0).sum()), tolerance=0.0)


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
    table3, _, table5 = load_tables()
    return [*_table4_checks(table3), _zero_delta_check(table3), *_table5_checks(table5),
            *_table5_std_checks(table5)]
