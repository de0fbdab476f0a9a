"""What a comparison of two audits needs from people's labels (results.json's ``human_corrected``
and ``human_labels``): the corrected difference of a score when both audits have corrected values
(:func:`corrected_difference`), and whether the annotator agrees with people differently in the
two audits (:func:`agreement_differs`): then a difference of automatic scores may be the
annotator's (it reads one model's style better), not the models'.

``t2ibench compare`` calls them on the two results documents (see docs/human_correction.md,
"Comparing audits"); they read plain dicts and import nothing above this layer.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

from scipy import stats

__all__ = ["corrected", "corrected_difference", "annotator_agreement", "agreement_differs", "warning_lines"]


def corrected(entry: Mapping) -> dict | None:
    """``entry``'s corrected value (its ``human_corrected``) when it has one with a standard error, else None."""
    hc = entry.get("human_corrected") if isinstance(entry, Mapping) else None
    if not isinstance(hc, Mapping) or hc.get("value") is None:
        return None
    se = hc.get("se")
    if se is None or not math.isfinite(float(se)):
        return None
    return dict(hc)


def corrected_difference(entry_a: Mapping, entry_b: Mapping, *, confidence_level: float = 0.95) -> dict | None:
    """B - A of a score from the two audits' corrected values, or None unless both have one.

    The two corrections rest on independent samples of people's labels and on different images,
    so the difference's standard error is ``sqrt(se_a^2 + se_b^2)``: a normal interval and a
    two-sided p-value. Conservative for audits paired by probe (their images share prompts and
    seeds, which correlates the two estimates positively)."""
    a, b = corrected(entry_a), corrected(entry_b)
    if a is None or b is None:
        return None
    diff = float(b["value"]) - float(a["value"])
    se = math.hypot(float(a["se"]), float(b["se"]))
    z = float(stats.norm.ppf(0.5 + confidence_level / 2))
    p = 1.0 if se == 0 and diff == 0 else (0.0 if se == 0 else float(2 * stats.norm.sf(abs(diff) / se)))
    return {"difference": diff, "low": diff - z * se, "high": diff + z * se, "se": se, "p_value": p,
            "confidence_level": confidence_level, "n_human": (int(a["n_human"]), int(b["n_human"])),
            "method": "difference of corrected values, independent samples (normal interval)"}


def annotator_agreement(results: Mapping) -> dict[tuple, dict]:
    """(label file, estimator, annotator) -> the annotator's error rate on people's labels of the
    audit's sample, over all its suites: ``{"n", "n_errors", "rate"}`` (the ``by == "all"`` rows of
    ``human_labels.annotator_errors``)."""
    out: dict[tuple, dict] = {}
    rows = ((results.get("human_labels") or {}).get("annotator_errors") or []) if isinstance(results, Mapping) else []
    for r in rows:
        if not isinstance(r, Mapping) or r.get("by") != "all":
            continue
        key = (r.get("file"), r.get("estimator"), r.get("annotator"))
        acc = out.setdefault(key, {"n": 0, "n_errors": 0})
        acc["n"] += int(r.get("n") or 0)
        acc["n_errors"] += int(r.get("n_errors") or 0)
    for acc in out.values():
        acc["rate"] = acc["n_errors"] / acc["n"] if acc["n"] else None
    return out


def agreement_differs(results_a: Mapping, results_b: Mapping, *, alpha: float = 0.05) -> list[dict]:
    """For each annotator people checked in both audits: its error rate in each, and Fisher's exact
    test (scipy) of equal rates; ``differs`` when p < ``alpha``: then a difference between the two
    audits' automatic scores may come from the annotator, not the models (``compare`` warns)."""
    a, b = annotator_agreement(results_a), annotator_agreement(results_b)
    rows = []
    for key in sorted(set(a) & set(b), key=lambda k: tuple(str(x) for x in k)):
        ra, rb = a[key], b[key]
        if not ra["n"] or not rb["n"]:
            continue
        table = [[ra["n_errors"], ra["n"] - ra["n_errors"]], [rb["n_errors"], rb["n"] - rb["n_errors"]]]
        p = float(stats.fisher_exact(table)[1])
        rows.append({"file": key[0], "estimator": key[1], "annotator": key[2], "rate_a": ra["rate"], "n_a": ra["n"],
                     "rate_b": rb["rate"], "n_b": rb["n"], "p_value": p, "differs": p < alpha})
    return rows


def warning_lines(rows: Sequence[Mapping]) -> list[str]:
    """One line per annotator whose agreement with people differs between the audits."""
    return [f"the annotator {r['annotator'] or r['estimator']} ({r['file']}) disagrees with people on "
            f"{100 * r['rate_a']:.0f} % of audit A's sampled images and {100 * r['rate_b']:.0f} % of B's "
            f"(Fisher p = {r['p_value']:.2g}): a difference of automatic scores may be the annotator's, not the models'"
            for r in rows if r.get("differs")]
