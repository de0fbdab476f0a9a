"""The MDD ``t2ibench compare`` prints (and the leaderboard's paired test shows), found by
simulation from the compared runs' own labels (:func:`benchmark.runner.planning.simulate_printed_mdd`):
the expected change of a score that its comparison finds worse in 80% of audits of this size, the
change being of the kind ``t2ibench compare``'s calibration plants (labels moved towards their
prompt's majority). The normal formula on the swaps' spread, which the library's
:func:`benchmark.compare.compare_loaded` gives, misses that promise (docs/compare.md, Calibration):
a score's spread under a change is not its spread under none.
"""

from __future__ import annotations

from benchmark.compare.comparison import Comparison
from benchmark.compare.runs import MDD_SIMULATED_NOTE
from benchmark.probes.source import rows_of_record
from benchmark.runner.planning import MDD_PAIRS, simulate_printed_mdd
from benchmark.scores.design import images_needed
from benchmark.tasks.context import entry_key

__all__ = ["simulated_mdd"]


def _detect_key(d: dict) -> tuple:
    return (d.get("run"), *entry_key(d))


def simulated_mdd(comparison: Comparison, pairs: int = MDD_PAIRS, seed: int = 0, progress: bool = False) -> Comparison:
    """``comparison``'s compared rows with their MDD simulated (``pairs`` pairs of audits; 0: the
    normal formula kept, and said so), its ``--detect`` rows updated to match; in place.
    ``progress``: a bar on stderr per compared run."""
    a = comparison.runs[0]
    for b, pair in zip(comparison.runs[1:], comparison.pairings):
        rows = [r for r in comparison.rows if r["run"] == b.label and r["status"] == "compared"]
        if not rows or pairs <= 0:
            for r in rows:
                r["mdd_how"] = "normal formula (no simulation asked: --mdd-pairs 0)"
            continue
        if not pair["probes"] or pair.get("kind") == "unpaired":
            for r in rows:
                r["mdd_how"] = "normal formula (unpaired runs: the simulation draws paired audits)"
            continue
        suites = list(dict.fromkeys(a.manifest.loc[a.manifest["probe_id"].astype(str).isin(set(pair["probes"])),
                                                   "suite"].astype(str)))
        try:
            probes, record = rows_of_record(a.config.get("probes"), suites, pair["probes"])
        except ValueError as exc:
            for r in rows:
                r["mdd_how"] = f"normal formula (the compared probes cannot be laid out: {exc})"
            continue
        simulate_printed_mdd(rows, probes, [a.label_frame, b.label_frame], pairs=pairs, seed=seed,
                             config={"suites": suites, "probes": record}, progress=progress)
    m = comparison.method
    if m.get("family") and pairs > 0:
        m["mdd"] = MDD_SIMULATED_NOTE.format(n=m["family"], alpha=m["alpha"], factor=m["mdd_factor"],
                                   single=m["mdd_factor_uncorrected"], pairs=pairs)
    by = {_detect_key(r): r for r in comparison.rows if r["status"] == "compared"}
    for d in comparison.detect:
        r = by.get(_detect_key(d))
        if r is None or r.get("mdd") == d.get("mdd"):
            continue
        if r.get("mdd") is None:  # no images per prompt to tell: the square-root law's, from the formula's MDD, go
            d.update(status="not detectable", reason=r.get("mdd_reason"), mdd=None)
            for stale in ("factor", "needed_per_prompt", "how"):
                d.pop(stale, None)
            continue
        need = images_needed(r["mdd"], d["target"], d.get("images_per_prompt"))
        d.update(mdd=r["mdd"], factor=need["factor"], needed_per_prompt=need["per_prompt"])
    return comparison
