"""The tables of bench/compare_calibration.py's output (:mod:`benchmark.calibration`'s rows), as
the script prints them and docs/compare.md shows them (``python -m benchmark.commands.doc_tables``
writes the page's from the committed runs)."""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np

from benchmark.present.text import markdown_table
from benchmark.scores.proportion import clopper_pearson

__all__ = ["TABLE_OF_PART", "detect_table", "fmt_rate", "null_table", "pilot_table", "pooled_power",
           "power_models_table", "power_table", "runs_table"]


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


def _at_mdd(r: Mapping) -> str:
    """Power at the MDD itself (the changed comparisons moved onto it), or why there is none."""
    if r.get("at_mdd"):
        return fmt_rate(r["at_mdd"])
    return "not recorded" if "at_mdd" not in r else "plant too far off"


def power_table(rows: Sequence[Mapping]) -> str:
    """The rows of :func:`benchmark.calibration.power_runs` as docs/compare.md shows them (the
    planted change's and the power at the MDD's columns only where the rows have them: runs of the
    script before they were added do not)."""
    planted = any(r.get("planted_mean") for r in rows)
    at_mdd = any("at_mdd" in r for r in rows)
    head = (["size", "score", "where", "printed MDD", "change"] + (["planted / MDD"] if planted else [])
            + ["pairs", "found worse"] + (["found at the MDD"] if at_mdd else []))
    return markdown_table(head, ([r["size"], r["score"], _where(r), f"{r['mdd']:.4g}", f"{r['change']:.3f}"]
                                 + ([_planted(r)] if planted else []) + [str(r["n"]), fmt_rate(r)]
                                 + ([_at_mdd(r)] if at_mdd else [])
                                 if r["mdd"] is not None else
                                 [r["size"], r["score"], _where(r), "not detectable"] + [""] * (len(head) - 4)
                                 for r in rows), align="lll" + "r" * (len(head) - 3))


def _pooled(parts: Sequence[Mapping]) -> dict:
    """Rates of several runs (each ``rate`` of ``n``) as one: the count found over all their
    comparisons, with its Clopper-Pearson interval (None where there are none)."""
    n = sum(p["n"] for p in parts)
    found = sum(round(p["rate"] * p["n"]) for p in parts)
    low, high = clopper_pearson(found, n) if n else (None, None)
    return {"n": n, "rate": found / n if n else None, "low": low, "high": high}


def pooled_power(runs: Sequence[tuple[str, Sequence[Mapping]]]) -> list[dict]:
    """The power rows of several models (``(its label, its rows)`` per run of
    :func:`benchmark.calibration.power_runs`, each one model the truth drew), one row per size and
    score: each model's printed MDD and power (``models``), all their comparisons pooled (``rate``
    with its Clopper-Pearson interval; a model that printed "not detectable" adds none), the
    mean planted change over the MDD (``planted``) and the power at the MDD itself of the models
    that recorded it (``at_mdd``: rate, interval, comparisons and those models' labels, and
    ``first_step``, the same at Holm's first step alone, what the MDD promises; None where none
    did)."""
    groups: dict[tuple, list] = {}
    for label, rows in runs:
        for r in rows:
            groups.setdefault((r["size"], r["score"], r["suite"], r.get("subset"), r.get("estimator")), []).append(
                (label, r))
    out = []
    for (size, score, suite, subset, estimator), members in groups.items():
        tested = [r for _, r in members if r["mdd"] is not None]
        planted = [r["planted_mean"] / r["mdd"] for r in tested if r.get("planted_mean")]
        recorded = [(label, r["at_mdd"]) for label, r in members if r["mdd"] is not None and r.get("at_mdd")]
        at_mdd = _pooled([a for _, a in recorded])
        if at_mdd["n"]:
            at_mdd["first_step"] = _pooled([{"rate": a.get("first_step"), "n": a["n"]} for _, a in recorded]) \
                if all(a.get("first_step") is not None for _, a in recorded) else None
        out.append({"size": size, "score": score, "suite": suite, "subset": subset, "estimator": estimator,
                    "models": [{"label": label, "mdd": r["mdd"], "rate": r["rate"], "n": r["n"]}
                               for label, r in members],
                    **_pooled(tested), "planted": float(np.mean(planted)) if planted else None,
                    "at_mdd": dict(at_mdd, models=[label for label, _ in recorded]) if at_mdd["n"] else None})
    return out


def power_models_table(rows: Sequence[Mapping]) -> str:
    """The rows of :func:`pooled_power` (power at the printed MDD of several models) as
    docs/compare.md shows them: per size and score, each model's printed MDD and power, then all
    their comparisons pooled, and (where any model recorded it) the power at the MDD itself, pooled
    over the models that did, after Holm's every step and at his first step alone (the test the
    MDD is defined for: a change of GEP's labels moves its three scores, and Holm's later steps
    then find one more often). A model not measured at a row's size shows "not run" in its place."""
    labels = list(dict.fromkeys(m["label"] for r in rows for m in r["models"])) or ["model"]

    def per_model(r: Mapping, cell) -> str:
        by = {m["label"]: m for m in r["models"]}
        return " / ".join(cell(by[label]) if label in by else "not run" for label in labels)

    models = " / ".join(labels)
    at_mdd = any(r.get("at_mdd") for r in rows)
    head = ["size", "score", "where", f"printed MDD ({models})", f"found worse ({models})", "planted / MDD",
            "found worse, all models"] + (["found at the MDD", "at the MDD, Holm's first step"] if at_mdd else [])

    def at(r: Mapping) -> list[str]:
        a = r.get("at_mdd")
        if not at_mdd:
            return []
        if not a:
            return ["not recorded", "not recorded"]
        first = a.get("first_step")
        return [f"{fmt_rate(a)} of {a['n']} ({', '.join(a['models'])})", fmt_rate(first) if first else "not recorded"]

    return markdown_table(head, ([r["size"], r["score"], _where(r),
                                  per_model(r, lambda m: "none" if m["mdd"] is None else f"{m['mdd']:.3g}"),
                                  per_model(r, lambda m: "-" if m["rate"] is None else f"{100 * m['rate']:.1f}%"),
                                  "" if r["planted"] is None else f"{r['planted']:.2f}",
                                  f"{fmt_rate(r)} of {r['n']}"] + at(r)
                                 if r["n"] else
                                 [r["size"], r["score"], _where(r), "not detectable"] + [""] * (len(head) - 4)
                                 for r in rows), align="lll" + "r" * (len(head) - 3))


def _planned_rows(rows: Sequence[Mapping]) -> Iterable[list[str]]:
    return ([r["pilot"], r["planned"], r["score"], _where(r), f"{r['true_mdd']:.4g}", str(r["n"]),
             f"{r['median']:.2f} [{r['low']:.2f}, {r['high']:.2f}]", f"{100 * r['within']:.0f}%"] for r in rows)


def pilot_table(rows: Sequence[Mapping]) -> str:
    """The rows of :func:`benchmark.calibration.pilot_runs` as docs/compare.md shows them."""
    return markdown_table(["pilot", "planned", "score", "where", "true MDD", "pilots", "planned / true: median [range]",
                           "within 0.8-1.25"], _planned_rows(rows), align="llllrrrr")


def detect_table(rows: Sequence[Mapping]) -> str:
    """The rows of :func:`benchmark.calibration.detect_runs` as docs/compare.md shows them."""
    return markdown_table(["now", "planned", "score", "where", "MDD printed there", "comparisons now",
                           "--detect's / printed there: median [range]", "within 0.8-1.25"], _planned_rows(rows),
                          align="llllrrrr")


def _counted(doc: Mapping) -> str:
    """What one run of the script counted: pairs per null size, comparisons per power row, pilots per
    pilot row; and whether its truth was a model at parity (``--parity``)."""
    parts = [(doc.get("null") or [], "pairs per size"), (doc.get("power") or [], "comparisons per score"),
             (doc.get("pilot") or [], "pilots per score"), (doc.get("detect") or [], "comparisons scaled per score")]
    counted = "; ".join(f"{max(r['n'] for r in rows)} {what}" for rows, what in parts if rows)
    return counted + (", a model at parity" if doc.get("parity") else "")


def runs_table(runs: Sequence[tuple[str, Mapping]]) -> str:
    """The measured runs of bench/compare_calibration.py (``(its folder, its JSON)`` each) as
    docs/compare.md lists them: what each measured and how many times, its seed (the model the
    truth drew), the commit and the day it ran at and its wall minutes per part. The script began
    recording its command and date, then its commit, in late November 2026: older runs say "not
    recorded" rather than a guess."""
    def recorded(value) -> str:
        return "not recorded" if value in (None, "") else str(value)

    return markdown_table(
        ["folder", "measured", "seed", "commit", "day", "wall minutes"],
        ([folder, _counted(doc), recorded(doc.get("seed")), recorded((doc.get("commit") or "")[:7]),
          recorded((doc.get("date") or "")[:10]),
          ", ".join(f"{part} {seconds / 60:.0f}" for part, seconds in (doc.get("seconds") or {}).items())]
         for folder, doc in runs), align="llrllr")


#: the parts of bench/compare_calibration.py's JSON and the table each is shown as
TABLE_OF_PART = {"null": null_table, "power": power_table, "pilot": pilot_table, "detect": detect_table}
