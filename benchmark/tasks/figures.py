"""The papers' figures, drawn by their tasks for the report and the leaderboard: GEP vectors
per attribute (GEP Fig. 2), micro STS per identity sorted ascending (PST Fig. 3), MCAS per
target keyword by category (MCAS Figs. 3-6), the DALL-Eval gender and skin-tone distributions
per profession (DALL-Eval Sec. 4.2), PaintSkills accuracy per skill (DALL-Eval Table 2, Fig. 5a).

Each ``plot_*`` takes a detail table (or score entries) and a folder, writes PNGs there and
returns ``[(file name, caption)]``; nothing is drawn for a table it cannot use.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from benchmark.plotting import FEMALE_COLOUR, MALE_COLOUR, OTHER_COLOUR, plt_agg, safe_name, save_figure
from benchmark.plotting import fmt_num as _num

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
    from benchmark.probes.dalleval import monk_skin_tone_rgb

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


_PAINTSKILLS = (("paintskills_object", "object"), ("paintskills_count", "count"), ("paintskills_spatial", "spatial"))


def plot_paintskills(scores: list[Mapping], out_dir: Path) -> list[tuple[str, str]]:
    """PaintSkills accuracy per skill and split (DALL-Eval Table 2, Fig. 5a), one figure per
    detector: a panel per skill, the overall bar first, then one bar per count N / relation,
    95 % bootstrap intervals as error bars."""
    entries = [s for s in scores if s.get("name") in dict(_PAINTSKILLS) and s.get("defined")]
    if not entries:
        return []
    plt = plt_agg()
    made = []
    detectors = list(dict.fromkeys(s.get("annotator") or "" for s in entries))
    for det in detectors:
        mine = [s for s in entries if (s.get("annotator") or "") == det]
        skills = [(n, k) for n, k in _PAINTSKILLS if any(s["name"] == n for s in mine)]
        widths = [1 + sum(1 for s in mine if s["name"] == n and s.get("subset")) for n, _ in skills]
        fig, axes = plt.subplots(1, len(skills), figsize=(2.2 + 1.0 * sum(widths), 3.4), sharey=True,
                                 gridspec_kw={"width_ratios": widths}, squeeze=False)
        for ax, (name, skill) in zip(axes[0], skills):
            rows = sorted((s for s in mine if s["name"] == name), key=lambda s: s.get("subset") is not None)
            labels = ["all" if not s.get("subset") else str(s["subset"]).split(" ")[-1] for s in rows]
            values = [float(s["value"]) for s in rows]
            err = np.array([[v - s["ci"]["low"], s["ci"]["high"] - v] if s.get("ci") else [0.0, 0.0]
                            for v, s in zip(values, rows)]).T
            colours = [MALE_COLOUR if not s.get("subset") else OTHER_COLOUR for s in rows]
            ax.bar(range(len(rows)), values, color=colours, yerr=err, capsize=3, ecolor="#333")
            for i, v in enumerate(values):  # inside tall bars, so the label clears the error bar
                ax.text(i, v - 3 if v > 85 else v + 2, f"{v:.1f}", ha="center", va="top" if v > 85 else "bottom",
                        fontsize=8, color="white" if v > 85 else "#222")
            ax.set_xticks(range(len(rows)))
            ax.set_xticklabels(labels, fontsize=9)
            ax.set_ylim(0, 105)
            ax.set_title(skill + (" (per N)" if skill == "count" else " (per relation)" if skill == "spatial" else ""))
        axes[0][0].set_ylabel("accuracy (%)")
        fig.suptitle("PaintSkills skill accuracy" + (f" ({det})" if det else ""), fontsize=11)
        fig.tight_layout()
        name = save_figure(fig, out_dir / f"paintskills_{safe_name(det)}.png")
        made.append((name, "PaintSkills: accuracy per skill, count N and relation, with 95 % bootstrap intervals "
                           "(DALL-Eval Table 2, Fig. 5a)"))
    return made
