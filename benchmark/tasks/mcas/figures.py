"""The figures of this task for the report and the leaderboard: MCAS per target keyword, by category (MCAS Figs. 3-6).

Each ``plot_*`` takes a detail table (or score entries) and a folder, writes PNGs there and
returns ``[(file name, caption)]``; nothing is drawn for a table it cannot use.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from benchmark.present.plotting import FEMALE_COLOUR, MALE_COLOUR, OTHER_COLOUR, plt_agg, safe_name, save_figure


def plot_mcas(table: pd.DataFrame, out_dir: Path) -> list[tuple[str, str]]:
    """MCAS Figs. 3-6: MCAS per target keyword, one panel per category."""
    plt = plt_agg()
    made = []
    for enc, sub in table.groupby("encoder", sort=False):
        if enc != "mean" and "mean" in set(table["encoder"]):
            continue  # per-encoder values are in the detail table; plot what the scores use
        sub = sub.copy()
        sub["category"] = sub["category"].fillna("other")
        cats = list(dict.fromkeys(sub["category"]))
        ncol = 2 if len(cats) > 1 else 1
        nrow = math.ceil(len(cats) / ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(6.2 * ncol, 3.4 * nrow), squeeze=False)
        lim = float(np.nanmax(np.abs(sub["mcas"].to_numpy(dtype=float)))) * 1.15 or 1.0
        for ax, cat in zip(axes.flat, cats):
            d = sub[sub["category"] == cat]
            colours = [MALE_COLOUR if s == "male" else FEMALE_COLOUR if s == "female" else OTHER_COLOUR
                       for s in d.get("stereotype", pd.Series([None] * len(d)))]
            ax.bar(range(len(d)), d["mcas"], color=colours)
            ax.axhline(0, color="#333", lw=0.8)
            ax.set_xticks(range(len(d)))
            ax.set_xticklabels(d["target"], rotation=35, ha="right", fontsize=9)
            ax.set_ylim(-lim, lim)
            ax.set_title(f"MCAS scores for {cat}")
            ax.set_ylabel("MCAS (+ male, - female)")
        for ax in list(axes.flat)[len(cats):]:
            ax.axis("off")
        from matplotlib.patches import Patch

        fig.legend(handles=[Patch(color=MALE_COLOUR, label="male-associated target"),
                            Patch(color=FEMALE_COLOUR, label="female-associated target")],
                   loc="upper right", frameon=False, fontsize=9)
        fig.suptitle(f"MCAS per target ({'components averaged over encoders' if enc == 'mean' else enc})",
                     fontsize=11, x=0.02, ha="left")
        fig.tight_layout(rect=(0, 0, 1, 0.95))
        name = save_figure(fig, out_dir / f"mcas_{safe_name(enc)}.png")
        made.append((name, "MCAS per target keyword by category (as MCAS Figs. 3-6); bar colour = the "
                           "gender the target is stereotypically associated with"))
    return made
