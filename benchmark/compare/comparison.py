"""One comparison of audits (:func:`compare_runs`): the rows of every score both runs hold, with
the paired difference, its interval, the Holm-corrected p-value, the minimum detectable
difference and the verdict; refused scores with their reason. The leaderboard's Compare tab and
``t2ibench compare`` both call :func:`compare_runs`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from benchmark.compare.paired import ALPHA, MDD_FACTOR, holm, paired_difference, summary_of
from benchmark.compare.runs import HOLM_NOTE, MDD_NOTE, CompareError, Run, load_run, pairing, resamples_of, \
    score_in_memory
from benchmark.contract.results import json_safe
from benchmark.present.progress import progress_bar
from benchmark.scores.bootstrap import ResamplePlan
from benchmark.scores.metadata import SCORE_METADATA, get_metadata
from benchmark.tasks.context import ScoringContext, ScoringOptions, entry_key
from benchmark.tasks.registry import task_options

__all__ = ["Comparison", "compare_runs"]

RESAMPLING = ("paired Poisson bootstrap over probes: in resample b each probe weighs a Poisson(1) draw fixed by "
              "(random_state, probe id, b), the same in every run (benchmark.scores.bootstrap.ResamplePlan); "
              "a cell of the design left empty is drawn again")
P_VALUE = ("two-sided normal test of the tested quantity q with the paired bootstrap standard error, "
           "2 (1 - Phi(|q| / SE)); p_bootstrap: the null-shifted bootstrap (1 + #{|q_b - q| >= |q|}) / (1 + B)")


@dataclass
class Comparison:
    """The result of :func:`compare_runs`; ``rows`` one dict per (run, score entry)."""

    runs: list[Run]
    pairings: list[dict]
    rows: list[dict]
    method: dict
    notes: list[str] = field(default_factory=list)

    @property
    def warning(self) -> str | None:
        """The built-in model warning of any run: its scores (and so the differences) are meaningless."""
        return next((w for w in (r.warning() for r in self.runs) if w), None)

    @property
    def warning_text(self) -> str | None:
        return f"{self.warning} The differences between such runs are meaningless too." if self.warning else None

    def compared(self) -> list[dict]:
        return [r for r in self.rows if r["status"] == "compared"]

    def worse(self, names: Iterable[str] | None = None) -> list[dict]:
        """The compared rows significantly worse than the baseline (of ``names``; None: all)."""
        wanted = None if names is None else set(names)
        return [r for r in self.compared() if r["significant"] and r["change"] == "worse"
                and (wanted is None or r["name"] in wanted)]

    def to_dict(self) -> dict:
        doc: dict[str, Any] = {}
        if self.warning:
            doc["warning"] = self.warning_text
        doc.update({"baseline": self.runs[0].label, "runs": [r.summary() for r in self.runs],
                    "pairings": [{k: v for k, v in p.items() if k != "probes"} for p in self.pairings],
                    "method": self.method, "summary": summary_of(self.rows), "scores": self.rows,
                    "notes": self.notes})
        return json_safe(doc)


def _labeller(entry: Mapping) -> str:
    return " / ".join(str(x) for x in (entry.get("estimator"), entry.get("annotator")) if x) or "-"


def _groups(ctx: ScoringContext, names: set | None) -> dict[tuple, dict[tuple, dict]]:
    """(name, suite, subset) -> (estimator, annotator) -> entry."""
    out: dict[tuple, dict[tuple, dict]] = {}
    for e in ctx.scores:
        if names is None or e["name"] in names:
            out.setdefault((e["name"], e["suite"], e["subset"]), {})[(e["estimator"], e["annotator"])] = e
    return out


def _base_row(a: Run, b: Run, e: Mapping, status: str, reason: str | None = None) -> dict:
    meta = get_metadata(e["name"])
    return {"baseline": a.label, "run": b.label, "name": e["name"], "display_name": meta.display_name,
            "suite": e["suite"], "subset": e["subset"], "estimator": e.get("estimator"),
            "annotator": e.get("annotator"), "lower_is_better": meta.lower_is_better, "ideal": meta.ideal,
            "unit": meta.unit, "status": status, "reason": reason}


def _refused(a: Run, b: Run, group: tuple, la: dict, lb: dict) -> dict:
    name, suite, subset = group
    where = ", ".join(str(x) for x in (suite, subset) if x)
    used_a = ", ".join(sorted(_labeller(e) for e in la.values()))
    used_b = ", ".join(sorted(_labeller(e) for e in lb.values()))
    reason = (f"{name} ({where}): not comparable: different estimators: {a.label} used {used_a}, "
              f"{b.label} used {used_b}")
    return _base_row(a, b, next(iter(la.values())), "refused", reason) | {"estimator": used_a,
                                                                          "annotator": used_b}


def _pair_row(a: Run, b: Run, ea: dict, eb: dict, ctx_a: ScoringContext, ctx_b: ScoringContext,
              confidence_level: float, alpha: float) -> dict:
    row = _base_row(a, b, ea, "not tested")
    row.update({"value_a": ea["value"], "value_b": eb["value"], "n_a": ea["n"], "n_b": eb["n"]})
    for run, e in ((a, ea), (b, eb)):
        if not e["defined"]:
            row["reason"] = f"undefined in {run.label}: {e['reason']}"
            return row
    ra, rb = ctx_a.resamples.get(entry_key(ea)), ctx_b.resamples.get(entry_key(eb))
    if ra is None or rb is None:
        row["reason"] = "no sampling variation to test (the score has no bootstrap interval)"
        return row
    out = paired_difference(get_metadata(ea["name"]), ea["value"], eb["value"], ra, rb,
                            confidence_level=confidence_level, alpha=alpha)
    row.update(out)
    row["status"] = "not tested" if "reason" in out else "compared"
    return row


def _pair_rows(a: Run, b: Run, ctx_a: ScoringContext, ctx_b: ScoringContext, names: set | None,
               confidence_level: float, alpha: float, notes: list[str]) -> list[dict]:
    ga, gb = _groups(ctx_a, names), _groups(ctx_b, names)
    rows = []
    for group in list(ga) + [g for g in gb if g not in ga]:
        la, lb = ga.get(group, {}), gb.get(group, {})
        if not la or not lb:
            present, absent = (a, b) if la else (b, a)
            e = next(iter((la or lb).values()))
            rows.append(_base_row(a, b, e, "not tested", f"only in {present.label}: {absent.label} has no "
                                  f"{e['name']} for {e['suite']}"))
            continue
        common = [k for k in la if k in lb]
        if not common:
            rows.append(_refused(a, b, group, la, lb))
            continue
        for k in common:
            rows.append(_pair_row(a, b, la[k], lb[k], ctx_a, ctx_b, confidence_level, alpha))
        for k in [k for k in la if k not in lb] + [k for k in lb if k not in la]:
            notes.append(f"{group[0]} ({group[1]}): estimator {_labeller((la | lb)[k])} is in one run only and "
                         "is not compared")
    return rows


def _finish(rows: list[dict], alpha: float) -> None:
    """Holm's correction over the compared rows, then each row's significance and verdict."""
    tested = [r for r in rows if r["status"] == "compared"]
    corrected, reject = holm([r["p"] for r in tested], alpha)
    for r, p, rej in zip(tested, corrected, reject):
        r["p_holm"], r["significant"] = p, rej
        r["verdict"] = (f"significantly {r['change']}" if rej else
                        "no significant change" if abs(r["estimate"]) <= r["mdd"] else
                        "no significant change (|Δ| above the MDD, not significant after Holm)")


def _check_names(names: Sequence[str] | None, option: str) -> set | None:
    if not names:
        return None
    unknown = [n for n in names if n not in SCORE_METADATA]
    if unknown:
        raise CompareError(f"{option}: unknown score {unknown[0]!r}; `t2ibench scores` lists them")
    return set(names)


def _labels(paths: Sequence) -> list[str]:
    """Short distinct names of the runs: their folder names, with as many parent folders as needed."""
    folders = [Path(p) if Path(p).is_dir() else Path(p).parent for p in paths]
    for depth in (1, 2, 3):
        names = ["/".join(f.parts[-depth:]) for f in folders]
        if len(set(names)) == len(names):
            return names
    return [str(f) for f in folders]


def compare_runs(run_a, run_b, *more, scores: Sequence[str] | None = None, n_resamples: int | None = None,
                 confidence_level: float = 0.95, random_state: int = 0, alpha: float = ALPHA,
                 progress: bool = False) -> Comparison:
    """Compare run B (and C, ...) with the baseline run A (folders, or results.json inside them).

    Each run is scored in memory on the probes it shares with A, under one paired resample plan
    of ``n_resamples`` (default: the number the runs were scored with); ``scores`` keeps only
    those score names. Raises :class:`CompareError` (one line) when the runs cannot be read.
    """
    paths = [run_a, run_b, *more]
    runs = [load_run(p, label) for p, label in zip(paths, _labels(paths))]
    names = _check_names(scores, "--scores")
    plan = ResamplePlan(resamples_of(runs, n_resamples), random_state)
    options = ScoringOptions(plan.n_resamples, confidence_level, random_state, task_options())
    pairings = [pairing(runs[0], r) for r in runs[1:]]
    rows: list[dict] = []
    notes: list[str] = []
    bar = progress_bar(2 * len(pairings), "scoring runs", enabled=progress, unit="run")
    for b, pair in zip(runs[1:], pairings):
        probes = set(pair["probes"]) or None  # no common probe: each run whole, unpaired
        ctx_a = score_in_memory(runs[0], probes, options, plan)
        bar.update(1)
        ctx_b = score_in_memory(b, probes, options, plan)
        bar.update(1)
        rows += _pair_rows(runs[0], b, ctx_a, ctx_b, names, confidence_level, alpha, notes)
    bar.close()
    _finish(rows, alpha)
    n_tested = sum(1 for r in rows if r["status"] == "compared")
    method = {"n_resamples": plan.n_resamples, "confidence_level": confidence_level, "random_state": random_state,
              "alpha": alpha, "power": 0.8, "mdd_factor": MDD_FACTOR, "resampling": RESAMPLING, "p_value": P_VALUE,
              "correction": HOLM_NOTE.format(n=n_tested, alpha=alpha), "mdd": MDD_NOTE.format(alpha=alpha,
                                                                                            factor=MDD_FACTOR)}
    return Comparison(runs, pairings, rows, method, list(dict.fromkeys(notes)))
