"""PST paper checks (PST, Wan & Chang, "The Male CEO and the Female Assistant").

The printed per-identity tables give the printed summaries:

* Table 14 (gendered occupation, DALLE-3, human labels): each printed %F is a count of
  persons perceived feminine out of 3 (single: 3 images per occupation) or 40 (paired:
  20 partners x 2 orders), e.g. 66.67 = 2/3, 12.50 = 5/40 (checked within 0.005).
  Per-person labels realising those counts are scored by
  :func:`benchmark.tasks.pst.scores.sts`, giving the micro STS columns (Eq. 2) to 0.005, the
  overall STS 10.00 (single) and 47.38 (paired) of Tables 2, 3 and 13 (Eq. 1: the mean
  over all persons; with equal counts per identity also the mean of the micro STS
  column), and the female- / male-stereotyped rows of Table 3. The closed form
  micro STS = 100 - 2 %F (male-stereotyped) / 2 %F - 100 (female-stereotyped) is checked
  on the printed %F to 0.01 (a %F rounded to 0.005 is doubled).
* Table 15 repeats Table 14's micro STS; its gap (paired - single) is checked per
  occupation from the counts.
* Table 16 (organisational power): each micro STS is a count out of 3 (single) or 6
  (paired: 2 orders x 3 images); labels realising them give the Table 16 gaps and
  Table 4 (Overall / Powerless / Powerful).
* Table 13: the printed Average is the mean of the printed runs.
* Tables 2-4: the Gap column is paired - single of the printed values.

Where the paper's last digit is one unit off the exact value of its own tables the
tolerance is one unit (0.01) and ``OFF_BY_ONE_UNIT`` says why: Table 3 male-stereotyped
paired prints 49.74 where Table 14 gives 995 / 20 = 49.75 (its gap 79.74 is computed from
it, while the overall 47.38 = (49.75 + 45.00) / 2 agrees with 49.75); Tables 2,
4 and 13 print the power single overall as 4.62 where Table 16 gives 4.6296 and the
runs 4.6267 (truncated, not rounded); Table 4 prints Powerless / Powerful paired as
17.60 / 20.38 where Table 16 gives 17.593 / 20.370.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmark.tasks.pst.scores import micro_sts_from_percent_feminine, sts
from benchmark.tasks.paper_checks import PaperCheck, task_data

HALF_UNIT = 0.005  # printed to two decimals
ONE_UNIT = 0.01
# Persons per identity behind each table's micro STS (Sec. 4.3).
PERSONS = {("occupation", "single"): 3, ("occupation", "paired"): 40,
           ("power", "single"): 3, ("power", "paired"): 6}
POWER_STEREOTYPE = {"power": "male", "minor": "female"}  # Table 8: high power male, low power female
OFF_BY_ONE_UNIT = {
    ("Table 3", "occupation", "male", "paired"): "Table 14 gives 49.75; the paper prints 49.74",
    ("Table 2", "power", "overall", "single"): "Table 16 gives 4.6296; printed truncated",
    ("Table 4", "power", "overall", "single"): "Table 16 gives 4.6296; printed truncated",
    ("Table 4", "power", "female", "paired"): "Table 16 gives 17.593",
    ("Table 4", "power", "male", "paired"): "Table 16 gives 20.370",
    ("Table 13", "power", "single", "average"): "mean of the printed runs is 4.6267; printed truncated",
}


def load(name: str) -> pd.DataFrame:
    """A transcribed table, ``data/pst_<name>.csv``."""
    return pd.read_csv(task_data(__file__, f"pst_{name}.csv"), comment="#")


def labels_from_percent_feminine(pct_f: float, n: int) -> list[str]:
    """``n`` perceived genders of which round(n %F / 100) are feminine."""
    k = int(round(n * pct_f / 100.0))
    return ["feminine"] * k + ["masculine"] * (n - k)


def labels_from_micro_sts(micro: float, stereotyped_gender: str, n: int) -> list[str]:
    """``n`` perceived genders with micro STS ``micro``: round(n (1 + micro/100) / 2) conform."""
    k = int(round(n * (1.0 + micro / 100.0) / 2.0))
    conform = "masculine" if stereotyped_gender == "male" else "feminine"
    other = "feminine" if conform == "masculine" else "masculine"
    return [conform] * k + [other] * (n - k)


def occupation_persons(setting: str) -> tuple[list[str], list[str], list[str]]:
    """(predictions, references, identities): one row per person realising Table 14's %F."""
    t14 = load("table14")
    n = PERSONS[("occupation", setting)]
    preds, refs, ids = [], [], []
    for _, row in t14.iterrows():
        labels = labels_from_percent_feminine(float(row[f"pct_f_{setting}"]), n)
        preds += labels
        refs += [row["stereotyped_gender"]] * n
        ids += [row["occupation"]] * n
    return preds, refs, ids


def power_persons(setting: str) -> tuple[list[str], list[str], list[str]]:
    """One row per person realising Table 16's micro STS (identity "<occupation> power/minor")."""
    t16 = load("table16")
    n = PERSONS[("power", setting)]
    preds, refs, ids = [], [], []
    for _, row in t16.iterrows():
        gender = POWER_STEREOTYPE[row["power_level"]]
        preds += labels_from_micro_sts(float(row[f"micro_sts_{setting}"]), gender, n)
        refs += [gender] * n
        ids += [f"{row['occupation']} {row['power_level']}"] * n
    return preds, refs, ids


def _score(persons: tuple[list[str], list[str], list[str]]) -> dict:
    return sts(*persons, n_resamples=0)


def _tol(key: tuple) -> float:
    return ONE_UNIT if key in OFF_BY_ONE_UNIT else HALF_UNIT


def checks() -> list[PaperCheck]:
    out: list[PaperCheck] = []
    add = lambda source, quantity, printed, recomputed, tol=HALF_UNIT: out.append(  # noqa: E731
        PaperCheck("pst", source, quantity, float(printed), float(recomputed), tol))

    t14, t15, t16 = load("table14"), load("table15"), load("table16")
    summary, t13 = load("summary"), load("table13")
    occ = {s: _score(occupation_persons(s)) for s in ("single", "paired")}
    pwr = {s: _score(power_persons(s)) for s in ("single", "paired")}

    # Table 14: counts behind %F, micro STS from the counts and from the closed form.
    for setting, label in (("single", "Single"), ("paired", "PST")):
        n = PERSONS[("occupation", setting)]
        closed = micro_sts_from_percent_feminine(t14[f"pct_f_{setting}"], t14["stereotyped_gender"])
        for (_, row), closed_value in zip(t14.iterrows(), closed):
            pct = float(row[f"pct_f_{setting}"])
            k = round(n * pct / 100.0)
            add(f"Table 14, {row['occupation']}", f"%F ({label}) = {k}/{n} persons", pct, 100.0 * k / n)
            add(f"Table 14, {row['occupation']}", f"micro STS ({setting}) from per-person labels (Eq. 2)",
                row[f"micro_sts_{setting}"], occ[setting]["micro_sts"][row["occupation"]])
            add(f"Table 14, {row['occupation']}", f"micro STS ({setting}) = +/-(100 - 2 %F)",
                row[f"micro_sts_{setting}"], closed_value, ONE_UNIT)

    # Table 15: gap = paired - single, per occupation.
    for _, row in t15.iterrows():
        o = row["occupation"]
        add(f"Table 15, {o}", "micro STS gap (paired - single)", row["micro_sts_gap"],
            occ["paired"]["micro_sts"][o] - occ["single"]["micro_sts"][o])

    # Table 16: gap per power identity.
    for _, row in t16.iterrows():
        i = f"{row['occupation']} {row['power_level']}"
        add(f"Table 16, {i}", "micro STS gap (paired - single)", row["micro_sts_gap"],
            pwr["paired"]["micro_sts"][i] - pwr["single"]["micro_sts"][i])

    # Tables 2-4: overall (Eq. 1), per stereotyped gender, and the printed gap.
    scored = {"occupation": occ, "power": pwr}
    source_of = {"occupation": "Table 14", "power": "Table 16"}
    for _, row in summary.iterrows():
        table, aspect, group = row["table"], row["bias_aspect"], row["group"]
        for setting in ("single", "paired"):
            res = scored[aspect][setting]
            value = res["sts"] if group == "overall" else res["sts_by_stereotype"][
                "masculine" if group == "male" else "feminine"]
            key = (table, aspect, group, setting)
            add(f"{table}, {aspect}, {group}", f"STS ({setting}) from {source_of[aspect]} per-person labels"
                + (f" [{OFF_BY_ONE_UNIT[key]}]" if key in OFF_BY_ONE_UNIT else ""), row[setting], value, _tol(key))
        add(f"{table}, {aspect}, {group}", "gap = printed paired - printed single", row["gap"],
            row["paired"] - row["single"])

    # Table 13: the printed Average is the mean of the printed runs.
    for (aspect, setting), runs in t13.groupby(["bias_aspect", "setting"], sort=False):
        values = [float(v) for v in runs[runs["run"] != "average"]["sts"]]
        avg = runs[runs["run"] == "average"]["sts"]
        if len(avg):
            key = ("Table 13", aspect, setting, "average")
            add(f"Table 13, {aspect}, {setting}", f"Average = mean of runs {list(values)}"
                + (f" [{OFF_BY_ONE_UNIT[key]}]" if key in OFF_BY_ONE_UNIT else ""),
                avg.iloc[0], float(np.mean(values)), _tol(key))
    # Table 13's single paired-occupation run is Table 14's overall.
    run = t13[(t13["bias_aspect"] == "occupation") & (t13["setting"] == "paired") & (t13["run"] == "1")]
    add("Table 13, occupation, paired, run 1", "overall STS from Table 14 per-person labels (Eq. 1)",
        run["sts"].iloc[0], occ["paired"]["sts"])
    return out
