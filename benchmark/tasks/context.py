"""What a task's scorer works with: the run's probe rows, its label files and probe configs,
and the results being built (score entries, detail tables, notes, per-suite status).

Scorers only read files through this object and only write through it, so the score stage
can run them in any order and write ``results.json`` once at the end.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from benchmark.contract import results as res
from benchmark.annotate.label_files import get_label_file
from benchmark.probes.source import configs_of_record, suite_families
from benchmark.contract.run_folder import CONFIG_FILE, MANIFEST_FILE
from benchmark.contract.withheld import REASONS as WITHHELD_REASONS, read_withheld
from benchmark.present.text import excluded_text, excluded_why
from benchmark.scores.bootstrap import PLANNED_DESIGN, PLANNED_RESAMPLES

__all__ = ["ScoreStageError", "ScoringOptions", "SuiteStatus", "ScoringContext", "entry_key", "groups_of",
           "load_run_config", "load_run_manifest"]


class ScoreStageError(ValueError):
    """RUN_DIR cannot be scored at all (no manifest); the message is one line."""


@dataclass
class ScoringOptions:
    n_resamples: int = 1000
    confidence_level: float = 0.95
    random_state: int = 0
    #: each task's own scoring options (task name -> option -> value; ``Task.options`` gives
    #: the names and defaults, e.g. PST's policy for "unidentifiable" persons)
    task_options: dict = field(default_factory=dict)

    def of(self, task: str) -> dict:
        """The scoring options of ``task`` (its declared defaults when none were given)."""
        return dict(self.task_options.get(task) or {})

    def ci_kwargs(self) -> dict:
        return {"n_resamples": self.n_resamples, "confidence_level": self.confidence_level,
                "random_state": self.random_state}


@dataclass
class SuiteStatus:
    name: str
    n_images: int = 0
    n_scored_images: int = 0
    status: str = "not scored"
    reason: str | None = None
    excluded: dict = field(default_factory=dict)

    def add_excluded(self, kind: str, n: int) -> None:
        if n:
            self.excluded[kind] = self.excluded.get(kind, 0) + int(n)

    def to_dict(self) -> dict:
        return {"name": self.name, "status": self.status, "reason": self.reason, "n_images": self.n_images,
                "n_scored_images": self.n_scored_images,
                "excluded": {k: int(v) for k, v in sorted(self.excluded.items())}}


def load_run_config(run_dir: Path) -> dict:
    """RUN_DIR's run_config.json ({} when it has none); a one-line :class:`ScoreStageError` if
    it is not JSON. Read once by whoever scores (the score stage here, ``t2ibench compare``
    before it scores a run in memory)."""
    path = run_dir / CONFIG_FILE
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8")) or {}
    except ValueError as exc:  # JSONDecodeError, or not UTF-8
        raise ScoreStageError(f"{path} is not valid JSON ({exc})") from None


def load_run_manifest(run_dir: Path) -> pd.DataFrame:
    """RUN_DIR's manifest.parquet, checked (probe_id and suite columns, no probe twice); a
    one-line :class:`ScoreStageError` otherwise."""
    path = run_dir / MANIFEST_FILE
    if not path.is_file():
        raise ScoreStageError(f"{path} not found: run the generation stage first (t2ibench run) or give a run folder")
    manifest = pd.read_parquet(path)
    for col in ("probe_id", "suite"):
        if col not in manifest.columns:
            raise ScoreStageError(f"{path} has no {col!r} column: not a run manifest")
    if manifest["probe_id"].duplicated().any():
        dup = manifest.loc[manifest["probe_id"].duplicated(), "probe_id"].iloc[0]
        raise ScoreStageError(f"{path} lists probe {dup!r} twice")
    return manifest


def groups_of(frame: pd.DataFrame, col: str) -> list[tuple[str | None, pd.DataFrame]]:
    """Split by annotator (or estimator) keeping None as a group of its own."""
    if col not in frame.columns:
        return [(None, frame)]
    return [(key or None, sub) for key, sub in frame.groupby(frame[col].fillna("").astype(str), sort=True)]


def labellers_of(frame: pd.DataFrame) -> list[tuple[str | None, str | None, pd.DataFrame]]:
    """Split label rows by who made them: (estimator, annotator, rows), e.g. ("vqa closed-set",
    "Salesforce/blip2-opt-2.7b", ...); None where a file has no such column."""
    out = []
    for estimator, sub in groups_of(frame, "estimator"):
        out += [(estimator, annotator, rows) for annotator, rows in groups_of(sub, "annotator")]
    return out


def _with_probe_fields(rows: pd.DataFrame, imgs: pd.DataFrame) -> pd.DataFrame:
    """``rows`` (each of a probe id in ``imgs``' index) with their image's probe fields, in order
    (a left merge on probe_id). Taken by position where every image has its own id: a merge
    factorizes its text keys through pandas' Arrow strings, the largest single cost (9%) of
    scoring simulated audits."""
    fields = [c for c in imgs.columns if c not in rows.columns]
    if not imgs.index.is_unique:
        return rows.merge(imgs[fields + ["probe_id"]].reset_index(drop=True), on="probe_id", how="left")
    taken = imgs[fields].iloc[imgs.index.get_indexer(rows["probe_id"])].reset_index(drop=True)
    return pd.concat([rows.reset_index(drop=True), taken], axis=1)


class ScoringContext:
    """The run's images, label files and probe configs, and the outputs being built.

    ``probes`` (optional) keeps only those probe ids of the manifest (``t2ibench compare`` scores
    two runs on the probes both hold). Under a :func:`benchmark.scores.bootstrap.resample_plan`,
    :attr:`resamples` keeps each entry's statistic on the plan's resamples (or a joint plan's
    draws, :class:`benchmark.scores.randomization.JointDraws`), keyed by
    :func:`entry_key` (and :attr:`designs` its strata, ``{"strata": m, "single": k}``). ``config`` and ``manifest``: the run's run_config.json and manifest as
    the caller already read them (:func:`load_run_config`, :func:`load_run_manifest`); read
    from ``run_dir`` when not given. ``labels``: label tables to score instead of the label files
    (name -> table, None for a file to treat as missing), e.g. people's labels in a label file's
    shape (:mod:`benchmark.runner.human_correction`); the files are never written.
    ``label_source``: where the other label files come from when the run is held in memory (a
    results file rebuilt, simulated audits), instead of ``run_dir``."""

    def __init__(self, run_dir: Path, options: ScoringOptions, probes: set | None = None, *,
                 config: dict | None = None, manifest: pd.DataFrame | None = None,
                 labels: dict[str, pd.DataFrame | None] | None = None,
                 label_source: Callable[[str], pd.DataFrame | None] | None = None):
        self.run_dir = run_dir
        self.options = options
        self.label_source = label_source  # label files held in memory (kind -> rows or None), else the folder's
        self.config = load_run_config(run_dir) if config is None else config
        self.manifest = manifest = load_run_manifest(run_dir) if manifest is None else manifest
        if probes is not None:
            self.manifest = manifest = manifest[manifest["probe_id"].astype(str).isin(probes)].reset_index(drop=True)
        nsfw = manifest["nsfw"].map(lambda v: v is True or v == 1 or (isinstance(v, np.bool_) and bool(v))) \
            if "nsfw" in manifest.columns else pd.Series(False, index=manifest.index)
        self.nsfw = nsfw.astype(bool)
        records = read_withheld(run_dir)  # benchmark.contract.withheld: refused by an API, or not supplied
        self.withheld = manifest["probe_id"].map(lambda p: (records.get(str(p)) or {}).get("reason")).where(self.nsfw)
        self.images = manifest[~self.nsfw].set_index("probe_id", drop=False)
        suites = list(dict.fromkeys(list(self.config.get("suites") or []) + list(manifest["suite"].unique())))
        self.status: dict[str, SuiteStatus] = {s: SuiteStatus(s) for s in suites}
        for s, st in self.status.items():
            in_suite = manifest["suite"] == s
            st.n_images = int(in_suite.sum())
            flagged = in_suite & self.nsfw
            for reason in WITHHELD_REASONS:  # placeholders of withheld images: counted by their reason
                st.add_excluded(reason, int((flagged & (self.withheld == reason)).sum()))
            st.add_excluded("nsfw", int((flagged & self.withheld.isna()).sum()))
            if st.n_images == 0:
                st.reason = "no images in manifest.parquet"
        self.labels: dict[str, pd.DataFrame | None] = dict(labels or {})
        self.missing_parts: dict[str, list[str]] = {}  # suite -> label files its task asked for and lacked
        self.scores: list[dict] = []
        self.resamples: dict[tuple, np.ndarray] = {}
        self.designs: dict[tuple, dict | None] = {}  # beside each resamples: {"strata": m, "single": k}
        self.details: dict[str, pd.DataFrame] = {}
        self.notes: list[str] = []
        #: the label files read so far, and per score entry those read before it (its own last)
        self.read: list[str] = []
        self.read_by: dict[tuple, tuple[str, ...]] = {}

    # -- probes
    def family_config(self, family: str) -> dict:
        """The config the run's suites of ``family`` were built from (the package's for run
        folders that did not record one)."""
        configs = configs_of_record(self.config.get("probes"))
        if family in configs:
            return configs[family]
        from benchmark.probes.registry import load_config

        return load_config(family)

    def families(self) -> dict[str, str]:
        """suite -> probe family of every suite of the run."""
        return suite_families(self.config.get("probes"), list(self.status))

    # -- label files
    def label(self, kind: str) -> pd.DataFrame | None:
        if kind not in self.read:
            self.read.append(kind)
        if kind not in self.labels:
            path = get_label_file(kind).path(self.run_dir)
            self.labels[kind] = self.label_source(kind) if self.label_source is not None else \
                pd.read_parquet(path) if path.is_file() else None
        return self.labels[kind]

    def missing(self, kind: str) -> str:
        return f"missing {get_label_file(kind).relpath}"

    def suite_images(self, suite: str) -> pd.DataFrame:
        return self.images[self.images["suite"] == suite]

    def has_suite(self, suite: str) -> bool:
        return suite in self.status and self.status[suite].n_images > 0

    def labels_for(self, kind: str, suite: str) -> tuple[pd.DataFrame | None, str | None]:
        """Label rows of ``kind`` for the kept (non-NSFW) images of ``suite``, joined with their
        probe fields; or (None, reason)."""
        imgs = self.suite_images(suite)
        if imgs.empty:  # before the label file: an all-excluded suite has no labels to miss
            st = self.status.get(suite)
            why = {r: n for r in (*WITHHELD_REASONS, "nsfw")  # refused / missing / safety checker, by name
                   if (n := int(st.excluded.get(r, 0) if st is not None else 0))}
            if not why:
                return None, "no images in manifest.parquet"
            if len(why) == 1:
                ((reason, n),) = why.items()
                return None, f"every one of its {n} images was {excluded_why(reason)} and left out"
            return None, f"every one of its {sum(why.values())} images was left out: {excluded_text(why)}"
        df = self.label(kind)
        rows = None if df is None else df[df["probe_id"].isin(imgs.index)]
        if rows is None or rows.empty:
            why = self.missing(kind) if df is None else f"no rows for this suite in {get_label_file(kind).relpath}"
            self.missing_parts.setdefault(suite, []).append(why)
            return None, why
        joined = _with_probe_fields(rows, imgs)
        self.status[suite].add_excluded(f"unlabelled ({kind})", int((~imgs.index.isin(rows["probe_id"])).sum()))
        return joined, None

    # -- outputs
    def add(self, name: str, suite: str, value: Any, **kw) -> dict | None:
        """A score entry (:func:`benchmark.contract.results.score_entry`); a name without metadata goes to
        the notes instead (the detail tables keep its value)."""
        if not res.has_metadata(name):
            where = ", ".join(str(x) for x in (suite, kw.get("estimator"), kw.get("subset")) if x)
            self.notes.append(f"{name} ({where}) = "
                              f"{_fmt(value)} is in the detail tables only: SCORE_METADATA has no entry {name!r}")
            return None
        ci = kw.get("ci")
        if isinstance(ci, dict) and PLANNED_RESAMPLES in ci:  # paired resamples: kept here, not in results.json
            kw["ci"] = {k: v for k, v in ci.items() if k not in (PLANNED_RESAMPLES, PLANNED_DESIGN)}
        entry = res.score_entry(name, suite, value, **kw)
        self.read_by[entry_key(entry)] = tuple(self.read)
        if isinstance(ci, dict) and PLANNED_RESAMPLES in ci:
            planned = ci[PLANNED_RESAMPLES]  # a plan's resamples, or a joint plan's draws of two runs
            self.resamples[entry_key(entry)] = np.asarray(planned, dtype=float) \
                if isinstance(planned, (list, tuple, np.ndarray)) else planned
            self.designs[entry_key(entry)] = ci.get(PLANNED_DESIGN)
        self.scores.append(entry)
        return entry

    def scored(self, suite: str, n_images: int) -> None:
        st = self.status[suite]
        st.status, st.reason = "scored", None
        st.n_scored_images = max(st.n_scored_images, int(n_images))

    def mark_partly_scored(self) -> None:
        """A scored suite whose task lacked some of its label files gets the reason ``partly scored:
        missing labels/<file>``, so that results.json says which entries are missing and why (the
        score command then exits 1 unless ``--allow-partial``)."""
        for name, parts in self.missing_parts.items():
            st = self.status.get(name)
            if st is not None and st.status == "scored":
                st.reason = "partly scored: " + "; ".join(dict.fromkeys(parts))

    def not_scored(self, suite: str, reason: str) -> None:
        st = self.status.get(suite)
        if st is not None and st.status != "scored":
            st.reason = reason

    def detail(self, name: str, frame: pd.DataFrame) -> None:
        if frame is None or frame.empty:
            return
        prev = self.details.get(name)
        self.details[name] = frame if prev is None else pd.concat([prev, frame], ignore_index=True)


def entry_key(entry: dict) -> tuple:
    """(name, suite, subset, estimator, annotator): what tells a run's score entries apart."""
    return tuple(entry.get(k) for k in ("name", "suite", "subset", "estimator", "annotator"))


def _fmt(value: Any) -> str:
    try:
        return f"{float(value):.4g}"
    except (TypeError, ValueError):
        return "undefined"
