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


def _planted(r: Mapping) -> str:
    """The mean tested quantity of the changed comparisons over the printed MDD (its standard error)."""
    if not r.get("planted_mean") or not r.get("mdd"):
        return ""
    return f"{r['planted_mean'] / r['mdd']:.2f} (± {(r.get('planted_se') or 0) / r['mdd']:.2f})"


def power_table(rows: Sequence[Mapping]) -> str:
    """The rows of :func:`benchmark.calibration.power_runs` as docs/compare.md shows them (the
    planted change's column only where the rows have it: runs of the script before it was added do not)."""
    planted = any(r.get("planted_mean") for r in rows)
    head = (["size", "score", "where", "printed MDD", "change"] + (["planted / MDD"] if planted else [])
            + ["pairs", "found worse"])
    return markdown_table(head, ([r["size"], r["score"], _where(r), f"{r['mdd']:.4g}", f"{r['change']:.3f}"]
                                 + ([_planted(r)] if planted else []) + [str(r["n"]), fmt_rate(r)]
                                 if r["mdd"] is not None else
                                 [r["size"], r["score"], _where(r), "not detectable"] + [""] * (len(head) - 4)
                                 for r in rows), align="lll" + "r" * (len(head) - 3))


def pilot_table(rows: Sequence[Mapping]) -> str:
    """The rows of :func:`benchmark.calibration.pilot_runs` as docs/compare.md shows them."""
    return markdown_table(["pilot", "planned", "score", "where", "true MDD", "pilots", "planned / true: median [range]",
                           "within 0.8-1.25"],
                          ([r["pilot"], r["planned"], r["score"], _where(r), f"{r['true_mdd']:.4g}", str(r["n"]),
                            f"{r['median']:.2f} [{r['low']:.2f}, {r['high']:.2f}]", f"{100 * r['within']:.0f}%"]
                           for r in rows), align="llllrrrr")


#: the parts of bench/compare_calibration.py's JSON and the table each is shown as
TABLE_OF_PART = {"null": null_table, "power": power_table, "pilot": pilot_table}
