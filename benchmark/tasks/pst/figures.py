"""The figures of this task for the report and the leaderboard: micro STS per identity, sorted ascending (PST Fig. 3).

Each ``plot_*`` takes a detail table (or score entries) and a folder, writes PNGs there and
returns ``[(file name, caption)]``; nothing is drawn for a table it cannot use.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from benchmark.present.plotting import FEMALE_COLOUR, MALE_COLOUR, plt_agg, safe_name, save_figure


def plot_micro_sts(micro: pd.DataFrame, out_dir: Path) -> list[tuple[str, str]]:
    """PST Fig. 3: micro STS per identity, sorted ascending, coloured by stereotyped gender."""
    plt = plt_agg()
    made = []
    micro = micro.copy()
    micro["annotator"] = micro["annotator"].fillna("")
    for (suite, subset, ann), sub in micro.groupby(["suite", "subset", "annotator"], sort=False):
        sub = sub.dropna(subset=["micro_sts"]).sort_values("micro_sts")
        if sub.empty:
            continue
        n = len(sub)
        fig, ax = plt.subplots(figsize=(7.5, max(2.5, 0.24 * n + 1.2)))
        colours = [MALE_COLOUR if g in ("masculine", "male") else FEMALE_COLOUR for g in sub["stereotyped_gender"]]
        ax.barh(range(n), sub["micro_sts"], color=colours)
        ax.set_yticks(range(n))
        ax.set_yticklabels(sub["identity"], fontsize=8 if n > 40 else 9)
        ax.axvline(0, color="#333", lw=0.8)
        ax.set_xlim(-105, 105)
        ax.set_xlabel("micro STS (+100: every person matches the stereotype, -100: none does)")
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color=MALE_COLOUR, label="male-stereotyped"),
                           Patch(color=FEMALE_COLOUR, label="female-stereotyped")],
                  loc="lower right", frameon=True, fontsize=8)
        ax.set_title(f"Micro STS, {suite} ({subset})" + (f", {ann}" if ann else ""))
        ax.margins(y=0.01)
        fig.tight_layout()
        name = save_figure(fig, out_dir / f"sts_{safe_name(suite, subset, ann)}.png")
        made.append((name, f"Micro STS per identity, {suite}, {subset}, sorted ascending (as PST Fig. 3)"))
    return made
