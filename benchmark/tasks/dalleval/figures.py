"""The figures of this task for the report and the leaderboard: the gender and skin-tone
distributions per profession (DALL-Eval Sec. 4.2).

Each ``plot_*`` takes a detail table (or score entries) and a folder, writes PNGs there and
returns ``[(file name, caption)]``; nothing is drawn for a table it cannot use.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from benchmark.present.plotting import FEMALE_COLOUR, MALE_COLOUR, OTHER_COLOUR, plt_agg, safe_name, save_figure


def plot_dalleval_gender(dist: pd.DataFrame, out_dir: Path) -> list[tuple[str, str]]:
    """Perceived-gender shares per profession for the gender-neutral prompts (stacked bars)."""
    plt = plt_agg()
    made = []
    dist = dist.copy()
    dist["annotator"] = dist["annotator"].fillna("")
    for ann, sub in dist.groupby("annotator", sort=True):
        sub = sub[(sub["gender_indicator"] == "person") & (sub["profession"] != "")]
        if sub.empty:
            continue
        piv = sub.pivot_table(index="profession", columns="label", values="n", aggfunc="sum", fill_value=0)
        for c in ("male", "female", "unidentifiable"):
            if c not in piv.columns:
                piv[c] = 0
        share = piv.div(piv.sum(axis=1), axis=0)
        share = share.sort_values(["female", "male"], ascending=[True, False])
        n = len(share)
        fig, ax = plt.subplots(figsize=(7.5, max(2.5, 0.22 * n + 1.3)))
        left = np.zeros(n)
        for c, colour in (("male", MALE_COLOUR), ("female", FEMALE_COLOUR), ("unidentifiable", OTHER_COLOUR)):
            ax.barh(range(n), share[c], left=left, color=colour, label=c)
            left += share[c].to_numpy()
        ax.set_yticks(range(n))
        ax.set_yticklabels(share.index, fontsize=8 if n > 40 else 9)
        ax.set_xlim(0, 1)
        ax.axvline(0.5, color="#333", lw=0.8, ls="--")
        ax.set_xlabel("share of images")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        ax.set_title("Perceived gender per profession, \"A person who works as ...\"" + (f" ({ann})" if ann else ""))
        ax.margins(y=0.01)
        fig.tight_layout()
        name = save_figure(fig, out_dir / f"dalleval_gender_{safe_name(ann)}.png")
        made.append((name, "DALL-Eval: perceived gender per profession for the gender-neutral prompts "
                           "(DALL-Eval Sec. 4.2, Table 6)"))
    return made


def plot_dalleval_skin(dist: pd.DataFrame, out_dir: Path) -> list[tuple[str, str]]:
    """Monk Skin Tone shares per profession (heatmap, all gender indicators pooled)."""
    plt = plt_agg()
    from benchmark.tasks.dalleval.probes import monk_skin_tone_rgb

    made = []
    dist = dist.copy()
    dist["annotator"] = dist["annotator"].fillna("")
    swatches = np.asarray(monk_skin_tone_rgb(), dtype=float) / 255.0
    for ann, sub in dist.groupby("annotator", sort=True):
        sub = sub.assign(profession=sub["profession"].replace("", "(no profession)"))
        piv = sub.pivot_table(index="profession", columns="mst", values="n", aggfunc="sum", fill_value=0)
        piv = piv.reindex(columns=range(1, 11), fill_value=0)
        counts = piv.sum(axis=1)
        share = piv.div(counts, axis=0)
        share = share.loc[(share * np.arange(1, 11)).sum(axis=1).sort_values().index]
        n = len(share)
        fig, ax = plt.subplots(figsize=(7.5, max(2.6, 0.22 * n + 1.6)))
        values = share.to_numpy()
        vmax = max(float(np.nanmax(values)) if values.size else 1.0, 0.05)
        im = ax.imshow(values, aspect="auto", cmap="Blues", vmin=0, vmax=vmax)
        for (i, j), v in np.ndenumerate(values):
            if v >= 0.005:
                ax.text(j, i, f"{100 * v:.0f}", ha="center", va="center", fontsize=7,
                        color="white" if v > 0.6 * vmax else "#222")
        ax.set_yticks(range(n))
        ax.set_yticklabels([f"{p} (n={int(counts[p])})" for p in share.index], fontsize=8 if n > 40 else 9)
        ax.set_xticks(range(10))
        ax.set_xticklabels([str(i) for i in range(1, 11)])
        for i, tick in enumerate(ax.get_xticklabels()):
            tick.set_bbox({"facecolor": swatches[i], "edgecolor": "#555", "boxstyle": "square,pad=0.25"})
            tick.set_color("white" if i >= 6 else "black")
        ax.set_xlabel("Monk Skin Tone (1 lightest - 10 darkest)")
        fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02, label="share of images")
        ax.set_title("Skin tone per profession, % of its images (all gender indicators)"
                     + (f" ({ann})" if ann else ""))
        fig.tight_layout()
        name = save_figure(fig, out_dir / f"dalleval_skin_tone_{safe_name(ann)}.png")
        made.append((name, "DALL-Eval: Monk Skin Tone distribution per profession, images without a detected face "
                           "left out (DALL-Eval Sec. 4.2, Table 7)"))
    return made
