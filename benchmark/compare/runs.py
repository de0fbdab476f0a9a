"""Comparing audits: load the runs, check they are comparable, score each in memory under one
paired resample plan, and compare every score both hold (:func:`compare_runs`).

The first run is the baseline (A); every other run (B, C, ...) is compared with it. Each run is
scored again from its label files by the tasks' own scoring code (nothing is written to the run
folders), restricted to the probes both runs hold, with one
:class:`benchmark.scores.bootstrap.ResamplePlan` active, so the resamples of the two runs use the
same probes: paired by (probe, seed) for images the benchmark generated, by probe for images
made elsewhere (seeds not controlled), unpaired when the runs share no probe.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from benchmark.contract import results as res
from benchmark.contract.run_folder import MANIFEST_FILE
from benchmark.scores.bootstrap import ResamplePlan, resample_plan
from benchmark.tasks.context import ScoreStageError, ScoringContext, ScoringOptions, load_run_config, load_run_manifest
from benchmark.tasks.of_run import tasks_of_run

__all__ = ["CompareError", "Comparison", "Run", "compare_runs", "load_run"]

HOLM_NOTE = ("p-values are Holm-corrected across the {n} differences tested (statsmodels multipletests, "
             "method='holm'); significant: corrected p < {alpha:g}")
MDD_NOTE = ("MDD: the minimum detectable difference at alpha {alpha:g} (two-sided) and power 0.8, "
            "{factor:.2f} x the standard error of the paired difference; a change smaller than it would "
            "usually go unseen, so 'no significant change' with a large MDD means the audit was too small to tell")


class CompareError(ValueError):
    """The runs cannot be compared at all; the message is one line."""


@dataclass
class Run:
    """One audit to compare: its folder, config, manifest and (when scored) results.json."""

    label: str
    path: Path
    config: dict
    manifest: pd.DataFrame
    results: dict | None = None

    @property
    def fingerprint(self) -> str | None:
        probes = self.config.get("probes") or (self.results or {}).get("probes") or {}
        return probes.get("fingerprint") if isinstance(probes, Mapping) else None

    @property
    def seeds_controlled(self) -> bool:
        return res.seed_policy(self.config.get("provenance")) == res.SEED_POLICY

    @property
    def n_resamples(self) -> int | None:
        value = ((self.results or {}).get("scoring") or {}).get("n_resamples")
        return int(value) if isinstance(value, int) else None

    def warning(self) -> str | None:
        if self.results is not None and self.results.get("warning"):
            return str(self.results["warning"])
        model = self.config.get("model") if isinstance(self.config.get("model"), Mapping) else {}
        return res.BUILTIN_WARNING if model.get("builtin") else None

    def summary(self) -> dict:
        model = self.config.get("model") if isinstance(self.config.get("model"), Mapping) else {}
        return {"label": self.label, "path": str(self.path), "model": model.get("model_id") or model.get("spec"),
                "settings": self.config.get("settings"), "probe_fingerprint": self.fingerprint,
                "n_probes": int(len(self.manifest)), "seeds": res.seed_policy(self.config.get("provenance")),
                "warning": self.warning()}


def load_run(path: str | Path, label: str | None = None) -> Run:
    """A run folder, or a results.json inside one (its folder holds the labels compare rescores)."""
    path = Path(path)
    folder = path.parent if path.is_file() else path
    if not folder.is_dir():
        raise CompareError(f"{path} is neither a run folder nor a results.json")
    if not (folder / MANIFEST_FILE).is_file():
        what = f"{path} has no {MANIFEST_FILE} beside it" if path.is_file() else f"{folder} has no {MANIFEST_FILE}"
        raise CompareError(f"{what}: compare rescores each probe from the run folder (manifest.parquet and "
                           "labels/), a results.json alone cannot be paired")
    try:
        config = load_run_config(folder)
        manifest = load_run_manifest(folder)
    except ScoreStageError as exc:
        raise CompareError(str(exc)) from None
    results = None
    if (folder / res.RESULTS_FILE).is_file():
        try:
            results = res.read_results(folder)
        except ValueError as exc:
            raise CompareError(str(exc).splitlines()[0]) from None
    return Run(label or folder.name, folder, config, manifest, results)


def _seeds(run: Run) -> pd.Series:
    cols = run.manifest.columns
    return run.manifest.set_index(run.manifest["probe_id"].astype(str))["seed"] if "seed" in cols else pd.Series()


def pairing(a: Run, b: Run) -> dict:
    """How B is paired with A: the probes both hold and what pairs them (said in the output)."""
    ids_a, ids_b = set(a.manifest["probe_id"].astype(str)), set(b.manifest["probe_id"].astype(str))
    common = ids_a & ids_b
    same_set = a.fingerprint is not None and a.fingerprint == b.fingerprint
    out = {"baseline": a.label, "run": b.label, "n_common_probes": len(common), "n_probes_a": len(ids_a),
           "n_probes_b": len(ids_b), "same_probe_set": same_set, "probes": sorted(common)}
    if not common:
        out.update(kind="unpaired", text="unpaired: the runs share no probe, so each is resampled on its own "
                                         "(a paired comparison needs the same probes)")
        return out
    where = ("the same probe set" if same_set else
             f"different probe sets: compared on the {len(common)} probes both hold "
             f"(of {len(ids_a)} in {a.label} and {len(ids_b)} in {b.label})")
    sa, sb = _seeds(a), _seeds(b)
    ids = sorted(common)
    same_seeds = len(sa) and len(sb) and bool((sa.reindex(ids).astype(str) == sb.reindex(ids).astype(str)).all())
    if a.seeds_controlled and b.seeds_controlled and same_seeds:
        out.update(kind="paired by (probe, seed)",
                   text=f"paired by (probe, seed) on {len(common)} probes, {where}: both runs made each image "
                        "from the probe's seed, so the resamples draw the same probes in both")
    else:
        why = "seeds not controlled (images supplied or made by an image API)" if not (
            a.seeds_controlled and b.seeds_controlled) else "the runs used different seeds"
        out.update(kind="paired by probe",
                   text=f"paired by probe on {len(common)} probes, {where}: {why}, so a probe's two images "
                        "share only their prompt")
    return out


def resamples_of(runs: Sequence[Run], n_resamples: int | None) -> int:
    """The number of paired resamples: ``n_resamples``, else the one every scored run used."""
    if n_resamples is not None:
        if n_resamples < 2:
            raise CompareError(f"--n-resamples must be at least 2, got {n_resamples}")
        return int(n_resamples)
    used = {r.label: r.n_resamples for r in runs if r.n_resamples is not None}
    if len(set(used.values())) > 1:
        listed = ", ".join(f"{k} {v}" for k, v in used.items())
        raise CompareError(f"the runs were scored with different numbers of resamples ({listed}): give "
                           "--n-resamples N to compare them all with N")
    return next(iter(used.values()), 1000)


def score_in_memory(run: Run, probes: set | None, options: ScoringOptions, plan: ResamplePlan) -> ScoringContext:
    """Score ``run`` (only ``probes``) by its tasks under ``plan``; nothing is written, and
    nothing of run_config.json and manifest.parquet is read again (:func:`load_run` read them)."""
    ctx = ScoringContext(run.path, options, probes, config=run.config, manifest=run.manifest)
    with resample_plan(plan):
        for task, suites in tasks_of_run(run.path, list(ctx.status), ctx.config):
            task.score(ctx, suites)
    return ctx
