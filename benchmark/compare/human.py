"""People's labels in a comparison: when both audits' results carry a score's ``human_corrected``
value (``t2ibench score`` with people's labels of a calibration sample), the row gets the
difference of the corrected values with its interval, beside the automatic one; when the
annotator agrees with people differently in the two audits, the comparison warns that a
difference of automatic scores may be the annotator's (:mod:`benchmark.scores.human_compare`).

Informative only: the verdicts and gates stay the paired randomization test's on the automatic
labels, which has a known level at every size; the corrected difference rests on two small
independent samples of people's labels and is read from the results documents as written.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from benchmark.compare.runs import Run
from benchmark.scores.human_compare import agreement_differs, corrected_difference, warning_lines
from benchmark.tasks.context import entry_key

__all__ = ["CORRECTED_NOTE", "add_corrected", "agreement_rows"]

CORRECTED_NOTE = ("Δ people: B - A of the scores corrected with people's labels of each audit's calibration sample "
                  "(prediction-powered; the two samples independent, a normal interval), read from the results "
                  "files; informative, it decides nothing: the verdict is the randomization test's on the automatic "
                  "labels")


def _entries(run: Run) -> dict[tuple, Mapping]:
    scores = (run.results or {}).get("scores") if isinstance(run.results, Mapping) else None
    return {entry_key(e): e for e in scores or [] if isinstance(e, Mapping)}


def add_corrected(a: Run, b: Run, rows: Sequence[dict], confidence_level: float) -> int:
    """Give each row of ``rows`` (B against A) whose score both results documents corrected with
    people's labels its ``human_corrected`` difference; returns how many got one."""
    ea, eb = _entries(a), _entries(b)
    count = 0
    for r in rows:
        key = entry_key(r)
        if key in ea and key in eb:
            found = corrected_difference(ea[key], eb[key], confidence_level=confidence_level)
            if found is not None:
                r["human_corrected"] = found
                count += 1
    return count


def agreement_rows(a: Run, b: Run) -> tuple[list[dict], list[str]]:
    """The annotator's agreement with people in A and in B, per annotator people checked in both
    (each row naming the two runs), and one warning line per annotator whose agreement differs."""
    if not (isinstance(a.results, Mapping) and isinstance(b.results, Mapping)):
        return [], []
    rows = [{"baseline": a.label, "run": b.label, **r} for r in agreement_differs(a.results, b.results)]
    return rows, [f"{b.label} vs {a.label}: {line}" for line in warning_lines(rows)]
