"""The tables of bench/compare_calibration.py's output (:mod:`benchmark.calibration`'s rows), as
the script prints them and docs/compare.md shows them (``python -m benchmark.commands.doc_tables``
writes the page's from the committed runs)."""

from __future__ import annotations

from typing import Mapping, Sequence

from benchmark.present.text import markdown_table

__all__ = ["TABLE_OF_PART", "fmt_rate", "null_table", "pilot_table", "power_table"]


def fmt_rate(r: Mapping) -> str:
    """A rate with its Clopper-Pearson interval, in percent."""
    return f"{100 * r['rate']:.1f}% [{100 * r['low']:.1f}, {100 * r['high']:.1f}]"


def _where(r: Mapping) -> str:
    return ", ".join(str(x) for x in (r["suite"], r.get("estimator")) if x)


def null_table(rows: Sequence[Mapping]) -> str:
    """The rows of :func:`benchmark.calibration.null_runs` as docs/compare.md shows them (the column of per-score rates
    before Holm only where the rows have it: runs of the script before it was added do not)."""
    raw = any(r.get("raw") for r in rows)
    head = ["size", "score", "where", "pairs"] + (["p < 0.05"] if raw else []) + ["significant (Holm)", "no interval"]
    return markdown_table(head, ([r["size"], r["score"], _where(r), str(r["n"])]
                                 + ([fmt_rate(r["raw"]) if r.get("raw") else ""] if raw else [])
                                 + [fmt_rate(r), "" if r["flagged"] is None else f"{100 * r['flagged']:.0f}%"]
                                 for r in rows), align="lll" + "r" * (len(head) - 3))


def power_table(rows: Sequence[Mapping]) -> str:
    """The rows of :func:`benchmark.calibration.power_runs` as docs/compare.md shows them."""
    return markdown_table(["size", "score", "where", "printed MDD", "change", "pairs", "found worse"],
                          ([r["size"], r["score"], _where(r), f"{r['mdd']:.4g}", f"{r['change']:.3f}", str(r["n"]),
                            fmt_rate(r)] if r["mdd"] is not None else
                           [r["size"], r["score"], _where(r), "not detectable", "", "", ""] for r in rows),
                          align="lllrrrr")


def pilot_table(rows: Sequence[Mapping]) -> str:
    """The rows of :func:`benchmark.calibration.pilot_runs` as docs/compare.md shows them."""
    return markdown_table(["pilot", "planned", "score", "where", "true MDD", "pilots", "planned / true: median [range]",
                           "within 0.8-1.25"],
                          ([r["pilot"], r["planned"], r["score"], _where(r), f"{r['true_mdd']:.4g}", str(r["n"]),
                            f"{r['median']:.2f} [{r['low']:.2f}, {r['high']:.2f}]", f"{100 * r['within']:.0f}%"]
                           for r in rows), align="llllrrrr")


#: the parts of bench/compare_calibration.py's JSON and the table each is shown as
TABLE_OF_PART = {"null": null_table, "power": power_table, "pilot": pilot_table}
