"""Generated Bias paper checks (Mandal, Leavy, Little 2024).

The paper does not print the four MCAS components (II, ITP, ITA, TT) of any target: its
Table 3 prints MCAS, delta and alpha per keyword without them. So the component -> delta /
alpha formulas cannot be checked against printed numbers (the package's tests check them on
constructed embeddings instead). What the paper does let us recompute:

1. Generated Bias Table 4 (min, max, mean of delta and alpha over male-dominated,
   female-dominated and all keywords) from the per-keyword values of Table 3, through
   :func:`benchmark.tasks.generated_bias.scores.summarise`. Min and max are printed values of
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

The MCAS task, which scores this paper's two scores, declares these checks with its own
(``benchmark/tasks/mcas/paper_checks.py``).
"""

from __future__ import annotations

import pandas as pd

from benchmark.tasks.generated_bias.scores import summarise
from benchmark.tasks.paper_checks import PaperCheck, task_data

MODELS = {"dalle2": "DALL-E 2", "sd2": "Stable Diffusion v2"}
GROUP_NAMES = {"male": "male-dominated", "female": "female-dominated", "all": "overall"}
# (model, group, column) printed in Generated Bias Table 4 but contradicting Table 3 (see above).
TABLE4_MISPRINTS = {("sd2", "male", "alpha_mean"), ("sd2", "female", "alpha_mean"), ("sd2", "all", "alpha_mean")}
HALF_UNIT_2DP = 0.005
#: the paper's headline number in ``t2ibench reproduce`` (``Task.headline_checks``)
HEADLINE_CHECKS = (("diffusion_bias", "Table 4", "mean alpha"),)


def load_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """(Generated Bias Table 3, Generated Bias Table 4) as transcribed in data/."""
    read = lambda name: pd.read_csv(task_data(__file__, name), comment="#")  # noqa: E731
    return read("generated_bias_table3.csv"), read("generated_bias_table4.csv")


def table3_for(table3: pd.DataFrame, model: str) -> pd.DataFrame:
    """Per-keyword table of one model, indexed by keyword, as ``internal_bias_table`` names
    its columns."""
    df = table3.set_index("keyword")
    return pd.DataFrame({"mcas": df[f"{model}_mcas"], "diffusion_bias": df[f"{model}_delta"],
                         "bias_amplification": df[f"{model}_alpha"], "stereotype": df["stereotype"]})


def _decimals(printed: str) -> int:
    return len(printed.split(".")[1]) if "." in printed else 0


def _table4_checks(table3: pd.DataFrame) -> list[PaperCheck]:
    raw = pd.read_csv(task_data(__file__, "generated_bias_table4.csv"), comment="#", dtype=str)
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


def checks() -> list[PaperCheck]:
    table3, _ = load_tables()
    return [*_table4_checks(table3), _zero_delta_check(table3)]
