"""The annotate stage's plan: the run's images in scope (:class:`RunImages`, their PNG files
checked to lie inside the run), the annotators the tasks of the chosen suites need
(:func:`choose_annotators`, each checked before anything loads) and, per annotator, the
label rows it still has to compute (:class:`AnnotatePlan`, made by :func:`make_plan`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from benchmark.contract import run_folder as rf
from benchmark.annotate.label_files import LABEL_FILES, LabelStore, key_part
from benchmark.annotate.registry import (
    AnnotateContext, Annotator, AnnotatorKind, WorkItem, default_annotators, is_disabled, list_annotator_kinds, model_name,
)
from benchmark.probes import list_suites
from benchmark.probes.source import configs_of_record, suite_families
from benchmark.contract.run_folder_check import image_path_error, resolves_inside
from benchmark.contract.values import flag_array
from benchmark.contract.withheld import withheld_counts
from benchmark.tasks import tasks_for_suites
from benchmark.runner.annotate_summary import AnnotationSummary


# --------------------------------------------------------------------------- images


class RunImages:
    """Probe rows of the run (manifest order) and their PNG files."""

    def __init__(self, run_dir: Path, manifest: pd.DataFrame):
        self.run_dir = run_dir
        self.df = manifest.reset_index(drop=True)
        self.rows = self.df.to_dict("records")
        self.by_id = {str(r["probe_id"]): r for r in self.rows}
        self.root = rf.images_dir(run_dir).resolve()  # every image must lie inside it

    def check_paths(self) -> None:
        """Refuse (one line) a manifest whose image paths leave the run's images/ folder, before any work."""
        for row in self.rows:
            rel = row.get("image_path")
            if rel is None or (isinstance(rel, float) and rel != rel):
                continue  # an older manifest without image_path: path() looks in the batch folder
            err = image_path_error(rel)
            if err is None and (self.run_dir / rel).exists() and not resolves_inside(self.run_dir / rel, self.root):
                err = f"image_path {rel!r} resolves outside the run's images/ folder (a symlink out)"
            if err:
                raise rf.RunFolderError(f"{self.run_dir / rf.MANIFEST_FILE}: probe {row['probe_id']!r}: {err}; "
                                        f"`t2ibench run` with the run's arguments rewrites the manifest")

    def path(self, probe_id: str) -> Path:
        row = self.by_id[probe_id]
        candidates = [self.run_dir / row[c] for c in ("image_path", "file_name")
                      if image_path_error(row.get(c)) is None]
        batch, name = row.get("batch"), row.get("file_name")
        if isinstance(batch, str) and isinstance(name, str) and "/" not in batch + name and ".." not in (batch, name):
            candidates.append(self.run_dir / rf.IMAGES_DIR / batch / name)
        for path in candidates:
            if path.is_file() and resolves_inside(path, self.root):
                return path
        raise rf.RunFolderError(f"the image of probe {probe_id!r} is missing from {self.run_dir} "
                                f"(manifest image_path {row.get('image_path')!r}); rerun generation")

    def load(self, probe_ids: Sequence[str]) -> list:
        from PIL import Image

        out = []
        for pid in probe_ids:
            path = self.path(pid)
            try:
                with Image.open(path) as im:
                    out.append(im.convert("RGB"))
            except (OSError, SyntaxError, ValueError) as exc:  # truncated or not a PNG (PIL's errors)
                raise rf.RunFolderError(f"{path} cannot be decoded ({exc}): the image of probe {pid!r} is damaged; "
                                        f"`t2ibench run` with the run's arguments generates it again") from None
        return out

    def ids_of(self, suites: Iterable[str]) -> list[str]:
        suites = set(suites)
        return [str(r["probe_id"]) for r in self.rows if r["suite"] in suites]


# --------------------------------------------------------------------------- plan


def _resolve_suites(suites: Any, present: list[str]) -> list[str]:
    if suites is None:
        return present
    if isinstance(suites, str):
        suites = [s.strip() for s in suites.split(",") if s.strip()]
    suites = list(dict.fromkeys(suites))

    known = set(list_suites()) | set(present)
    unknown = [s for s in suites if s not in known]
    if unknown:
        raise ValueError(f"unknown suite {unknown[0]!r}; known suites: {', '.join(sorted(known))}")
    absent = [s for s in suites if s not in present]
    if absent:
        raise ValueError(f"suite {absent[0]!r} has no images in this run folder (it has: {', '.join(present)})")
    return suites


@dataclass
class Work:
    """One annotator's share of the call: the images (and rows of no image) it still has to do."""

    annotator: Annotator
    store: LabelStore
    todo: list[WorkItem] = field(default_factory=list)
    extra: list[tuple] = field(default_factory=list)


@dataclass
class AnnotatePlan:
    run_dir: Path
    ctx: AnnotateContext
    images: RunImages
    stores: dict[str, LabelStore]
    work: list[Work]
    summary: AnnotationSummary
    timings: dict[str, dict] = field(default_factory=dict)
    decoded: int = 0  # PNG files decoded by this call
    scope: list[str] = field(default_factory=list)  # the suites this call labels


def annotator_options(run_config: dict, given: dict) -> dict:
    """Annotator option values: those given (None = default), the run's defaults otherwise; the
    option of a ``many`` kind becomes a list (one string or object -> one model)."""
    chosen = dict(default_annotators(run_config))
    chosen.update({k: v for k, v in given.items() if v is not None})
    for kind in list_annotator_kinds():
        value = chosen.get(kind.option)
        if kind.many and not isinstance(value, (list, tuple)):
            chosen[kind.option] = [] if value is None or is_disabled(value) else [value]
        elif kind.many:
            chosen[kind.option] = list(value)
    return chosen


@dataclass
class AnnotatorChoice:
    """One annotator kind the tasks of a scope need: the suites it serves, the option's value
    and the annotators made from it (none when the option is disabled)."""

    kind: AnnotatorKind
    suites: list[str]
    value: Any
    annotators: list[Annotator]

    @property
    def models(self) -> list[str] | str | None:
        names = [a.name for a in self.annotators]
        return names if self.kind.many else (names[0] if names else None)


def annotator_parameters(families: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Annotator kind -> {suite: the parameter its task gives the kind} for the suites of
    ``families`` (suite -> probe family): what each kind is asked to label, and how."""
    params: dict[str, dict[str, Any]] = {}
    for task, suites in tasks_for_suites(families):
        for kind_name, param in task.annotators.items():
            params.setdefault(kind_name, {}).update({s: param for s in suites})
    return params


def choose_annotators(families: dict[str, str], scope: list[str], options: dict, *,
                      check: bool = True) -> tuple[list[AnnotatorChoice], list[str]]:
    """The annotators the tasks of ``scope`` need, in annotator-kind order, each model spec
    checked (one line) before anything is loaded unless ``check`` is False (verify: what the
    label files owe, with no Hub look-up); and the suites no task annotates. Needs no image, so
    ``run`` checks them before generating."""
    params = annotator_parameters({s: families[s] for s in scope})
    covered = {s for p in params.values() for s in p}
    choices = []
    for kind in [k for k in list_annotator_kinds() if k.name in params]:
        value = options.get(kind.option)
        models = [m for m in (value if kind.many else [value]) if not is_disabled(m)]
        settings = {k: options[k] for k in kind.settings if options.get(k) is not None}
        made = []
        for m in models:
            annotator = kind.create(m, params[kind.name], **settings)
            if check:
                annotator.check()
            made.append(annotator)
        choices.append(AnnotatorChoice(kind, list(params[kind.name]), value, made))
    return choices, [s for s in scope if s not in covered]


def _annotators(families: dict[str, str], scope: list[str], options: dict, images: RunImages,
                summary: AnnotationSummary) -> list[Annotator]:
    """:func:`choose_annotators`, with disabled ones and suites no task annotates counted in
    ``summary``."""
    choices, unannotated = choose_annotators(families, scope, options)
    for s in unannotated:
        summary.unannotated_suites.append(s)
        summary.skipped[f"no annotator: {s}"] = len(images.ids_of([s]))
    out: list[Annotator] = []
    for c in choices:
        models = [m for m in (c.value if c.kind.many else [c.value]) if not is_disabled(m)]
        summary.annotators[c.kind.option] = [model_name(m) for m in models] if c.kind.many else \
            (None if not models else (c.value if isinstance(c.value, str) else model_name(c.value)))
        if not models:
            summary.skipped[f"{c.kind.name} images ({c.kind.option} disabled)"] = len(images.ids_of(c.suites))
        out.extend(c.annotators)
    return out


def make_plan(run_dir: Path, given: dict, *, suites: Any, force: bool, device: str | None,
          batch_size: int) -> AnnotatePlan:
    """Read the run, choose and check the annotators, and list what each still has to do."""
    if not (run_dir / rf.MANIFEST_FILE).is_file():
        raise rf.RunFolderError(f"{run_dir} has no {rf.MANIFEST_FILE}: run the generation stage first "
                                f"(t2ibench run ... --out {run_dir})")
    run_config = rf.read_run_config(run_dir) or {}
    manifest = rf.read_manifest(run_dir)
    if "probe_index" in manifest.columns:
        manifest = manifest.sort_values("probe_index", kind="stable")
    present = list(dict.fromkeys(manifest["suite"]))
    scope = _resolve_suites(suites, present)
    families = suite_families(run_config.get("probes"), present)
    summary = AnnotationSummary(run_dir=run_dir)
    in_scope = manifest[manifest["suite"].isin(scope)]
    nsfw = flag_array(in_scope["nsfw"]) if "nsfw" in in_scope.columns else np.zeros(len(in_scope), dtype=bool)
    if int(nsfw.sum()):  # placeholders of withheld images (refused / missing) are counted by their reason
        withheld = withheld_counts(run_dir, in_scope.loc[nsfw, "probe_id"])
        for reason, n in {**withheld, "nsfw": int(nsfw.sum()) - sum(withheld.values())}.items():
            if n:
                summary.skipped[reason] = n
    images = RunImages(run_dir, in_scope[~nsfw])
    images.check_paths()
    summary.n_images = len(images.rows)
    annotators = _annotators(families, scope, annotator_options(run_config, given), images, summary)
    ctx = AnnotateContext(run_dir, device=device, batch_size=batch_size,
                          configs=configs_of_record(run_config.get("probes")), families=families)
    stores = _stores(run_dir, annotators, manifest, scope, force)
    plan = AnnotatePlan(run_dir, ctx, images, stores, [], summary, scope=list(scope))
    for a in annotators:
        plan.work.append(_todo(a, stores[a.label_file], images, ctx))
    return plan


def _stores(run_dir: Path, annotators: list[Annotator], manifest: pd.DataFrame, scope: list[str],
            force: bool) -> dict[str, LabelStore]:
    suite_of = {str(p): s for p, s in zip(manifest["probe_id"], manifest["suite"])}
    probe_order = {str(p): i for i, p in enumerate(manifest["probe_id"])}
    scope_set = set(scope)

    def in_scope_row(row: dict) -> bool:
        pid = key_part(row.get("probe_id"))
        # rows of no image (MCAS texts) belong to the annotators running now; orphans are dropped
        return not pid or suite_of.get(pid) in scope_set or pid not in suite_of

    names = list(dict.fromkeys(a.label_file for a in annotators))
    return {n: LabelStore(run_dir, LABEL_FILES[n], in_scope_row, force, probe_order) for n in names}


def _todo(annotator: Annotator, store: LabelStore, images: RunImages, ctx: AnnotateContext) -> Work:
    work = Work(annotator, store)
    for pid in images.ids_of(annotator.suites):
        row = images.by_id[pid]
        missing = [k for k in annotator.keys(row, ctx) if store.expect(k)]
        if missing:
            work.todo.append(WorkItem(row, missing))
    work.extra = [k for k in annotator.extra_keys(ctx) if store.expect(k)]
    return work
