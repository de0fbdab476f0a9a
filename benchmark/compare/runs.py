"""Comparing audits: load the runs, check they are comparable, score each alone (its entries
and values, :func:`score_alone`), and score both together for the paired randomization test
(:mod:`benchmark.compare.joint`).

A run is a run folder (or the results.json inside one), or a results file on its own (a local
path, or ``hf://datasets/OWNER/NAME[@REVISION]/PATH`` on the Hub). A folder is checked as
``t2ibench verify`` checks it, then scored again from its label files by the tasks' own scoring
code (nothing is written to it), restricted to the probes both runs hold: paired by (probe,
seed) for images the benchmark generated, by probe for images made elsewhere (seeds not
controlled), unpaired when the runs share no probe. A results file carries the label rows its
scores read (its ``pairing`` section, :mod:`benchmark.contract.pairing`): it is rebuilt as a run
(its probe rows from its probe set, its labels from the section), checked (each score the
section gives must be the file's own value, or the file is refused), and compared as a folder is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from benchmark.annotate.label_files import get_label_file
from benchmark.contract import results as res
from benchmark.contract.pairing import probe_ids_digest, read_pairing
from benchmark.contract.run_folder import MANIFEST_FILE
from benchmark.contract.run_folder_check import ExpectedCheck, require_intact
from benchmark.hub.access import hub_errors
from benchmark.probes.source import rows_of_record
from benchmark.tasks.context import ScoreStageError, ScoringContext, ScoringOptions, entry_key, load_run_config, \
    load_run_manifest
from benchmark.tasks.of_run import score_tables, tasks_of_run
from benchmark.tasks.registry import list_tasks, task_options

__all__ = ["HUB_PREFIX", "CompareError", "Run", "Scored", "check_versions", "load_run", "pairing", "plan_size",
           "run_from_results", "score_alone"]

HOLM_NOTE = ("p-values are Holm-corrected across the {n} differences tested (statsmodels multipletests, "
             "method='holm'); significant: corrected p < {alpha:g}; rows not tested and described rows are "
             "outside the family")
MDD_NOTE = ("MDD: the minimum detectable difference of the test that decides (Holm's first step over the {n} "
            "tests, alpha {alpha:g} / {n}, two-sided), here by the normal formula: {factor:.2f} x the standard error "
            "of the difference (its spread over the swaps; for a score with an ideal value, that of B - A: "
            "se_difference in the JSON; mdd_uncorrected: one test alone at alpha "
            "{alpha:g}, {single:.2f} x SE). It assumes the difference spreads under a change as under none, which "
            "does not hold for these scores: t2ibench compare simulates the MDD from the runs' own labels instead "
            "(docs/compare.md, Calibration); 'no significant change' with a large MDD means the audit was too small "
            "to tell")
MDD_SIMULATED_NOTE = ("MDD: the minimum detectable difference of the test that decides (Holm's first step over the {n} "
                      "tests, alpha {alpha:g} / {n}): the expected change of a score that this comparison finds worse "
                      "in 80% of audits of this size, found by simulation from the compared runs' own labels ({pairs} "
                      "pairs of audits drawn from a fit of them, B's labels moved towards each prompt's majority, "
                      "the critical value from the spread of this comparison's swaps, of B - A for a score with an "
                      "ideal value (se_difference in the JSON); mdd_change in the JSON: the "
                      "share moved); 'not detectable' where even moving every label falls short; rows whose labels "
                      "are not simulated give the normal formula, {factor:.2f} x SE (mdd_how says which; mdd_formula in the "
                      "JSON for every row); 'no significant change' with a large MDD means the audit was too small "
                      "to tell")
NOTHING_TESTED = "no difference was tested, so nothing is corrected and no MDD is given"
#: a value recomputed from a results file's per-probe labels may differ from the file's by this
#: (relative to the value, at least 1): the labels' floats are carried as float32
VALUE_TOLERANCE = 1e-5
HUB_PREFIX = "hf://datasets/"


class CompareError(ValueError):
    """The runs cannot be compared at all; the message is one line."""


@dataclass
class Run:
    """One audit to compare: a run folder (``manifest`` and ``config`` read from it, labels from its
    files), a results document alone (``source`` "results": ``manifest`` rebuilt from its probe
    set, ``labels`` from its pairing section, ``not_carried``: the label files it does not carry
    and why), or an audit held in memory (``source`` "memory": a simulated one, its ``labels``
    given)."""

    label: str
    path: Path | str
    config: dict
    manifest: pd.DataFrame
    results: dict | None = None
    source: str = "run folder"
    labels: dict | None = None
    not_carried: dict = field(default_factory=dict)
    _frames: dict = field(default_factory=dict, repr=False)

    @property
    def is_folder(self) -> bool:
        return self.source == "run folder"

    @property
    def fingerprint(self) -> str | None:
        probes = self.config.get("probes") or (self.results or {}).get("probes") or {}
        return probes.get("fingerprint") if isinstance(probes, Mapping) else None

    @property
    def seeds_controlled(self) -> bool:
        if self.results is None or self.is_folder:
            return res.seed_policy(self.config.get("provenance")) == res.SEED_POLICY
        return ((self.results or {}).get("seeds") or {}).get("policy") == res.SEED_POLICY

    @property
    def n_resamples(self) -> int | None:
        value = ((self.results or {}).get("scoring") or {}).get("n_resamples")
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def package_version(self) -> str | None:
        if self.results is None or self.is_folder:
            return self.config.get("package_version")
        return ((self.results or {}).get("package") or {}).get("version")

    @property
    def probe_ids(self) -> dict:
        """``{"n", "sha256"}`` of the run's probe ids."""
        return probe_ids_digest(self.manifest["probe_id"])

    def label_frame(self, kind: str) -> pd.DataFrame | None:
        """The rows of label file ``kind`` (None when the run has none): read once from the folder, or
        the rows a results file carries."""
        if self.labels is not None:
            return self.labels.get(kind)
        if kind not in self._frames:
            path = get_label_file(kind).path(self.path)
            self._frames[kind] = pd.read_parquet(path) if path.is_file() else None
        return self._frames[kind]

    def warning(self) -> str | None:
        if self.results is not None and self.results.get("warning"):
            return str(self.results["warning"])
        model = self.config.get("model") if isinstance(self.config.get("model"), Mapping) else {}
        return res.BUILTIN_WARNING if model.get("builtin") else None

    def summary(self) -> dict:
        model = self.config.get("model") if isinstance(self.config.get("model"), Mapping) else {}
        doc_model = (self.results or {}).get("model") or {}
        return {"label": self.label, "path": str(self.path), "source": self.source,
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


def _probe_rows(doc: Mapping, ids: list[str], withheld: list[str]) -> tuple[pd.DataFrame, dict]:
    """The probe rows of a results document's probes (from its probe set, checked against its
    fingerprint) as a manifest, and the run config its scoring reads."""
    suites = [str(s.get("name")) for s in doc.get("suites") or [] if isinstance(s, Mapping) and s.get("name")]
    manifest, record = rows_of_record(doc.get("probes") if isinstance(doc.get("probes"), Mapping) else None,
                                      suites, ids)
    manifest["nsfw"] = manifest["probe_id"].astype(str).isin(set(withheld))
    run = doc.get("run") if isinstance(doc.get("run"), Mapping) else {}
    model = doc.get("model") if isinstance(doc.get("model"), Mapping) else {}
    config = {"probes": record, "suites": suites, "model": {"model_id": model.get("id"),
                                                            "builtin": bool(model.get("builtin"))},
              "settings": doc.get("settings"), "limit_per_suite": run.get("limit_per_suite")}
    return manifest, config


def recorded_options(doc: Mapping) -> ScoringOptions:
    """The scoring options a results document records (its tasks' options as ``<task>_<option>``)."""
    scoring = doc.get("scoring") if isinstance(doc.get("scoring"), Mapping) else {}
    given = {t.name: {o: scoring[f"{t.name}_{o}"] for o in t.options if f"{t.name}_{o}" in scoring}
             for t in list_tasks() if t.options}
    try:
        options = task_options({t: o for t, o in given.items() if o})
    except ValueError:
        options = task_options()
    return ScoringOptions(0, float(scoring.get("confidence_level") or 0.95), 0, options)


def _value_problem(mine: Mapping, theirs: Mapping | None) -> str | None:
    """How a results file's entry differs from the one its labels give (None: it agrees)."""
    if theirs is None:
        return "its per-probe labels give no such score"
    if bool(mine.get("defined")) != bool(theirs.get("defined")):
        return f"its labels give it {'a value' if theirs.get('defined') else 'none'}"
    a, b = mine.get("value"), theirs.get("value")
    if a is None or b is None:
        return None if a is b else "its labels give another value"
    if abs(float(a) - float(b)) > VALUE_TOLERANCE * max(1.0, abs(float(a)), abs(float(b))):
        return f"its labels give {float(b):.6g}, not {float(a):.6g}"
    return None


def check_against_labels(run: Run, scored: "Scored") -> None:
    """Refuse (one line) a results file whose values are not those its per-probe labels give;
    entries resting on label files it does not carry are left to :attr:`Scored.uncarried`."""
    mine = {entry_key(e): e for e in run.results.get("scores") or []}
    theirs = {entry_key(e): e for e in scored.entries}
    for key, entry in mine.items():
        if key in scored.uncarried:
            continue
        problem = _value_problem(entry, theirs.get(key))
        if problem:
            where = ", ".join(str(x) for x in key[1:] if x)
            raise CompareError(f"{run.path} contradicts itself: {key[0]} ({where}): {problem}; a results file whose "
                               "values are not those of its own per-probe labels is refused")
    extra = [k for k in theirs if k not in mine and theirs[k].get("defined")]
    if extra:
        raise CompareError(f"{run.path} contradicts itself: its per-probe labels give {extra[0][0]} ({extra[0][1]}), "
                           "which its scores do not list")


def run_from_results(doc: Mapping, path: Any, label: str) -> Run:
    """A results document alone as a run, rebuilt from its pairing section and checked against
    it: refused (one line) when it cannot be paired or contradicts itself."""
    problems = res.validate_results(doc)
    if problems:
        raise CompareError(f"{path} is not a valid results file: {problems[0]}")
    try:
        section = read_pairing(doc)
        manifest, config = _probe_rows(doc, section.probe_ids, section.withheld)
    except ValueError as exc:
        raise CompareError(f"{path} cannot be compared without its run folder: {exc}") from None
    run = Run(label, path, config, manifest, dict(doc), "results", section.labels, section.not_carried)
    check_against_labels(run, score_alone(run, None, recorded_options(doc)))
    return run


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
                           "the per-probe labels it carries)")
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


def pairing(a: Run, b: Run) -> dict:
    """How B is paired with A: the probes both hold (``probes``) and what pairs them (said in the
    output)."""
    ids_a, ids_b = set(a.manifest["probe_id"].astype(str)), set(b.manifest["probe_id"].astype(str))
    common = ids_a & ids_b
    same_set = a.fingerprint is not None and a.fingerprint == b.fingerprint
    out = {"baseline": a.label, "run": b.label, "n_common_probes": len(common), "n_probes_a": len(ids_a),
           "n_probes_b": len(ids_b), "same_probe_set": same_set, "probes": sorted(common)}
    if not common:
        out.update(kind="unpaired", text="unpaired: the runs share no probe, so the test permutes the runs' images "
                                         "within each cell of a score's design (a paired test needs the same probes)")
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
                        "from the probe's seed, so the test swaps the two runs' images of random probes")
    else:
        why = "seeds not controlled (images supplied or made by an image API)" if not (
            a.seeds_controlled and b.seeds_controlled) else "the runs used different seeds"
        out.update(kind="paired by probe",
                   text=f"paired by probe on {len(common)} probes, {where}: {why}, so a probe's two images "
                        "share only their prompt (the test swaps them all the same)")
    rebuilt = [r.label for r in (a, b) if r.source == "results"]
    if rebuilt:
        out["text"] += f" ({' and '.join(rebuilt)} from the per-probe labels the results carry)"
    return out


def plan_size(runs: Sequence[Run], n_resamples: int | None) -> int:
    """The resamples (and swaps) of the comparison: ``n_resamples``, else the number every run was
    scored with (1000 if none says)."""
    if n_resamples is None:
        used = {r.label: r.n_resamples for r in runs if r.n_resamples}
        if len(set(used.values())) > 1:
            listed = ", ".join(f"{k} {v}" for k, v in used.items())
            raise CompareError(f"the runs were scored with different numbers of resamples ({listed}): give "
                               "--n-resamples N to compare them all with N")
        n_resamples = next(iter(used.values()), 1000)
    if n_resamples < 2:
        raise CompareError(f"--n-resamples must be at least 2, got {n_resamples}")
    return int(n_resamples)


@dataclass
class Scored:
    """One run's score entries as a comparison reads them: the entries, the suites (None: scored,
    else why not), the label files its tasks looked for and did not find, and the entries of a
    results file that rest on label files it does not carry (entry key -> (its entry, why))."""

    entries: list[dict]
    suites: dict[str, str | None] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    uncarried: dict[tuple, tuple[dict, str]] = field(default_factory=dict)


def score_alone(run: Run, probes: set | None, options: ScoringOptions) -> Scored:
    """Score ``run`` (only ``probes``) by its tasks, values only (no interval); nothing is
    written, and nothing of run_config.json and manifest.parquet is read again."""
    if run.is_folder:
        ctx = ScoringContext(Path(run.path), options, probes, config=run.config, manifest=run.manifest)
        for task, suites in tasks_of_run(run.path, list(ctx.status), ctx.config):
            task.score(ctx, suites)
    else:
        ctx = score_tables(run.config, run.manifest, run.label_frame, options, probes)
    suites = {s: None if st.status == "scored" else (st.reason or "no task scores this suite")
              for s, st in ctx.status.items() if st.n_images}
    missing = [get_label_file(kind).relpath for kind, frame in ctx.labels.items() if frame is None]
    uncarried = {}
    if run.not_carried:  # a results file's entries whose suites lacked a label file it does not carry
        said = {s: [st.reason or ""] + ctx.missing_parts.get(s, []) for s, st in ctx.status.items()}
        lacking = {s: [k for k in run.not_carried if any(get_label_file(k).relpath in p for p in parts)]
                   for s, parts in said.items()}
        for e in run.results.get("scores") or []:
            kinds = lacking.get(e.get("suite")) or []
            if kinds:
                uncarried[entry_key(e)] = (e, f"{run.label}'s results do not carry {get_label_file(kinds[0]).relpath} "
                                              f"({run.not_carried[kinds[0]]}): compare the run folders")
    return Scored(ctx.scores, suites, missing, uncarried)
