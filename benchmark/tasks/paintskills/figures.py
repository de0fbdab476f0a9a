"""The figures of this task for the report and the leaderboard: accuracy per skill and split
(DALL-Eval Table 2, Fig. 5a).

Each ``plot_*`` takes a detail table (or score entries) and a folder, writes PNGs there and
returns ``[(file name, caption)]``; nothing is drawn for a table it cannot use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

from benchmark.present.plotting import MALE_COLOUR, OTHER_COLOUR, plt_agg, safe_name, save_figure


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
