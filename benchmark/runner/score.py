"""The scoring stage: RUN_DIR's manifest and label files -> scores, results.json, detail tables.

``score_run(run_dir)`` reads only files (``run_config.json``, ``manifest.parquet``,
``labels/*.parquet``, optionally ``timings.json``), so it can be re-run alone
(``t2ibench score RUN_DIR``). Every task of the run's suites (:mod:`benchmark.tasks`) adds
its score entries, detail tables and notes; this module then writes

* ``RUN_DIR/results.json`` (:mod:`benchmark.contract.results`, schema ``benchmark/contract/results_schema.json``);
* ``RUN_DIR/scores/*.parquet``: the per-item tables behind the scores (GEP vectors per
  attribute, micro STS per identity, gender / skin-tone / attribute distributions per
  profession, MCAS per target and category, PaintSkills per image);
* with ``report=True``, ``RUN_DIR/report/`` (:mod:`benchmark.runner.report`; the pipeline
  calls ``write_report`` itself).

A suite whose labels are missing is reported "not scored", never an error; images flagged
NSFW are left out and counted.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Mapping

import pandas as pd

from benchmark import cli_types
from benchmark.contract import results as res
from benchmark.annotate.label_files import LABEL_FILES
from benchmark.contract.model_specs import is_builtin
from benchmark.contract.atomic import atomic_path
from benchmark.contract.image_checks import degenerate_text, require_usable, results_block
from benchmark.contract.leftovers import remove_leftovers
from benchmark.contract.pairing import pairing_section
from benchmark.contract.run_folder import SCORES_DIR, TIMINGS_FILE
from benchmark.tasks.folder_record import missing_task_folder
from benchmark.tasks.inputs import results_references
from benchmark.tasks.context import ScoreStageError, ScoringContext, ScoringOptions, SuiteStatus, entry_key, load_run_manifest
from benchmark.contract.withheld import REASONS as WITHHELD_REASONS
from benchmark.present.text import excluded_why
from benchmark.contract.run_folder_check import require_intact
from benchmark.runner.annotator_errors import annotator_errors, corrected_shares
from benchmark.runner.expected import expected_problems
from benchmark.runner.run_config import MODEL_RECORDS
from benchmark.runner.human_correction import HumanLabels, correct_entries
from benchmark.registries import HUMAN_LABEL_SOURCES
from benchmark.tasks.of_run import tasks_of_run
from benchmark.tasks.registry import load_plugins, task_options as declared_task_options

__all__ = ["SCORES_DIR", "ScoreStageError", "ScoringOptions", "SuiteStatus", "score_run"]

# The column of each label file that names who (or what) made a row, and the extra key that
# tells rows of one annotator apart (GEP's estimators).
ANNOTATOR_COLUMNS = {"attributes": ["estimator", "annotator"], "gender": ["estimator", "annotator"],
                     "embeddings": ["encoder"], "detections": ["detector"]}


def annotator_entries(ctx: ScoringContext) -> list[dict]:
    """One entry per label file read and annotator in it (``results["annotators"]``)."""
    out = []
    for kind in LABEL_FILES:
        frame = ctx.labels.get(kind)
        if frame is None:  # not read by any task of this run
            continue
        cols = [c for c in ANNOTATOR_COLUMNS.get(kind, ["annotator"]) if c in frame.columns]
        if not cols:
            continue
        for keys, sub in frame.groupby(cols, dropna=False, sort=True):
            keys = keys if isinstance(keys, tuple) else (keys,)
            named = {("annotator" if c == "detector" else c): (None if pd.isna(k) else str(k))
                     for c, k in zip(cols, keys)}
            out.append({"file": LABEL_FILES[kind].relpath, **named, "n_rows": int(len(sub))})
    return out


def _write_details(run_dir: Path, details: Mapping[str, pd.DataFrame]) -> dict[str, str]:
    """Rewrite RUN_DIR/scores/ so a re-run leaves no stale table; returns name -> relative path."""
    scores_dir = run_dir / SCORES_DIR
    scores_dir.mkdir(parents=True, exist_ok=True)
    for old in scores_dir.glob("*.parquet"):
        if old.stem not in details:
            old.unlink()
    out = {}
    for name, frame in sorted(details.items()):
        path = scores_dir / f"{name}.parquet"
        with atomic_path(path) as tmp:
            frame.reset_index(drop=True).to_parquet(tmp, index=False)
        out[name] = f"{SCORES_DIR}/{name}.parquet"
    return out


def _model_block(config: dict, manifest: pd.DataFrame) -> dict:
    m = config.get("model")
    spec = m.get("spec") if isinstance(m, dict) else m
    model_id = (m.get("model_id") if isinstance(m, dict) else None) or spec
    if not model_id and "model_id" in manifest.columns and len(manifest):
        model_id = str(manifest["model_id"].iloc[0])
    revision = (m.get("revision") if isinstance(m, dict) else None) or config.get("revision")
    if revision is None and "revision" in manifest.columns and len(manifest) and pd.notna(manifest["revision"].iloc[0]):
        revision = str(manifest["revision"].iloc[0])
    builtin = is_builtin(m if isinstance(m, dict) else {"spec": spec}) or bool(config.get("builtin")) \
        or is_builtin(model_id)
    block = {"id": str(model_id or "unknown"), "spec": None if spec is None else str(spec),
             "revision": None if revision is None else str(revision), "builtin": builtin}
    adapters = m.get("adapters") if isinstance(m, dict) else None
    if isinstance(adapters, list) and adapters:  # LoRAs / component checkpoints: another model than the base
        block["adapters"] = adapters
    for key in MODEL_RECORDS:  # a single-file checkpoint's and quantized weights' identity records
        if isinstance(m, dict) and isinstance(m.get(key), dict):
            block[key] = m[key]
    return block


def _settings(config: dict, manifest: pd.DataFrame) -> dict:
    settings = config.get("settings")
    if settings is None and "settings" in manifest.columns and len(manifest):
        try:
            settings = json.loads(str(manifest["settings"].iloc[0]))
        except json.JSONDecodeError:
            settings = {"raw": str(manifest["settings"].iloc[0])}
    return settings or {}


def _status_notes(ctx: ScoringContext) -> None:
    for st in ctx.status.values():
        if st.status != "scored" and st.reason is None:
            st.reason = "no task scores this suite"
        if st.status != "scored":
            ctx.notes.append(f"{st.name}: not scored: {st.reason}")
        for reason in WITHHELD_REASONS:  # each in the words of benchmark.present.text.EXCLUDED_WHY
            if st.excluded.get(reason):
                ctx.notes.append(f"{st.name}: {st.excluded[reason]} images {excluded_why(reason)} were left out of "
                                 "every score")
        if st.excluded.get("nsfw"):
            ctx.notes.append(f"{st.name}: {st.excluded['nsfw']} images flagged NSFW by the safety checker were "
                             "left out of every score")


def annotate_batch_size(run_dir: Path) -> int | None:
    """The batch size of the annotate call that last computed labels (timings.json
    ``annotate/total``), None when no call recorded one."""
    try:
        entry = json.loads((run_dir / TIMINGS_FILE).read_text(encoding="utf-8")).get("annotate/total")
    except (OSError, json.JSONDecodeError, AttributeError):
        return None
    size = entry.get("batch_size") if isinstance(entry, dict) else None
    return size if isinstance(size, int) and not isinstance(size, bool) and size >= 1 else None


def _pairing(ctx: ScoringContext) -> dict | None:
    """results.json's ``pairing`` section: the label rows the scores read, per label file, so that
    ``t2ibench compare`` can test a difference from results files alone (benchmark.contract.pairing)."""
    probes = ctx.config.get("probes") if isinstance(ctx.config.get("probes"), dict) else {}
    labels = {kind: None if frame is None else frame.drop(columns=[c for c in LABEL_FILES[kind].provenance
                                                                    if c in frame.columns])
              for kind, frame in ctx.labels.items() if kind in LABEL_FILES}
    return pairing_section(probe_ids=ctx.manifest["probe_id"], withheld=ctx.manifest.loc[ctx.nsfw, "probe_id"],
                           labels=labels, fingerprint=probes.get("fingerprint"))


def people_labels(run_dir: Path) -> HumanLabels | None:
    """People's labels of RUN_DIR from the first registered source that has some (None: none)."""
    for source in HUMAN_LABEL_SOURCES.values():
        found = source.read(run_dir)
        if found is not None:
            return found
    return None


def human_section(ctx: ScoringContext, human: HumanLabels) -> dict:
    """results.json's ``human_labels``: which people's labels were used and refused, the annotator's
    errors per group and the corrected category shares; every score entry gets its
    ``human_corrected`` (:mod:`benchmark.runner.human_correction`)."""
    corrections = correct_entries(ctx, human)
    for entry in ctx.scores:
        entry["human_corrected"] = corrections.get(entry_key(entry))
    shares, why = corrected_shares(ctx, human)
    return {**human.summary, "annotator_errors": annotator_errors(ctx, human), "shares": shares,
            "shares_note": why}


def _results(ctx: ScoringContext, details: dict, options: ScoringOptions, seconds: float,
             pairing: dict | None = None, human: dict | None = None, degenerate: dict | None = None) -> dict:
    cfg = ctx.config
    model = _model_block(cfg, ctx.manifest)
    settings = _settings(cfg, ctx.manifest)
    timings = res.read_timings(ctx.run_dir)
    timings["score"] = round(seconds, 3)
    device = settings.get("device") if isinstance(settings, dict) else None
    probes = cfg.get("probes") or {}
    audited = res.AuditedRun(
        model=model, settings=settings, package_version=cfg.get("package_version") or _package_version(),
        seeds={"policy": res.seed_policy(cfg.get("provenance")), "bootstrap_random_state": options.random_state},
        hardware=cfg.get("hardware") if isinstance(cfg.get("hardware"), dict) else res.hardware_info(device),
        probes={k: probes.get(k) for k in ("kind", "source", "revision", "fingerprint")} if probes else None,
        references=results_references(cfg), provenance=cfg.get("provenance"),
        setting_sources=cfg.get("setting_sources") if isinstance(cfg.get("setting_sources"), dict) else None)
    scored = res.ScoredRun(
        suites=[st.to_dict() for st in ctx.status.values()], scores=ctx.scores, annotators=annotator_entries(ctx),
        scoring={"confidence_level": options.confidence_level, "n_resamples": options.n_resamples,
                 "ci_method": "percentile", **_task_option_record(options), "nsfw": "excluded"},
        run={**_run_counts(ctx, cfg), **({"degenerate_images": degenerate} if degenerate else {})}, details=details,
        timings=timings, notes=ctx.notes, pairing=pairing, human_labels=human)
    return res.build_results(audited, scored)


def _run_counts(ctx: ScoringContext, cfg: dict) -> dict:
    """results.json ``run``: images counted and left out, the batch sizes that made and labelled them."""
    return {"n_images": int(len(ctx.manifest)), "n_nsfw_excluded": int((ctx.nsfw & ctx.withheld.isna()).sum()),
            "n_withheld": {r: int((ctx.withheld == r).sum()) for r in WITHHELD_REASONS},
            "limit_per_suite": cfg.get("limit_per_suite", cfg.get("limit")), "batch_size": cfg.get("batch_size"),
            "generation_batch_sizes": [int(b) for b in cfg.get("batch_sizes") or [cfg.get("batch_size")] if b],
            "annotate_batch_size": annotate_batch_size(ctx.run_dir),
            "scored_with_package_version": _package_version()}


def _task_option_record(options: ScoringOptions) -> dict:
    # results.json `scoring`: "<task>_<option>" for every declared option (e.g. pst_unidentifiable)
    return {f"{task}_{name}": value for task, opts in options.task_options.items() for name, value in opts.items()}


def score_run(run_dir: str | Path, *, n_resamples: int = 1000, confidence_level: float = 0.95,
              random_state: int = 0, task_options: Mapping[str, Mapping] | None = None, report: bool = False,
              verify: bool = False, human: HumanLabels | bool | None = True, allow_degenerate: bool = False) -> dict:
    """Score every suite of RUN_DIR from its files; write results.json, scores/*.parquet and,
    with ``report=True``, the report (:func:`benchmark.runner.report.write_report`). Returns the
    results document (as written).

    Raises :class:`ScoreStageError` (one line) only when RUN_DIR has no usable manifest;
    missing label files make their suites "not scored" with the reason. ``verify`` first checks
    the folder against its files (:func:`benchmark.contract.run_folder_check.require_intact`: manifest
    against metadata.jsonl, every PNG's sha256, orphans, label files) and refuses one with
    problems (``RunFolderError``, one line naming the first). ``human``: people's labels of the
    run (True: read by the registered human label sources, the annotation app's answers to a
    calibration sample or a census; None / False: none): with them every entry carries its
    ``human_corrected`` and results.json a ``human_labels`` section. An audit whose images are
    degenerate (blank, constant, non-finite) past the share that stops it is refused
    (:class:`benchmark.contract.image_checks.DegenerateImages`, one line) unless
    ``allow_degenerate``; results.json ``run.degenerate_images`` counts them either way.
    """
    start = time.perf_counter()
    try:  # the command line's bound (0: no intervals): 10**9 resamples ran out of memory
        n_resamples = cli_types.whole_number(0, cli_types.MAX_RESAMPLES)(n_resamples)
    except argparse.ArgumentTypeError as exc:
        raise ScoreStageError(f"n_resamples: {exc}") from None
    load_plugins()  # the task folders fill the registries before any is read
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ScoreStageError(f"{run_dir} is not a folder: give the run folder of `t2ibench run`")
    missing = missing_task_folder(run_dir)  # its suites would be "not scored" and results.json overwritten
    if missing:
        raise ScoreStageError(missing)
    remove_leftovers(run_dir)  # what a stopped stage staged (a detail table, results.json)
    if verify:
        require_intact(run_dir, "score", expected=expected_problems)
    manifest = load_run_manifest(run_dir)  # one line when there is none
    degenerate = require_usable(run_dir, allow=allow_degenerate, manifest=manifest)  # before any score is computed
    options = ScoringOptions(n_resamples, confidence_level, random_state, declared_task_options(task_options))
    ctx = ScoringContext(run_dir, options, manifest=manifest)
    for task, suites in tasks_of_run(run_dir, list(ctx.status), ctx.config):
        task.score(ctx, suites)
    details = _write_details(run_dir, ctx.details)
    ctx.mark_partly_scored()
    _status_notes(ctx)
    if human is True:
        human = people_labels(run_dir)
    human_block = human_section(ctx, human) if isinstance(human, HumanLabels) else None
    block = results_block(degenerate, allow_degenerate)
    note = degenerate_text(block)
    ctx.notes.extend([note] if note else [])
    results = _results(ctx, details, options, time.perf_counter() - start, _pairing(ctx), human_block, block)
    res.write_results(run_dir, results)
    if report:
        from benchmark.runner.report import write_report

        write_report(run_dir, results)
    return results


def _package_version() -> str:
    import benchmark

    return getattr(benchmark, "__version__", "unknown")
