"""Plotting shared by the report and the leaderboard: matplotlib on the Agg backend with one
style, the colours of the figures, saving, and forest plots (point and interval per row) for
the report's summary and the leaderboard's comparisons. The papers' own figures are drawn by
their tasks (``benchmark/tasks/<paper>/figures.py``).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from benchmark.extras import require
from benchmark.present.text import direction_mark, fmt_number, short_estimator

__all__ = ["MALE_COLOUR", "FEMALE_COLOUR", "OTHER_COLOUR", "plt_agg", "save_figure", "safe_name", "fmt_num",
           "forest_figure", "summary_panels", "plot_summary", "plot_corrected"]

# Colours: male-stereotyped / female-stereotyped / neither, readable in grey scale too.
MALE_COLOUR, FEMALE_COLOUR, OTHER_COLOUR = "#1f5fa8", "#d9822b", "#9a9a9a"


def fmt_num(value: Any, digits: int = 4) -> str:
    return fmt_number(value, digits)


def plt_agg():
    """matplotlib.pyplot on the Agg backend with the report's style (the leaderboard plots share it)."""
    require("matplotlib", extra="audit", purpose="draw the report's plots")
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "figure.dpi": 110,
                         "savefig.dpi": 110, "axes.spines.top": False, "axes.spines.right": False})
    return plt


def save_figure(fig, path: Path) -> str:
    """Save ``fig`` to ``path`` (white background, tight box), close it, return the file name."""
    fig.savefig(path, bbox_inches="tight", facecolor="white")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path.name


def safe_name(*parts: Any) -> str:
    """A file-name stem from ``parts`` (letters, digits and dashes)."""
    raw = "_".join(str(p) for p in parts if p not in (None, ""))
    return re.sub(r"[^A-Za-z0-9]+", "-", raw).strip("-").lower()[:80] or "plot"


# --------------------------------------------------------------------------- forest plots


def _limits(values: Sequence[float], ideal: float | None, bounds: tuple[Any, Any]) -> tuple[float, float]:
    """x limits around ``values`` and the ideal, padded, never past the score's own range."""
    pts = [v for v in values if v is not None and math.isfinite(v)]
    if ideal is not None:
        pts.append(ideal)
    if not pts:
        lo, hi = (bounds[0] if bounds[0] is not None else 0.0), (bounds[1] if bounds[1] is not None else 1.0)
        return float(lo), float(hi) if math.isfinite(hi) else float(lo) + 1.0
    lo, hi = min(pts), max(pts)
    pad = (hi - lo) * 0.12 or max(abs(hi) * 0.1, 1e-3)
    lo, hi = lo - pad, hi + pad
    if bounds[0] is not None:
        lo = max(lo, float(bounds[0]) - pad * 0.2)
    if bounds[1] is not None and math.isfinite(bounds[1]):
        hi = min(hi, float(bounds[1]) + pad * 0.2)
    return lo, hi


def forest_figure(panels: Sequence[Mapping], *, width: float = 7.5, row_inches: float = 0.32,
                  label_chars: int = 34, ncols: int = 1):
    """A forest plot: one axis per panel, one row per entry (point and interval), drawn top-down in
    the order given. A panel is ``{"title", "ideal", "bounds": (min, max), "rows": [{"label",
    "value", "low", "high", "muted"}]}``; ``value`` None is written "undefined", a missing or
    zero-width interval "no interval", ``muted`` rows (demo models) are grey; ``ncols`` > 1 lays
    the panels out in columns (panels of one row each, as the report's summary). Returns the figure."""
    plt = plt_agg()
    nrows = math.ceil(len(panels) / ncols)
    heights = [max((len(p["rows"]) for p in panels[r * ncols:(r + 1) * ncols]), default=1) * row_inches + 0.55
               for r in range(nrows)]
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, sum(heights) + 0.2), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    for ax, panel in zip(axes.flat, panels):
        rows = list(panel["rows"])
        ideal = panel.get("ideal")
        lo, hi = _limits([x for r in rows for x in (r.get("value"), r.get("low"), r.get("high"))], ideal,
                         tuple(panel.get("bounds") or (None, None)))
        ax.set_xlim(lo, hi)
        ax.set_ylim(len(rows) - 0.4, -0.6)
        if ideal is not None and lo <= ideal <= hi:
            ax.axvline(ideal, color="#777", lw=0.9, ls="--", zorder=1)
        for i, r in enumerate(rows):
            colour = OTHER_COLOUR if r.get("muted") else MALE_COLOUR
            v = r.get("value")
            if v is None or not math.isfinite(v):
                ax.text((lo + hi) / 2, i, "undefined", ha="center", va="center", fontsize=8, color="#777")
                continue
            low, high = r.get("low"), r.get("high")
            if low is not None and high is not None and high > low:
                ax.plot([low, high], [i, i], color=colour, lw=2.2, solid_capstyle="butt", zorder=2)
                ax.plot([low, low], [i - 0.18, i + 0.18], color=colour, lw=1.2, zorder=2)
                ax.plot([high, high], [i - 0.18, i + 0.18], color=colour, lw=1.2, zorder=2)
            else:
                ax.annotate("no interval", (v, i), xytext=(6, 0), textcoords="offset points", ha="left",
                            va="center", fontsize=7, color="#777")
            ax.plot([v], [i], "o", color=colour, ms=6, zorder=3, mfc="white" if r.get("muted") else colour)
        if not any(r.get("value") is not None and math.isfinite(r["value"]) for r in rows):
            ax.set_xticks([])  # nothing to read off an axis
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([_cut(r.get("label", ""), label_chars) for r in rows], fontsize=8.5)
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(axis="x", color="#eee", lw=0.6)
        ax.set_axisbelow(True)
        ax.set_title(panel.get("title", ""), fontsize=9.5, loc="left")
    fig.tight_layout(h_pad=0.6)
    return fig


def _cut(text: Any, n: int) -> str:
    text = str(text)
    return text if len(text) <= n else text[: n - 1] + "…"


def summary_panels(entries: Sequence[Mapping]) -> list[dict]:
    """Forest-plot panels of the report's summary: one per headline entry (its own scale)."""
    panels = []
    for e in entries:
        ci = e.get("ci") if isinstance(e.get("ci"), Mapping) else {}
        label = short_estimator(e.get("estimator") or e.get("annotator"), 16) or str(e.get("suite", ""))
        panels.append({"title": f"{e.get('display_name') or e.get('name')} {direction_mark(e)}".strip(),
                       "ideal": e.get("ideal"), "bounds": (e.get("min"), e.get("max")),
                       "rows": [{"label": label, "value": e.get("value") if e.get("defined") else None,
                                 "low": ci.get("low"), "high": ci.get("high")}]})
    return panels


def plot_summary(entries: Sequence[Mapping], out_dir: Path) -> list[tuple[str, str]]:
    """The summary figure: each headline score with its interval on its own axis, the ideal dashed."""
    if not entries:
        return []
    fig = forest_figure(summary_panels(entries), width=10.0, row_inches=0.22, label_chars=22,
                        ncols=2 if len(entries) > 3 else 1)
    name = save_figure(fig, Path(out_dir) / "summary.png")
    return [(name, "Headline scores: point = value, bar = bootstrap interval, dashed line = the ideal value "
                   "(each score on its own scale)")]


def plot_corrected(entries: Sequence[Mapping], out_dir: Path) -> list[tuple[str, str]]:
    """Each score automatic (grey) and corrected with people's labels (colour) with their intervals,
    one panel per score on its own scale (entries with a ``human_corrected`` value)."""
    panels = []
    for e in entries:
        hc = e.get("human_corrected") or {}
        ci, hci = (e.get("ci") if isinstance(e.get("ci"), Mapping) else {}), (hc.get("ci") or {})
        who = short_estimator(e.get("estimator") or e.get("annotator"), 16) or ""
        title = f"{e.get('display_name') or e.get('name')} ({e.get('suite')}{', ' + who if who else ''})"
        panels.append({"title": title, "ideal": e.get("ideal"), "bounds": (e.get("min"), e.get("max")),
                       "rows": [{"label": "automatic", "value": e.get("value"), "low": ci.get("low"),
                                 "high": ci.get("high"), "muted": True},
                                {"label": f"people ({hc.get('n_human')} labels)", "value": hc.get("value"),
                                 "low": hci.get("low"), "high": hci.get("high")}]})
    if not panels:
        return []
    fig = forest_figure(panels, width=10.0, row_inches=0.3, label_chars=22, ncols=2 if len(panels) > 3 else 1)
    name = save_figure(fig, Path(out_dir) / "human_corrected.png")
    return [(name, "Each score as the annotator reads the images (grey) and corrected with people's labels of a "
                   "random sample (colour): point = value, bar = interval, dashed line = the ideal value")]
