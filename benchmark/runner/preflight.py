"""Checks before work: everything ``t2ibench run`` will need, checked before the first image;
and, for the later stages, that the stage before has run.

:func:`preflight` opens the probe set, checks the run folder's arguments, resolves the
generator (spec, Hub cache or reachability, gated access, pipeline class, ``--set`` names and
value types, ``--revision`` and ``--dtype`` that cannot apply; an image API's endpoint, key and
model with ``GET /models``) and every annotator the run's
tasks will use (CLIP encoders, VQA, detector, skin tone), and returns an :class:`AuditPlan`
to print. It writes nothing: a bad argument costs seconds and leaves no half-made folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.contract import run_folder as rf
from benchmark.contract.audit_request import AuditRequest
from benchmark.models.api_images import check_api_endpoint, estimate_requests
from benchmark.models.text_to_image import plan_settings
from benchmark.contract.pairing import read_pairing
from benchmark.probes.source import rows_of_record, suite_families
from benchmark.contract.results import RESULTS_FILE, UnreadableResults, load_results_file, validate_results
from benchmark.contract.run_folder_check import ANNOTATE_TOTAL, label_files, timings_document
from benchmark.runner.annotate_plan import annotator_options, choose_annotators
from benchmark.runner.annotate_summary import annotate_record
from benchmark.runner.planning import planned_mdd_from_labels
from benchmark.runner.probe_choice import ChosenProbes, choose_probes, limit_probes, prompt_key
from benchmark.runner.simulate import layout
from benchmark.present.text import adapter_label, checkpoint_text, fmt_number, headline_entries, quantization_text
from benchmark.scores.design import planned_mdd, single_image_summary
from benchmark.scores.metadata import get_metadata
from benchmark.runner.run_config import check_resume
from benchmark.tasks.folder_record import missing_task_folder
from benchmark.tasks.inputs import declared_inputs

__all__ = ["AuditPlan", "preflight", "check_stage_inputs", "check_run_config_format", "check_results_file",
           "StageOrderError"]


class StageOrderError(rf.RunFolderError):
    """A stage was asked to run on a folder the stage before has not finished."""


@dataclass
class AuditPlan:
    """What a run will do: per suite the images it generates (and how many exist already), the
    generator and its settings, the annotators, the task inputs given (``inputs``: name ->
    identity; ``replaced``: name -> the suites each replaces), and a time estimate from rates
    this run folder measured (None when it has measured none yet)."""

    run_dir: Path
    model: str
    pipeline: str
    settings: dict
    images: dict[str, int]
    done: int
    annotators: dict[str, Any]
    unannotated: list[str] = field(default_factory=list)
    inputs: dict[str, dict] = field(default_factory=dict)
    replaced: dict[str, list[str]] = field(default_factory=dict)
    chosen: Any = field(default=None, repr=False)  # the ChosenProbes, handed on to generation
    seconds_per_image: float | None = None
    annotate_images_per_second: float | None = None
    requests: str | None = None  # an image API's requests and cost estimate (benchmark.models.api_images)
    setting_sources: dict[str, str] = field(default_factory=dict)  # call setting -> where it comes from
    setting_warning: str | None = None  # a model on its pipeline's defaults: how to pass its card's settings
    adapters: list[dict] = field(default_factory=list)  # LoRAs and component checkpoints: identity records
    lora_warnings: list[str] = field(default_factory=list)  # a LoRA whose card names another base
    detectable: list[str] = field(default_factory=list)  # --pilot: the smallest change per headline score
    model_records: dict = field(default_factory=dict)  # a single-file checkpoint's, quantized weights' records

    @property
    def n_images(self) -> int:
        return sum(self.images.values())

    def warnings(self) -> list[str]:
        """The lines a run prints whatever ``--quiet`` says (the plan shows them too)."""
        return [w for w in (self.setting_warning, *self.lora_warnings) if w]

    def estimate_seconds(self) -> float | None:
        if self.seconds_per_image is None:
            return None
        todo = max(self.n_images - self.done, 0)
        annotate = todo / self.annotate_images_per_second if self.annotate_images_per_second else 0.0
        return todo * self.seconds_per_image + annotate

    def format(self) -> str:
        suites = ", ".join(f"{s} {n}" for s, n in self.images.items())
        rows = [("model", f"{self.model} ({self.pipeline})")]
        rows += [("adapter" if a.get("kind") == "lora" else str(a.get("component") or a.get("kind")),
                  _adapter_text(a)) for a in self.adapters]
        rows += [(key, text(self.model_records[key])) for key, text in (("checkpoint", checkpoint_text),
                                                                         ("quantization", quantization_text))
                 if self.model_records.get(key)]
        for i, (key, value) in enumerate(self.settings.items()):  # every setting, its value and where it came from
            source = self.setting_sources.get(key)
            rows.append(("settings" if i == 0 else "", f"{key}={value!r}" + (f"  ({source})" if source else "")))
        rows += [("warning", line) for line in self.warnings()]
        for option, models in self.annotators.items():
            rows.append((option, (", ".join(models) if isinstance(models, list) else models) or "disabled"))
        for task_input in declared_inputs():
            if task_input.name in self.inputs:
                rows.append((task_input.title, task_input.plan_text(self.inputs[task_input.name],
                                                                    self.replaced.get(task_input.name, []))))
        if self.requests:
            rows.append(("requests", self.requests))
        if self.unannotated:
            rows.append(("not scored", f"{', '.join(self.unannotated)} (no task annotates them)"))
        if self.chosen is not None:  # a --limit leaving prompts one image: what compare cannot test
            rows += [("warning", line) for line in single_image_summary(
                self.chosen.all_probes, self.chosen.limited, limit_probes, prompt_key)]
        rows += [("detectable" if i == 0 else "", line) for i, line in enumerate(self.detectable)]
        seconds = self.estimate_seconds()
        if self.done >= self.n_images:
            rows.append(("time", "every image is generated already"))
        elif seconds is None:
            rows.append(("time", "no estimate yet (no rate measured in this run folder)"))
        else:
            rows.append(("time", f"about {_duration(seconds)} left, at the {self.seconds_per_image:.2f} s/image "
                                 "this run folder measured"))
        width = max(len(k) for k, _ in rows) + 1
        head = (f"plan: {self.n_images} images in {len(self.images)} suite(s) ({suites})"
                + (f", {self.done} already in {self.run_dir}" if self.done else ""))
        return "\n".join([head] + [f"  {(k + ':') if k else '':<{width}} {v}" for k, v in rows])


def _adapter_text(record: dict) -> str:
    """One adapter of the plan: what it is, its scale and where that came from, its file's sha256
    (short), the layers skipped (``--lora-unet-only``), and what its card says (base_model, the
    trigger it offers)."""
    scale = f" at scale {record['scale']:g}" if isinstance(record.get("scale"), (int, float)) else ""
    if record.get("scale_source"):
        scale += f" ({record['scale_source']})"
    skipped = record.get("skipped") or {}
    left = ("; --lora-unet-only skips " + ", ".join(f"{n} {c} layers" for c, n in skipped.items())) if skipped else ""
    text = f"{adapter_label(record)}{scale} (sha256 {str(record.get('sha256'))[:12]}{left})"
    if record.get("card"):
        base = record.get("base_model")
        text += f"; card {record['card']}: base_model {base or '(none named)'}"
        text += f" ({record['base_model_match']})" if base and record.get("base_model_match") else ""
        if record.get("trigger_offered"):
            text += f", trigger {record['trigger_offered']!r} (--lora-trigger puts it before every prompt)"
    return text


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _measured_rates(run_dir: Path) -> tuple[int, float | None, float | None]:
    """(images already generated, seconds per image they took, annotate images per second)."""
    if not (run_dir / rf.CONFIG_FILE).is_file():
        return 0, None, None
    try:
        rows = rf.scan_batches(run_dir, check_files=False)
    except (ValueError, OSError):  # a damaged batch: generation repairs it; the plan only has no estimate
        rows = []
    spent = {}
    for r in rows:  # batch_seconds is repeated on every row of its batch
        if r.get("batch_seconds") is not None:
            spent[r.get("batch") or r.get("image_path")] = float(r["batch_seconds"])
    per_image = sum(spent.values()) / len(rows) if rows and spent else None
    total = annotate_record(run_dir) or {}
    try:
        annotate = float(total["images_per_second"]) if total.get("images_per_second") else None
    except (ValueError, TypeError):
        annotate = None
    return len(rows), per_image, annotate


def preflight(request: AuditRequest) -> AuditPlan:
    """Check everything ``run_audit(request)`` will need and return the plan; raises a one-line
    ``ValueError`` (``ModelSpecError``, ``RunFolderError``...) on the first problem."""
    chosen = choose_probes(request.probes, run_dir=request.run_dir)
    check_resume(request, chosen)
    model, runtime = request.model, request.runtime
    settings = plan_settings(model.spec, revision=model.revision, device=runtime.device, dtype=runtime.dtype,
                             overrides=model.load_options(), offload=runtime.offload, **model.weights)
    plan = plan_for(request, chosen, model=model.spec, pipeline=settings.pipeline, settings=dict(settings.settings))
    plan.setting_sources, plan.setting_warning = dict(settings.sources), settings.warning
    plan.adapters, plan.lora_warnings = [dict(a) for a in settings.adapters], list(settings.lora_warnings)
    plan.model_records = dict(settings.model_records)
    if request.is_api:
        name, todo = model.spec.split(":", 1)[1], max(plan.n_images - plan.done, 0)
        plan.requests = estimate_requests(name, model.load_options(), todo)
        if todo:  # GET /models: the URL, the key, the model; no image made
            check_api_endpoint(name, model.load_options())
    return plan


def plan_for(request: AuditRequest, chosen: ChosenProbes, **described: Any) -> AuditPlan:
    """The plan of ``request`` over the probes ``chosen``, its annotators chosen and checked (one
    line on the first problem); ``described``: the generator as the plan shows it (``model``,
    ``pipeline``, ``settings``)."""
    run_dir = request.run_dir
    run_config = rf.read_run_config(run_dir) or {"model": {"spec": request.model_spec}}
    families = suite_families(chosen.record, chosen.suites)
    choices, unannotated = choose_annotators(families, chosen.suites,
                                             annotator_options(run_config, dict(request.annotators)))
    counts = chosen.limited["suite"].value_counts()
    done, per_image, annotate_rate = _measured_rates(run_dir)
    images = {s: int(counts.get(s, 0)) for s in chosen.suites}
    return AuditPlan(run_dir=run_dir, images=images, done=done,
                     annotators={c.kind.option: c.models for c in choices}, unannotated=unannotated,
                     inputs=chosen.inputs, replaced=chosen.replaced, chosen=chosen, seconds_per_image=per_image,
                     annotate_images_per_second=annotate_rate,
                     detectable=detectable_lines(request.pilot, images, chosen) if request.pilot else [], **described)


def _simulated(doc: dict, chosen: ChosenProbes, suites: list[str]) -> tuple[dict, str | None]:
    """Entry key -> the plan's row for the scores of ``suites`` planned from the pilot's own labels
    (benchmark.runner.planning), and why not (None when they could be)."""
    try:
        section = read_pairing(doc)
        pilot_suites = [str(s.get("name")) for s in doc.get("suites") or [] if isinstance(s, dict)]
        pilot_probes, _ = rows_of_record(doc.get("probes") if isinstance(doc.get("probes"), dict) else None,
                                         pilot_suites, section.probe_ids)
        planned = chosen.limited[chosen.limited["suite"].isin(suites)]
        lay = layout(planned)
        modeled = [s for s in suites if not any(s in v for v in lay.left_out.values())]
        if not modeled:
            return {}, None
        lay = layout(planned[planned["suite"].isin(modeled)])
        rows = planned_mdd_from_labels(pilot_probes, section.labels, lay.probes, layout_of=lambda _: lay,
                                       config={"suites": modeled, "probes": chosen.record})
    except ValueError as exc:
        return {}, str(exc)
    return {(r["name"], r["suite"], r["subset"], r["estimator"]): r for r in rows}, None


def _simulated_row(simulated: dict, entry: dict) -> dict | None:
    """The plan's row for a pilot's entry: the same score and estimator, or the one row of that
    score (the planned run may ask another model, or the same one another way)."""
    found = simulated.get((entry["name"], entry["suite"], entry["subset"], entry.get("estimator")))
    if found is None:
        same = [r for k, r in simulated.items() if k[:3] == (entry["name"], entry["suite"], entry["subset"])]
        found = same[0] if len(same) == 1 else None
    return found


def detectable_lines(pilot: Path, images: dict[str, int], chosen: ChosenProbes | None = None) -> list[str]:
    """``--pilot``: per headline score of the planned suites (the entry a report shows), the
    smallest change a comparison of two audits of this size detects, or why the pilot cannot say:
    simulated from the pilot's labels (:func:`planned_mdd_from_labels`) where its results carry
    them, else scaled from its interval (:func:`planned_mdd`); a pilot that is no valid results
    file is refused in one line."""
    doc = load_results_file(pilot)
    problems = validate_results(doc)
    if problems:
        raise ValueError(f"--pilot {pilot}: not a valid results file: {problems[0]}")
    shown = headline_entries([e for e in doc.get("scores") or [] if e.get("suite") in images])
    if not shown:
        return [f"the pilot {pilot} scored none of these suites"]
    simulated, why = _simulated(doc, chosen, sorted({e["suite"] for e in shown})) if chosen is not None else ({}, None)
    lines = []
    for e in shown:
        name = f"{get_metadata(e['name']).display_name} ({', '.join(str(x) for x in (e['suite'], e['subset']) if x)})"
        r = _simulated_row(simulated, e)
        how = "simulated from the pilot's labels"
        if r is None:
            (r,) = planned_mdd({**doc, "scores": [e]}, images)
            how = "scaled from the pilot's interval" + (f"; its labels cannot be simulated: {why}" if why else "")
        if "mdd" in r:
            lines.append(f"{name}: {fmt_number(r['mdd'], 3)} (pilot: {r['pilot_images']} images, here "
                         f"{r['planned_images']}; {how})")
        else:
            lines.append(f"{name}: cannot say, {r['reason']}")
    return lines + ["(power 0.8 at alpha 0.05 for one test, between two audits of this size whose images are drawn "
                    "independently: pairing by probe and seed lowers it, Holm's correction over many scores raises "
                    "it; `t2ibench compare --detect` gives both)"]


def check_stage_inputs(run_dir: str | Path, stage: str) -> None:
    """One line naming the command to run first when ``stage`` (annotate / score / report)
    finds the stage before unfinished in ``run_dir``, or a task folder the run used missing here."""
    run_dir = Path(run_dir)
    missing = missing_task_folder(run_dir)  # before its suites and scores read as unknown
    if missing:
        raise StageOrderError(missing)
    if stage in ("annotate", "score", "report") and not (run_dir / rf.MANIFEST_FILE).is_file():
        raise StageOrderError(f"{run_dir} has no generated images yet: run `t2ibench run MODEL --out {run_dir}` "
                              "first")
    if stage == "score" and not _annotation_finished(run_dir):
        damaged = _timings_problem(run_dir)
        if damaged is None and label_files(run_dir):  # labels there, the record that annotation finished gone
            damaged = timings_document(run_dir)[1] or f"no {ANNOTATE_TOTAL!r} entry"
        if damaged:  # not "has not been annotated": the record of it is what is broken
            raise StageOrderError(f"{run_dir / rf.TIMINGS_FILE} is damaged ({damaged}), so it cannot say whether "
                                  f"annotation finished: run `t2ibench annotate {run_dir}` (it records it without "
                                  "labelling again what is labelled), then score")
        raise StageOrderError(f"{run_dir} has not been annotated: run `t2ibench annotate {run_dir}` first")
    if stage == "report" and not (run_dir / RESULTS_FILE).is_file():
        raise StageOrderError(f"{run_dir} has not been scored: run `t2ibench score {run_dir}` first")
    if stage == "report":
        check_results_file(run_dir)


def check_run_config_format(run_dir: str | Path) -> None:
    """Refuse a run folder whose run_config.json this version did not write (``format`` other
    than :data:`run_folder.CONFIG_FORMAT`): its files may mean something else."""
    config = rf.read_run_config(run_dir)
    if config is None:
        raise StageOrderError(f"{run_dir} is not a run folder (no {rf.CONFIG_FILE}); make one with `t2ibench run`")
    found = config.get("format") if isinstance(config, dict) else None
    if type(found) is not int or found != rf.CONFIG_FORMAT:
        raise StageOrderError(f"{Path(run_dir) / rf.CONFIG_FILE}: format {found!r} is not supported (this t2ibench "
                              f"reads format {rf.CONFIG_FORMAT}); rerun `t2ibench run` into a new folder")


def check_results_file(run_dir: str | Path) -> None:
    """Refuse a results.json that the schema refuses (version, required fields such as ``ci``,
    NaN): the report shows only results that `t2ibench validate` could accept."""
    path = Path(run_dir) / RESULTS_FILE
    try:
        problems = validate_results(load_results_file(path))
    except UnreadableResults as exc:
        problems = [exc.reason]
    if problems:
        more = f" (and {len(problems) - 1} more: `t2ibench validate {path}` lists them)" if len(problems) > 1 else ""
        raise StageOrderError(f"{path} is not valid results: {problems[0]}{more}; rerun `t2ibench score {run_dir}`")


def _timings_problem(run_dir: Path) -> str | None:
    """Why timings.json cannot be read as a JSON object; None when it can (or is absent)."""
    doc, why = timings_document(run_dir)
    return None if doc is not None or why == "missing" else why


def _annotation_finished(run_dir: Path) -> bool:
    """The annotate stage records its total when it finishes (timings.json ``annotate/total``)."""
    return annotate_record(run_dir) is not None
