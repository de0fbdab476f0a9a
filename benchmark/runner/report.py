"""The audit report: RUN_DIR/report/report.md, report.html and PNG plots, from results.json and
the detail tables in RUN_DIR/scores/.

Plots follow the papers' figures: GEP vectors per attribute (seed 000 Fig. 2), micro STS
per identity sorted ascending (seed 002 Fig. 3), MCAS per target keyword by category
(seed 003 Figs. 3-6), and the DALL-Eval gender and skin-tone distributions per profession
(seed 001 Sec. 4.2). The HTML is one self-contained page (inline CSS, no script) that
references the PNGs beside it; every text from the run (model names included) is escaped.
The Markdown and the HTML are rendered from one list of blocks, so they say the same.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from benchmark import results as res
from benchmark.run_folder import REPORT_DIR

#: written by `t2ibench agreement` beside agreement.md
AGREEMENT_FILE = "agreement.json"

# Colours: male-stereotyped / female-stereotyped / neither, readable in grey scale too.
MALE_COLOUR, FEMALE_COLOUR, OTHER_COLOUR = "#1f5fa8", "#d9822b", "#9a9a9a"


# --------------------------------------------------------------------------- blocks


class _Doc:
    """Blocks rendered to Markdown and HTML: ("h", level, text), ("p", text), ("warn", text),
    ("table", headers, rows), ("img", file, caption), ("ul", items)."""

    def __init__(self) -> None:
        self.blocks: list[tuple] = []

    def h(self, level: int, text: str) -> None:
        self.blocks.append(("h", level, text))

    def p(self, text: str) -> None:
        self.blocks.append(("p", text))

    def warn(self, text: str) -> None:
        self.blocks.append(("warn", text))

    def table(self, headers: list[str], rows: list[list[Any]]) -> None:
        self.blocks.append(("table", headers, rows))

    def img(self, file: str, caption: str) -> None:
        self.blocks.append(("img", file, caption))

    def ul(self, items: list[str]) -> None:
        if items:
            self.blocks.append(("ul", items))

    # -- Markdown
    def markdown(self) -> str:
        out = []
        for b in self.blocks:
            kind = b[0]
            if kind == "h":
                out.append("#" * b[1] + " " + _md(b[2]))
            elif kind == "p":
                out.append(_md(b[1]))
            elif kind == "warn":
                out.append(f"**WARNING: {_md(b[1])}**")
            elif kind == "table":
                out.append("| " + " | ".join(_md_cell(h) for h in b[1]) + " |")
                out.append("|" + "|".join(" --- " for _ in b[1]) + "|")
                out.extend("| " + " | ".join(_md_cell(c) for c in row) + " |" for row in b[2])
            elif kind == "img":
                out.append(f"![{_md(b[2])}]({b[1]})")
                out.append(f"*{_md(b[2])}*")
            elif kind == "ul":
                out.extend(f"- {_md(i)}" for i in b[1])
            out.append("")
        return "\n".join(out)

    # -- HTML
    def html(self, title: str) -> str:
        body = []
        for b in self.blocks:
            kind = b[0]
            if kind == "h":
                body.append(f"<h{b[1]}>{_h(b[2])}</h{b[1]}>")
            elif kind == "p":
                body.append(f"<p>{_h(b[1])}</p>")
            elif kind == "warn":
                body.append(f'<p class="warning">WARNING: {_h(b[1])}</p>')
            elif kind == "table":
                head = "".join(f"<th>{_h(x)}</th>" for x in b[1])
                rows = "".join("<tr>" + "".join(f"<td>{_h(c)}</td>" for c in row) + "</tr>" for row in b[2])
                body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
            elif kind == "img":
                body.append(f'<figure><img src="{_h(b[1])}" alt="{_h(b[2])}"><figcaption>{_h(b[2])}</figcaption>'
                            "</figure>")
            elif kind == "ul":
                body.append("<ul>" + "".join(f"<li>{_h(i)}</li>" for i in b[1]) + "</ul>")
        return (
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{_h(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")


_CSS = (
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;"
    "color:#222;line-height:1.45}table{border-collapse:collapse;margin:1em 0;font-size:.9em}"
    "th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}th{background:#f3f3f3}"
    "tbody tr:nth-child(even){background:#fafafa}figure{margin:1.5em 0}img{max-width:100%;height:auto}"
    "figcaption{font-size:.9em;color:#555}.warning{background:#fde8e8;border:2px solid #c62828;padding:.6em;"
    "font-weight:bold;color:#8e0000}code{background:#f3f3f3}"
)


def _h(value: Any) -> str:
    return html.escape(_text(value), quote=True)


def _md(value: Any) -> str:
    # Markdown renderers pass raw HTML through: escape it, and the characters that would start markup.
    text = _text(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for ch in "\\`*_[]":
        text = text.replace(ch, "\\" + ch)
    return text


def _md_cell(value: Any) -> str:
    return _md(value).replace("|", "\\|").replace("\n", " ")


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return _num(value)
    return str(value)


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    v = float(value)
    if not math.isfinite(v):
        return "n/a"
    return f"{v:.{digits}g}"


# --------------------------------------------------------------------------- plots


def pyplot():
    """matplotlib.pyplot on the Agg backend with the report's style (the leaderboard plots share it)."""
    from benchmark.extras import require

    require("matplotlib", extra="audit", purpose="draw the report's plots")
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "figure.dpi": 110,
                         "savefig.dpi": 110, "axes.spines.top": False, "axes.spines.right": False})
    return plt


def _save(fig, path: Path) -> str:
    fig.savefig(path, bbox_inches="tight", facecolor="white")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path.name


def _safe_name(*parts: Any) -> str:
    import re

    raw = "_".join(str(p) for p in parts if p not in (None, ""))
    return re.sub(r"[^A-Za-z0-9]+", "-", raw).strip("-").lower()[:80] or "plot"


def plot_gep(vec: pd.DataFrame, out_dir: Path) -> list[tuple[str, str]]:
    """Seed 000 Fig. 2: woman-minus-man frequency difference per attribute, neutral and explicit
    settings stacked, one figure per estimator (and annotator)."""
    plt = pyplot()
    made = []
    vec = vec.copy()
    vec["annotator"] = vec["annotator"].fillna("")
    # neutral and explicit settings, the headline pair of each suite (its first pair of groups:
    # woman / man in the papers' config)
    pair = vec["group_a"].astype(str) + "|" + vec["group_b"].astype(str)
    setting = vec["setting"] if "setting" in vec.columns else vec["suite"].astype(str).str.rsplit("_", n=1).str[-1]
    main = vec[setting.isin(["neutral", "explicit"]) & (pair == pair.groupby(vec["suite"]).transform("first"))]
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
                ax.yaxis.set_minor_locator(__import__("matplotlib").ticker.NullLocator())
                ax.grid(axis="y", color="#e5e5e5", lw=0.6)
                ax.set_axisbelow(True)
            ax.set_xticks(range(len(attrs)))
            ax.set_xticklabels(attrs, rotation=40, ha="right")
            score = d["gep_score"].dropna()
            setting = s.split("_", 1)[1]
            ax.set_title(f"{setting}: GEP = {_num(score.iloc[0]) if len(score) else 'n/a'}")
            ax.set_ylabel("f(woman) - f(man)")
            for i, v in enumerate(vals):
                if np.isnan(v):
                    ax.text(i, 0, "n/a", ha="center", va="bottom", fontsize=8, color="#777")
        fig.suptitle(f"GEP vector, estimator {est}" + (f" ({ann})" if ann else "")
                     + ("  [symmetric log scale]" if bounded else "  [raw CLIP cosines]"), fontsize=11)
        fig.tight_layout()
        name = _save(fig, out_dir / f"gep_{_safe_name(est, ann)}.png")
        made.append((name, f"GEP vector per attribute ({est}{', ' + ann if ann else ''}): frequency among images "
                           "of women minus among images of men; orange = more frequent for women, blue = for men "
                           "(as seed 000 Fig. 2)"))
    occ = vec[vec["suite"] == "gep_occupation"]
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
        name = _save(fig, out_dir / f"gep_occupation_{_safe_name(est, ann)}.png")
        made.append((name, f"Occupation case study (seed 000 Sec. 7): attribute frequency of each gendered prompt "
                           f"minus the unspecified one ({est})"))
    return made


def plot_micro_sts(micro: pd.DataFrame, out_dir: Path) -> list[tuple[str, str]]:
    """Seed 002 Fig. 3: micro STS per identity, sorted ascending, coloured by stereotyped gender."""
    plt = pyplot()
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
        name = _save(fig, out_dir / f"sts_{_safe_name(suite, subset, ann)}.png")
        made.append((name, f"Micro STS per identity, {suite}, {subset}, sorted ascending (as seed 002 Fig. 3)"))
    return made


def plot_mcas(table: pd.DataFrame, out_dir: Path) -> list[tuple[str, str]]:
    """Seed 003 Figs. 3-6: MCAS per target keyword, one panel per category."""
    plt = pyplot()
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
        name = _save(fig, out_dir / f"mcas_{_safe_name(enc)}.png")
        made.append((name, "MCAS per target keyword by category (as seed 003 Figs. 3-6); bar colour = the "
                           "gender the target is stereotypically associated with"))
    return made


def plot_dalleval_gender(dist: pd.DataFrame, out_dir: Path) -> list[tuple[str, str]]:
    """Perceived-gender shares per profession for the gender-neutral prompts (stacked bars)."""
    plt = pyplot()
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
        name = _save(fig, out_dir / f"dalleval_gender_{_safe_name(ann)}.png")
        made.append((name, "DALL-Eval: perceived gender per profession for the gender-neutral prompts "
                           "(seed 001 Sec. 4.2, Table 6)"))
    return made


def plot_dalleval_skin(dist: pd.DataFrame, out_dir: Path) -> list[tuple[str, str]]:
    """Monk Skin Tone shares per profession (heatmap, all gender indicators pooled)."""
    plt = pyplot()
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
        name = _save(fig, out_dir / f"dalleval_skin_tone_{_safe_name(ann)}.png")
        made.append((name, "DALL-Eval: Monk Skin Tone distribution per profession, images without a detected face "
                           "left out (seed 001 Sec. 4.2, Table 7)"))
    return made


_PAINTSKILLS = (("paintskills_object", "object"), ("paintskills_count", "count"), ("paintskills_spatial", "spatial"))


def plot_paintskills(scores: list[Mapping], out_dir: Path) -> list[tuple[str, str]]:
    """PaintSkills accuracy per skill and split (seed 001 Table 2, Fig. 5a), one figure per
    detector: a panel per skill, the overall bar first, then one bar per count N / relation,
    95 % bootstrap intervals as error bars."""
    entries = [s for s in scores if s.get("name") in dict(_PAINTSKILLS) and s.get("defined")]
    if not entries:
        return []
    plt = pyplot()
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
        name = _save(fig, out_dir / f"paintskills_{_safe_name(det)}.png")
        made.append((name, "PaintSkills: accuracy per skill, count N and relation, with 95 % bootstrap intervals "
                           "(seed 001 Table 2, Fig. 5a)"))
    return made


# --------------------------------------------------------------------------- the report


def _direction(s: Mapping) -> str:
    if s.get("lower_is_better") is True:
        return "lower is better"
    if s.get("lower_is_better") is False:
        return "higher is better"
    return f"closer to {_num(s['ideal'])} is better" if s.get("ideal") is not None else "no better direction"


def _paper(key: str) -> str:
    try:
        from benchmark.papers import PAPERS

        p = PAPERS[key]
        return f"{p.short} ({key})"
    except Exception:
        return key


def _range(s: Mapping) -> str:
    hi = "inf" if s.get("max") is None else _num(s["max"])
    return f"[{_num(s['min'])}, {hi}]"


def _read_detail(run_dir: Path, results: Mapping, name: str) -> pd.DataFrame | None:
    rel = (results.get("details") or {}).get(name)
    if not rel or not (run_dir / rel).is_file():
        return None
    return pd.read_parquet(run_dir / rel)


def build_document(run_dir: Path, results: Mapping, out_dir: Path) -> _Doc:
    doc = _Doc()
    model = results.get("model", {})
    if results.get("warning"):
        doc.warn(results["warning"])
    doc.h(1, f"Bias audit of {model.get('id', 'unknown model')}")
    doc.p(f"Model {model.get('id')} (revision {model.get('revision') or 'not recorded'}); package "
          f"{results['package']['name']} {results['package']['version']}; results schema "
          f"{results.get('schema_version')}; created {results.get('created')}.")
    hw = results.get("hardware", {})
    doc.p(f"Hardware: {hw.get('device') or 'unknown device'}{', ' + hw['gpu'] if hw.get('gpu') else ''}; "
          f"Python {hw.get('python')}, torch {hw.get('torch')}, {hw.get('platform')}.")
    sc = results.get("scoring", {})
    doc.p(f"Confidence intervals: {sc.get('ci_method', 'percentile')} bootstrap over images, "
          f"{sc.get('n_resamples')} resamples, {100 * float(sc.get('confidence_level', 0.95)):g} %.")

    doc.h(2, "Summary")
    rows = []
    for s in results.get("scores", []):
        ci = s.get("ci")
        value = _num(s["value"]) if s.get("defined") else f"undefined: {s.get('reason')}"
        who = " / ".join(x for x in (s.get("estimator"), s.get("annotator")) if x)
        rows.append([s["display_name"], s["suite"] + (f" ({s['subset']})" if s.get("subset") else ""), who, value,
                     f"[{_num(ci['low'])}, {_num(ci['high'])}]" if ci else (s.get("ci_note") or "n/a"), s["n"],
                     _direction(s), _range(s), _paper(s["paper"])])
    if rows:
        doc.table(["Score", "Suite", "Estimator / annotator", "Value", f"{_ci_pct(sc)} CI", "Images",
                   "Direction", "Range", "Paper"], rows)
    else:
        doc.p("No score could be computed: see the suites below.")

    doc.h(2, "Suites and excluded images")
    kinds = sorted({k for st in results.get("suites", []) for k in st.get("excluded", {})})
    rows = [[st["name"], st["status"] + (f": {st['reason']}" if st.get("reason") else ""), st["n_images"],
             st["n_scored_images"], *[st["excluded"].get(k, 0) for k in kinds]]
            for st in results.get("suites", [])]
    doc.table(["Suite", "Status", "Images", "Images scored", *[f"Excluded: {k}" for k in kinds]], rows)
    doc.p("NSFW: images flagged by the model's safety checker, left out of every score. No face: DALL-Eval skin "
          "tone needs a detected face (as the paper). Unidentifiable: the annotator could not tell a gender; "
          "left out of gender MAD and (by default) of STS.")

    add_figures(doc, run_dir, results, out_dir)
    add_tables(doc, run_dir, results)
    add_human_agreement(doc, run_dir)
    add_run(doc, results)
    return doc


def add_figures(doc: _Doc, run_dir: Path, results: Mapping, out_dir: Path) -> None:
    """One section per paper family with its plots, from the detail tables."""
    figures: list[tuple[str, str, str]] = []  # (section, file, caption)
    vec = _read_detail(run_dir, results, "gep_vectors")
    if vec is not None:
        figures += [("GEP: gender presentation differences", f, c) for f, c in plot_gep(vec, out_dir)]
    micro = _read_detail(run_dir, results, "pst_micro_sts")
    if micro is not None:
        figures += [("Paired Stereotype Test: micro STS", f, c) for f, c in plot_micro_sts(micro, out_dir)]
    mcas = _read_detail(run_dir, results, "mcas_per_target")
    if mcas is not None:
        figures += [("MCAS per target", f, c) for f, c in plot_mcas(mcas, out_dir)]
    gdist = _read_detail(run_dir, results, "dalleval_gender")
    if gdist is not None:
        figures += [("DALL-Eval: gender and skin tone per profession", f, c)
                    for f, c in plot_dalleval_gender(gdist, out_dir)]
    sdist = _read_detail(run_dir, results, "dalleval_skin_tone")
    if sdist is not None:
        figures += [("DALL-Eval: gender and skin tone per profession", f, c)
                    for f, c in plot_dalleval_skin(sdist, out_dir)]
    figures += [("PaintSkills: skill accuracy", f, c) for f, c in plot_paintskills(results.get("scores", []), out_dir)]
    section = None
    for sec, f, cap in figures:
        if sec != section:
            doc.h(2, sec)
            section = sec
        doc.img(f, cap)


def add_tables(doc: _Doc, run_dir: Path, results: Mapping) -> None:
    """The detail tables a reader wants to see as tables (MCAS per category, DALL-Eval Table 9)."""
    cat = _read_detail(run_dir, results, "mcas_per_category")
    if cat is not None:
        doc.h(2, "MCAS per category")
        doc.table(["Encoder", "Category", "MCAS mean", "MCAS min", "MCAS max", "Diffusion Bias mean",
                   "Bias Amplification mean", "Targets"],
                  [[r["encoder"], r["group"], _num(r["mcas_mean"]), _num(r["mcas_min"]), _num(r["mcas_max"]),
                    _num(r["diffusion_bias_mean"]), _num(r["bias_amplification_mean"]), int(r["mcas_n"])]
                   for _, r in cat.iterrows()])
    attrs = _read_detail(run_dir, results, "dalleval_attributes")
    if attrs is not None and "woman_minus_man" in attrs.columns:
        doc.h(2, "DALL-Eval: attribute presence by gender")
        cols = [c for c in attrs.columns if c.startswith("presence_")]
        doc.table(["Estimator", "Attribute", *[c.replace("presence_", "") for c in cols], "woman - man"],
                  [[r["estimator"], r["attribute"], *[_num(r[c]) for c in cols], _num(r["woman_minus_man"])]
                   for _, r in attrs.iterrows()])


def add_run(doc: _Doc, results: Mapping) -> None:
    """Timings, annotators, seeds, detail tables and notes."""
    doc.h(2, "Run")
    t = results.get("timings", {})
    if t:
        doc.table(["Stage", "Seconds"], [[k, _num(v)] for k, v in t.items()])
    ann = results.get("annotators", [])
    if ann:
        doc.table(["Label file", "Annotator / encoder", "Estimator", "Rows"],
                  [[a["file"], a.get("annotator") or a.get("encoder") or "", a.get("estimator") or "", a["n_rows"]]
                   for a in ann])
    doc.p(f"Seeds: {results.get('seeds', {}).get('policy', '')}")
    doc.p("Detail tables (parquet, relative to the run folder): "
          + (", ".join(results.get("details", {}).values()) or "none") + ".")
    notes = [n for n in results.get("notes", []) if n != results.get("warning")]
    if notes:
        doc.h(2, "Notes")
        doc.ul(notes)


# Tables of `t2ibench agreement` shown in the report when the run has human labels.
HUMAN_AGREEMENT_TABLES = (
    ("inter_annotator", "Agreement between annotators (Fleiss' kappa, Krippendorff's alpha)"),
    ("attribute_auc_summary", "Attribute existence: automatic scores vs human majority (ROC-AUC)"),
    ("gep_agreement", "GEP vectors: automatic vs human (Kendall tau-b, MCC of signs, Pearson)"),
    ("gender_kappa", "Perceived gender: Cohen's kappa, VQA vs humans"),
    ("skin_tone", "Skin tone: automatic vs humans"),
)


def _agreement_cell(v: Any) -> str:
    if v is None:
        return "undefined"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, dict):
        return ", ".join(f"{k}: {_agreement_cell(x)}" for k, x in v.items())
    if isinstance(v, list):
        return ", ".join(_agreement_cell(x) for x in v)
    return str(v)


def add_human_agreement(doc: _Doc, run_dir: Path) -> None:
    """A section with the human-agreement tables that ``t2ibench agreement`` wrote to
    RUN_DIR/report/agreement.json (the report reads that file; it computes no agreement itself)."""
    path = run_dir / REPORT_DIR / AGREEMENT_FILE
    if not path.is_file():
        return
    doc.h(2, "Human labels and agreement")
    try:
        tables = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        doc.p(f"{path.name} cannot be read ({exc}): run `t2ibench agreement {run_dir}` again.")
        return
    s = tables.get("summary") or {}
    doc.p(f"{s.get('n_answers', 0)} answers on {s.get('n_items', 0)} items by {len(s.get('annotators') or [])} "
          f"annotator(s), as of the last `t2ibench agreement RUN_DIR` (rerun it after new answers).{s.get('skipped_sentence') or ''} "
          "Disagreements and the artificial datasets: report/agreement.md.")
    for key, title in HUMAN_AGREEMENT_TABLES:
        rows = tables.get(key)
        if isinstance(rows, list) and rows and isinstance(rows[0], dict):
            doc.p(title)
            doc.table(list(rows[0]), [[_agreement_cell(r.get(c)) for c in rows[0]] for r in rows])


def _ci_pct(scoring: Mapping) -> str:
    return f"{100 * float(scoring.get('confidence_level', 0.95)):g} %"


def write_report(run_dir: str | Path, results: Mapping | None = None) -> Path:
    """Write RUN_DIR/report/{report.md, report.html, *.png} from results.json (or ``results``) and
    the detail tables; returns the path of report.html (report.md and the PNGs lie beside it)."""
    run_dir = Path(run_dir)
    results = res.read_results(run_dir) if results is None else results
    out_dir = run_dir / REPORT_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("*.png"):
        old.unlink()
    doc = build_document(run_dir, results, out_dir)
    md_path, html_path = out_dir / "report.md", out_dir / "report.html"
    md_path.write_text(doc.markdown(), encoding="utf-8")
    title = f"Bias audit of {results.get('model', {}).get('id', 'unknown model')}"
    html_path.write_text(doc.html(title), encoding="utf-8")
    return html_path


__all__ = ["REPORT_DIR", "write_report", "plot_gep", "plot_micro_sts", "plot_mcas", "plot_dalleval_gender",
           "plot_dalleval_skin", "plot_paintskills"]
