"""The figures of this task for the report and the leaderboard: GEP vectors per attribute (GEP Fig. 2).

Each ``plot_*`` takes a detail table (or score entries) and a folder, writes PNGs there and
returns ``[(file name, caption)]``; nothing is drawn for a table it cannot use.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from benchmark.present.plotting import FEMALE_COLOUR, MALE_COLOUR, OTHER_COLOUR, plt_agg, safe_name, save_figure
from benchmark.present.plotting import fmt_num as _num


def plot_gep(vec: pd.DataFrame, out_dir: Path) -> list[tuple[str, str]]:
    """GEP Fig. 2: woman-minus-man frequency difference per attribute, neutral and explicit
    settings stacked, one figure per estimator (and annotator)."""
    plt = plt_agg()
    from matplotlib.ticker import NullLocator

    made = []
    vec = vec.copy()
    vec["annotator"] = vec["annotator"].fillna("")
    # the setting of each row (older runs' tables have none: it is the suite name's last part)
    vec["setting"] = vec["setting"] if "setting" in vec.columns else vec["suite"].astype(str).str.rsplit("_", n=1).str[-1]
    # neutral and explicit settings, the headline pair of each suite (its first pair of groups:
    # woman / man in the papers' config; other pairs of a variant are in the score tables)
    pair = vec["group_a"].astype(str) + "|" + vec["group_b"].astype(str)
    main = vec[vec["setting"].isin(["neutral", "explicit"]) & (pair == pair.groupby(vec["suite"]).transform("first"))]
    for (est, ann), sub in main.groupby(["estimator", "annotator"], sort=True):
        suites = list(dict.fromkeys(sub["suite"]))
        attrs = list(dict.fromkeys(sub.loc[sub["suite"] == suites[0], "attribute"]))
        for s in suites[1:]:
            attrs += [a for a in dict.fromkeys(sub.loc[sub["suite"] == s, "attribute"]) if a not in attrs]
        fig, axes = plt.subplots(len(suites), 1, figsize=(max(7.0, 0.55 * len(attrs) + 2), 3.2 * len(suites)),
                                 squeeze=False)
        bounded = est not in ("C", "CC")
        for ax, s in zip(axes[:, 0], suites):
            d = sub[sub["suite"] == s].set_index("attribute").reindex(attrs)
            vals = d["difference"].to_numpy(dtype=float)
            colours = [FEMALE_COLOUR if v > 0 else MALE_COLOUR for v in np.nan_to_num(vals)]
            ax.bar(range(len(attrs)), np.nan_to_num(vals), color=colours)
            ax.axhline(0, color="#333", lw=0.8)
            if bounded:
                ax.set_yscale("symlog", linthresh=0.1, linscale=1.5)
                ax.set_ylim(-1.05, 1.05)
                ax.set_yticks([-1, -0.3, -0.1, 0, 0.1, 0.3, 1])
                ax.set_yticklabels(["-1", "-0.3", "-0.1", "0", "0.1", "0.3", "1"])
                ax.yaxis.set_minor_locator(NullLocator())
                ax.grid(axis="y", color="#e5e5e5", lw=0.6)
                ax.set_axisbelow(True)
            ax.set_xticks(range(len(attrs)))
            ax.set_xticklabels(attrs, rotation=40, ha="right")
            score = d["gep_score"].dropna()
            first = sub[sub["suite"] == s].iloc[0]
            ax.set_title(f"{s} ({first['setting']}): GEP = {_num(score.iloc[0]) if len(score) else 'n/a'}")
            ax.set_ylabel(f"f({first['group_a']}) - f({first['group_b']})")
            for i, v in enumerate(vals):
                if np.isnan(v):
                    ax.text(i, 0, "n/a", ha="center", va="bottom", fontsize=8, color="#777")
        fig.suptitle(f"GEP vector, estimator {est}" + (f" ({ann})" if ann else "")
                     + ("  [symmetric log scale]" if bounded else "  [raw CLIP cosines]"), fontsize=11)
        fig.tight_layout()
        name = save_figure(fig, out_dir / f"gep_{safe_name(est, ann)}.png")
        made.append((name, f"GEP vector per attribute ({est}{', ' + ann if ann else ''}): frequency among images "
                           "of women minus among images of men; orange = more frequent for women, blue = for men "
                           "(as GEP Fig. 2)"))
    occ = vec[vec["setting"] == "occupation"]
    for (est, ann), sub in occ.groupby(["estimator", "annotator"], sort=True):
        attrs = list(dict.fromkeys(sub["attribute"]))
        pairs = list(dict.fromkeys(zip(sub["group_a"], sub["group_b"])))
        fig, ax = plt.subplots(figsize=(7, 3.4))
        width = 0.8 / max(len(pairs), 1)
        for k, (ga, gb) in enumerate(pairs):
            d = sub[(sub["group_a"] == ga) & (sub["group_b"] == gb)].set_index("attribute").reindex(attrs)
            ax.bar(np.arange(len(attrs)) + (k - (len(pairs) - 1) / 2) * width, d["difference"].fillna(0), width,
                   label=f"{ga} - {gb}", color=[FEMALE_COLOUR, MALE_COLOUR, OTHER_COLOUR][k % 3])
        ax.axhline(0, color="#333", lw=0.8)
        ax.set_xticks(range(len(attrs)))
        ax.set_xticklabels(attrs)
        ax.set_ylabel("frequency difference")
        ax.legend(frameon=False)
        ax.set_title(f"GEP occupation case study, estimator {est}" + (f" ({ann})" if ann else ""))
        fig.tight_layout()
        name = save_figure(fig, out_dir / f"gep_occupation_{safe_name(est, ann)}.png")
        made.append((name, f"Occupation case study (GEP Sec. 7): attribute frequency of each gendered prompt "
                           f"minus the unspecified one ({est})"))
    return made
