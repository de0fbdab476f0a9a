"""Comparing audits: load the runs, check they are comparable, and score each under one paired
resample plan (:func:`score_in_memory`), or read its paired resamples from its results
(:func:`scored_from_results`).

A run is a run folder (or the results.json inside one), or a results file on its own (a local
path, or ``hf://datasets/OWNER/NAME[@REVISION]/PATH`` on the Hub). A folder is checked as
``t2ibench verify`` checks it, then scored again from its label files by the tasks' own scoring
code (nothing is written to it), restricted to the probes both runs hold, with one
:class:`benchmark.scores.bootstrap.ResamplePlan` active, so the resamples of the two runs use the
same probes: paired by (probe, seed) for images the benchmark generated, by probe for images made
elsewhere (seeds not controlled), unpaired when the runs share no probe. A results file carries
its entries' resamples under the plan it was scored with (its ``pairing`` section,
:mod:`benchmark.contract.pairing`): it pairs with runs over the same probes, under that plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from benchmark.annotate.label_files import get_label_file
from benchmark.contract import results as res
from benchmark.contract.pairing import probe_ids_digest, read_pairing
from benchmark.contract.run_folder import MANIFEST_FILE
from benchmark.contract.run_folder_check import ExpectedCheck, require_intact
from benchmark.hub.access import hub_errors
from benchmark.scores.bootstrap import ResamplePlan, resample_plan
from benchmark.tasks.context import ScoreStageError, ScoringContext, ScoringOptions, load_run_config, load_run_manifest
from benchmark.tasks.of_run import tasks_of_run

__all__ = ["HUB_PREFIX", "CompareError", "Run", "Scored", "check_versions", "load_run", "pairing", "resamples_of",
           "run_from_results", "score_in_memory", "scored_from_results"]

HOLM_NOTE = ("p-values are Holm-corrected across the {n} differences tested (statsmodels multipletests, "
             "method='holm'); significant: corrected p < {alpha:g}; rows not tested and described rows are "
             "outside the family")
MDD_NOTE = ("MDD: the minimum detectable difference of the test that decides: the true change found with "
            "power 0.8 by Holm's first step over the {n} tests (alpha {alpha:g} / {n}, two-sided), "
            "{factor:.2f} x the standard error of the paired difference (mdd_uncorrected in the JSON: one test "
            "alone at alpha {alpha:g}, {single:.2f} x SE); 'no significant change' with a large MDD means the "
            "audit was too small to tell")
HUB_PREFIX = "hf://datasets/"


class CompareError(ValueError):
    """The runs cannot be compared at all; the message is one line."""


@dataclass
class Run:
    """One audit to compare: a run folder (``manifest`` and ``config`` read from it) or a
    results document alone (``manifest`` None; what pairing needs is in ``results["pairing"]``)."""

    label: str
    path: Path | str
    config: dict
    manifest: pd.DataFrame | None
    results: dict | None = None

    @property
    def is_folder(self) -> bool:
        return self.manifest is not None

    @property
    def fingerprint(self) -> str | None:
        probes = self.config.get("probes") or (self.results or {}).get("probes") or {}
        return probes.get("fingerprint") if isinstance(probes, Mapping) else None

    @property
    def seeds_controlled(self) -> bool:
        if self.is_folder:
            return res.seed_policy(self.config.get("provenance")) == res.SEED_POLICY
        return ((self.results or {}).get("seeds") or {}).get("policy") == res.SEED_POLICY

    @property
    def n_resamples(self) -> int | None:
        value = ((self.results or {}).get("scoring") or {}).get("n_resamples")
        return int(value) if isinstance(value, int) else None

    @property
    def package_version(self) -> str | None:
        if self.is_folder:
            return self.config.get("package_version")
        return ((self.results or {}).get("package") or {}).get("version")

    @property
    def probe_ids(self) -> dict:
        """``{"n", "sha256"}`` of the run's probe ids."""
        if self.is_folder:
            return probe_ids_digest(self.manifest["probe_id"])
        return dict(((self.results or {}).get("pairing") or {}).get("probe_ids") or {})

    def warning(self) -> str | None:
        if self.results is not None and self.results.get("warning"):
            return str(self.results["warning"])
        model = self.config.get("model") if isinstance(self.config.get("model"), Mapping) else {}
        return res.BUILTIN_WARNING if model.get("builtin") else None

    def summary(self) -> dict:
        model = self.config.get("model") if isinstance(self.config.get("model"), Mapping) else {}
        doc_model = (self.results or {}).get("model") or {}
        return {"label": self.label, "path": str(self.path), "source": "run folder" if self.is_folder else "results",
                "model": model.get("model_id") or model.get("spec") or doc_model.get("id"),
                "settings": self.config.get("settings", (self.results or {}).get("settings")),
                "probe_fingerprint": self.fingerprint, "n_probes": self.probe_ids.get("n"),
                "seeds": "controlled" if self.seeds_controlled else "not controlled",
                "package_version": self.package_version, "warning": self.warning()}


def _hub_results(spec: str) -> Path:
    """Download ``hf://datasets/OWNER/NAME[@REVISION]/PATH`` (a results file) and return its path."""
    parts = spec[len(HUB_PREFIX):].split("/", 2)
    if len(parts) < 3 or not all(parts):
        raise CompareError(f"{spec}: a results file on the Hub is hf://datasets/OWNER/NAME[@REVISION]/PATH.json")
    name, _, revision = parts[1].partition("@")
    repo_id = f"{parts[0]}/{name}"
    from huggingface_hub import hf_hub_download

    with hub_errors(repo_id, "download from"):
        return Path(hf_hub_download(repo_id, parts[2], repo_type="dataset", revision=revision or None))


def run_from_results(doc: Mapping, path: Any, label: str) -> Run:
    """A results document alone as a run: refused (one line) when it cannot be paired."""
    problems = res.validate_results(doc)
    if problems:
        raise CompareError(f"{path} is not a valid results file: {problems[0]}")
    try:
        read_pairing(doc)
    except ValueError as exc:
        raise CompareError(f"{path} cannot be compared paired without its run folder: {exc}") from None
    return Run(label, path, {}, None, dict(doc))


def load_run(path: str | Path, label: str | None = None, *, verify: bool = False,
             expected: ExpectedCheck | None = None) -> Run:
    """A run folder, the results.json inside one, or a results file alone (also on the Hub).
    ``verify``: a folder is refused (one line) when ``t2ibench verify`` would report a problem
    (``expected``: its check against what the run asked for,
    :func:`benchmark.runner.expected.expected_problems`, passed by the callers above this layer)."""
    if str(path).startswith(HUB_PREFIX):
        local = _hub_results(str(path))
        return run_from_results(_read_results(local), str(path), label or str(path)[len(HUB_PREFIX):])
    path = Path(path)
    folder = path.parent if path.is_file() else path
    if not folder.is_dir():
        raise CompareError(f"{path} is neither a run folder nor a results file")
    if path.is_file() and not (path.name == res.RESULTS_FILE and (folder / MANIFEST_FILE).is_file()):
        return run_from_results(_read_results(path), path, label or path.stem)
    if not (folder / MANIFEST_FILE).is_file():
        raise CompareError(f"{folder} has no {MANIFEST_FILE}: not a run folder (give its results.json to compare "
                           "the paired resamples it carries)")
    if verify:
        try:
            require_intact(folder, "compare", expected=expected)
        except ValueError as exc:
            raise CompareError(str(exc).splitlines()[0]) from None
    try:
        config = load_run_config(folder)
        manifest = load_run_manifest(folder)
    except ScoreStageError as exc:
        raise CompareError(str(exc)) from None
    results = _read_results(folder / res.RESULTS_FILE) if (folder / res.RESULTS_FILE).is_file() else None
    return Run(label or folder.name, folder, config, manifest, results)


def _read_results(path: Path) -> dict:
    try:
        return res.read_results(path)
    except ValueError as exc:
        raise CompareError(str(exc).splitlines()[0]) from None


def check_versions(runs: Sequence[Run]) -> None:
    """Refuse (one line) runs of different package versions or results schema versions."""
    for what, value in (("package version", lambda r: r.package_version),
                        ("results schema version", lambda r: (r.results or {}).get("schema_version"))):
        seen = {r.label: value(r) for r in runs if value(r) is not None}
        if len(set(seen.values())) > 1:
            listed = ", ".join(f"{k} {v}" for k, v in seen.items())
            raise CompareError(f"the runs differ in {what} ({listed}): their scores may not mean the same; "
                               "compare audits made (and scored) with one version")
    for r in runs:
        schema = (r.results or {}).get("schema_version")
        if schema is not None and str(schema).split(".")[0] != res.SCHEMA_VERSION.split(".")[0]:
            raise CompareError(f"{r.label}: results schema version {schema} is not this package's "
                               f"{res.SCHEMA_VERSION}")


def _seeds(run: Run) -> pd.Series:
    cols = run.manifest.columns
    return run.manifest.set_index(run.manifest["probe_id"].astype(str))["seed"] if "seed" in cols else pd.Series()


def _results_pairing(a: Run, b: Run) -> dict:
    """How B is paired with A when one of them is a results file alone: over the same probes only."""
    ia, ib = a.probe_ids, b.probe_ids
    if ia.get("sha256") != ib.get("sha256"):
        raise CompareError(f"{a.label} and {b.label} hold different probes ({ia.get('n')} and {ib.get('n')} probe "
                           "ids): a results file pairs only over the probes it was scored on; compare the run "
                           "folders to pair over the probes both hold")
    same_set = a.fingerprint is not None and a.fingerprint == b.fingerprint
    out = {"baseline": a.label, "run": b.label, "n_common_probes": ia.get("n"), "n_probes_a": ia.get("n"),
           "n_probes_b": ib.get("n"), "same_probe_set": same_set, "probes": None}
    if a.seeds_controlled and b.seeds_controlled and same_set:
        return out | {"kind": "paired by (probe, seed)",
                      "text": f"paired by (probe, seed) on {ia.get('n')} probes, the same probe set, from the "
                              "paired resamples the results carry: both runs made each image from the probe's seed"}
    return out | {"kind": "paired by probe",
                  "text": f"paired by probe on {ia.get('n')} probes, from the paired resamples the results carry: "
                          "seeds not controlled or probe sets not fingerprinted alike, so a probe's two images "
                          "share only their prompt"}


def pairing(a: Run, b: Run) -> dict:
    """How B is paired with A: the probes both hold (``probes``; None: every probe of both) and
    what pairs them (said in the output)."""
    if not (a.is_folder and b.is_folder):
        return _results_pairing(a, b)
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


def resamples_of(runs: Sequence[Run], n_resamples: int | None, random_state: int | None) -> ResamplePlan:
    """The paired resample plan: that of the results files given alone (the resamples they carry),
    else ``n_resamples`` (default: the number every scored run used, 1000 if none) and
    ``random_state`` (default 0)."""
    stored = {r.label: (r.results["pairing"]["n_resamples"], r.results["pairing"]["random_state"])
              for r in runs if not r.is_folder}
    if stored:
        plans = set(stored.values())
        if len(plans) > 1:
            listed = ", ".join(f"{k} {n} resamples, random state {s}" for k, (n, s) in stored.items())
            raise CompareError(f"the results files were scored under different resample plans ({listed}): "
                               "rescore them alike (`t2ibench score RUN --n-resamples N`) or compare the run folders")
        (n, seed), = plans
        for option, given, kept in (("--n-resamples", n_resamples, n), ("--random-state", random_state, seed)):
            if given is not None and given != kept:
                raise CompareError(f"{option} {given}: the results files carry the resamples of {n} resamples at "
                                   f"random state {seed}; leave {option} out, or compare the run folders")
        return ResamplePlan(n, seed)
    if n_resamples is None:
        used = {r.label: r.n_resamples for r in runs if r.n_resamples is not None}
        if len(set(used.values())) > 1:
            listed = ", ".join(f"{k} {v}" for k, v in used.items())
            raise CompareError(f"the runs were scored with different numbers of resamples ({listed}): give "
                               "--n-resamples N to compare them all with N")
        n_resamples = next(iter(used.values()), 1000)
    if n_resamples < 2:
        raise CompareError(f"--n-resamples must be at least 2, got {n_resamples}")
    return ResamplePlan(int(n_resamples), 0 if random_state is None else int(random_state))


@dataclass
class Scored:
    """One run's score entries as a comparison reads them: the entries, each one's paired
    resamples and strata (keyed by ``entry_key``), the suites (None: scored, else why not) and
    the label files its tasks looked for and did not find."""

    entries: list[dict]
    resamples: dict[tuple, np.ndarray]
    designs: dict[tuple, dict | None]
    suites: dict[str, str | None] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


def score_in_memory(run: Run, probes: set | None, options: ScoringOptions, plan: ResamplePlan) -> Scored:
    """Score ``run`` (only ``probes``) by its tasks under ``plan``; nothing is written, and
    nothing of run_config.json and manifest.parquet is read again (:func:`load_run` read them)."""
    ctx = ScoringContext(run.path, options, probes, config=run.config, manifest=run.manifest)
    with resample_plan(plan):
        for task, suites in tasks_of_run(run.path, list(ctx.status), ctx.config):
            task.score(ctx, suites)
    suites = {s: None if st.status == "scored" else (st.reason or "no task scores this suite")
              for s, st in ctx.status.items() if st.n_images}
    missing = [get_label_file(kind).relpath for kind, frame in ctx.labels.items() if frame is None]
    return Scored(ctx.scores, ctx.resamples, ctx.designs, suites, missing)


def scored_from_results(run: Run) -> Scored:
    """The entries of a results document and the paired resamples its ``pairing`` section carries."""
    _, entries = read_pairing(run.results)
    suites = {str(s.get("name")): None if s.get("status") == "scored" else (s.get("reason") or "not scored")
              for s in run.results.get("suites") or [] if isinstance(s, Mapping) and s.get("n_images")}
    return Scored(list(run.results.get("scores") or []), {e.key: e.resamples for e in entries},
                  {e.key: e.design for e in entries}, suites)
