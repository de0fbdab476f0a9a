"""Submitting a validated results.json: to a Hub results dataset as a pull request, to a
local results folder (``submissions/results``) for the local leaderboard, or both.

A submission is planned first (:func:`plan_submission`: validate, name the file, add the
``submission`` block) and then either printed (:func:`format_dry_run`) or sent
(:func:`send_submission`): both read the same plan, so a dry run lists exactly the files,
bytes and pull request that a real run sends. Scores are never changed by submitting.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import benchmark
from benchmark.atomic import write_bytes_atomic
from benchmark.hub import HubFile, check_access, commit_files, require_hub
from benchmark.results import PACKAGE_NAME, dumps
from submissions.validate import (
    UnreadableResults,
    check_results,
    is_demo,
    load_results_file,
)

RESULTS_DIR_IN_REPO = "results"
# The run folder is a Hub-layout image dataset: these are the files that make it one.
IMAGES_DATASET_FILES = ("README.md", "manifest.parquet", "run_config.json")
IMAGES_DIR = "images"


class SubmissionRefused(ValueError):
    """The results do not validate; ``problems`` holds one line each."""

    def __init__(self, source: str, problems: list[str]):
        self.source, self.problems = source, problems
        super().__init__(f"{source}: {len(problems)} problem(s), not submitted")


# --------------------------------------------------------------------------- naming


def _safe(text: str) -> str:
    # Characters a Hub path and every file system accept; "__" is kept for the org separator.
    out = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip(".-")
    return re.sub(r"_{2,}", "_", out) or "unnamed"


def model_folder_name(model_id: str) -> str:
    """``<org>__<model>`` for a model id: Hub ``org/name``, ``builtin:x`` (org ``builtin``),
    ``python:module:function`` (org ``python``), or a local folder (org ``local``)."""
    if not model_id:
        raise ValueError("the results name no model id")
    for prefix in ("builtin", "python"):
        if model_id.startswith(prefix + ":"):
            return f"{prefix}__{_safe(model_id[len(prefix) + 1:].replace(':', '.'))}"
    parts = model_id.split("/")
    if len(parts) == 2 and all(parts) and not model_id.startswith("."):
        return f"{_safe(parts[0])}__{_safe(parts[1])}"
    return f"local__{_safe(Path(model_id.rstrip('/')).name)}"


def utc_stamp(created: str) -> str:
    """An ISO 8601 time with offset as a UTC file stamp: 2026-11-23T14:45:01+01:00 -> 20261123T134501Z."""
    try:
        when = _dt.datetime.fromisoformat(created)
    except (TypeError, ValueError):
        raise ValueError(f"created: {created!r} is not an ISO 8601 time") from None
    if when.tzinfo is None:
        raise ValueError(f"created: {created!r} has no UTC offset")
    return when.astimezone(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def submission_relpath(doc: Mapping) -> str:
    """``<org>__<model>/<timestamp>.json``: under ``results/`` in the Hub dataset, under the local folder."""
    return f"{model_folder_name(str(doc['model']['id']))}/{utc_stamp(doc['created'])}.json"


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


# --------------------------------------------------------------------------- the plan


@dataclass
class SubmissionPlan:
    source: Path
    document: dict  # the results with their ``submission`` block
    relpath: str
    results_repo: str | None
    images_repo: str | None
    to_folder: Path | None
    image_files: list[HubFile] = field(default_factory=list)

    @property
    def demo(self) -> bool:
        return bool(self.document["submission"]["demo"])

    @property
    def results_file(self) -> HubFile:
        return HubFile(f"{RESULTS_DIR_IN_REPO}/{self.relpath}", dumps(self.document).encode("utf-8"))

    @property
    def local_path(self) -> Path | None:
        return None if self.to_folder is None else self.to_folder / self.relpath

    @property
    def pr_title(self) -> str:
        model = self.document["model"]
        title = f"Add results: {model['id']} @ {model.get('revision') or 'unrecorded revision'}"
        return f"[demo] {title}" if self.demo else title

    @property
    def pr_description(self) -> str:
        doc = self.document
        model, run = doc["model"], doc.get("run") or {}
        suites = ", ".join(f"{s['name']} ({s['status']})" for s in doc.get("suites") or [])
        spec = f" (spec `{model['spec']}`)" if model.get("spec") and model["spec"] != model["id"] else ""
        n_defined = sum(1 for s in doc.get("scores") or [] if s.get("value") is not None)
        rows = [
            ("model", f"`{model['id']}`{spec}"),
            ("revision", f"`{model.get('revision')}`"),
            ("package", f"{PACKAGE_NAME} {doc['package']['version']} "
                        f"(scored with {run.get('scored_with_package_version', '?')})"),
            ("suites", suites or "none"),
            ("images", f"{run.get('n_images', '?')} (limit per suite: {run.get('limit_per_suite')})"),
            ("scores", f"{n_defined} defined of {len(doc.get('scores') or [])}"),
            ("created", doc["created"]),
            ("images dataset", f"https://huggingface.co/datasets/{self.images_repo}" if self.images_repo
             else "not pushed"),
            ("demo", "yes: built-in tiny random-weight model, meaningless scores; do not rank it" if self.demo
             else "no"),
        ]
        table = "\n".join(["| | |", "| --- | --- |"] + [f"| {k} | {v} |" for k, v in rows])
        return (f"Results of a t2i-bias-benchmark audit, submitted with `t2ibench submit` "
                f"({doc['submission']['submitted_with']}).\n\n{table}\n\n"
                f"File: `{self.results_file.path_in_repo}`. It passed `t2ibench validate` (schema "
                f"{doc['schema_version']}, ranges, confidence intervals) before it was sent.\n")

    @property
    def images_commit_message(self) -> str:
        return f"Images of the t2i-bias-benchmark audit of {self.document['model']['id']}"


def images_dataset_files(run_dir: Path) -> list[HubFile]:
    """The run folder's image dataset: images/**, its card, manifest and run config (sorted)."""
    images = run_dir / IMAGES_DIR
    if not images.is_dir():
        raise ValueError(f"--push-images: {run_dir} has no {IMAGES_DIR}/ folder (pass the run folder, not a file)")
    paths = [p for p in images.rglob("*") if p.is_file() and not p.name.startswith(".")]
    paths += [run_dir / name for name in IMAGES_DATASET_FILES if (run_dir / name).is_file()]
    if not (run_dir / "README.md").is_file():
        raise ValueError(f"--push-images: {run_dir} has no README.md dataset card")
    return sorted((HubFile(p.relative_to(run_dir).as_posix(), p) for p in paths), key=lambda f: f.path_in_repo)


def _repo_id(value: str | None, option: str) -> str | None:
    if value is not None and (value.count("/") != 1 or not all(value.split("/"))):
        raise ValueError(f"{option} must look like ORG/NAME, got {value!r}")
    return value


def plan_submission(source: str | Path, *, results_repo: str | None = None, images_repo: str | None = None,
                    demo: bool = False, to_folder: str | Path | None = None,
                    submitted_at: str | None = None) -> SubmissionPlan:
    """Validate the results of ``source`` (a run folder or a results.json) and plan their submission.

    Raises SubmissionRefused (with every problem) when they do not validate, ValueError
    for bad arguments. Nothing is written or sent.
    """
    source = Path(source)
    _repo_id(results_repo, "--repo")
    _repo_id(images_repo, "--push-images")
    if results_repo is None and to_folder is None:
        raise ValueError("say where to submit: --repo ORG/RESULTS (a Hub pull request) and/or --to-folder DIR")
    try:
        doc = load_results_file(source)
    except UnreadableResults as exc:
        raise ValueError(f"{source}: {exc}") from None
    problems = check_results(doc, allow_demo=demo)
    if problems:
        raise SubmissionRefused(str(source), problems)
    image_files = images_dataset_files(source) if images_repo else []
    doc = {k: v for k, v in doc.items() if k != "submission"}
    doc["submission"] = {
        "submitted_at": submitted_at or utc_now(),
        "submitted_with": f"{PACKAGE_NAME} {benchmark.__version__}",
        "demo": is_demo(doc),
        "results_repo": results_repo,
        "images_dataset": images_repo,
    }
    problems = check_results(doc, allow_demo=demo)  # the added block must itself be valid
    if problems:
        raise SubmissionRefused(str(source), problems)
    return SubmissionPlan(source=source, document=doc, relpath=submission_relpath(doc), results_repo=results_repo,
                          images_repo=images_repo, to_folder=None if to_folder is None else Path(to_folder),
                          image_files=image_files)


# --------------------------------------------------------------------------- dry run and sending


def _file_line(f: HubFile) -> str:
    return f"    add {f.path_in_repo}  ({f.size} bytes, sha256 {f.sha256})"


def format_dry_run(plan: SubmissionPlan) -> str:
    """Exactly what :func:`send_submission` would send and write, as text; nothing is sent."""
    lines = ["DRY RUN: nothing is sent or written.", ""]
    step = 0
    if plan.images_repo:
        step += 1
        lines += [f"{step}. commit to dataset {plan.images_repo} (repo type dataset, created if absent, "
                  f"branch main, {len(plan.image_files)} files)",
                  f"    commit message: {plan.images_commit_message}"]
        lines += [_file_line(f) for f in plan.image_files]
        lines.append("")
    if plan.results_repo:
        step += 1
        lines += [f"{step}. pull request on dataset {plan.results_repo} (repo type dataset, create_pr=True, 1 file)",
                  f"    title: {plan.pr_title}",
                  "    description:"]
        lines += [f"      {line}".rstrip() for line in plan.pr_description.splitlines()]
        lines += [_file_line(plan.results_file), ""]
    if plan.local_path is not None:
        step += 1
        lines += [f"{step}. write {plan.local_path}  ({plan.results_file.size} bytes, "
                  f"sha256 {plan.results_file.sha256})", ""]
    lines += [f"--- {plan.results_file.path_in_repo}", plan.results_file.data().decode("utf-8").rstrip("\n")]
    return "\n".join(lines) + "\n"


@dataclass
class SubmissionOutcome:
    pr_url: str | None = None
    images_url: str | None = None
    local_path: Path | None = None


def send_submission(plan: SubmissionPlan, token: str | None = None) -> SubmissionOutcome:
    """Push the images (if asked), open the pull request, write the local copy (if asked).

    Every Hub check (offline mode, token, network, the token's validity) runs before the
    first upload; a failure is a one-line HubError.
    """
    outcome = SubmissionOutcome()
    repos = [r for r in (plan.images_repo, plan.results_repo) if r]
    if repos:
        token = require_hub(repos[0], token)
        for repo in repos[1:]:
            require_hub(repo, token)
        check_access(repos[0], token)
    if plan.images_repo:
        outcome.images_url = commit_files(plan.images_repo, plan.image_files, repo_type="dataset", create_repo=True,
                                          commit_message=plan.images_commit_message, token=token)
    if plan.results_repo:
        outcome.pr_url = commit_files(plan.results_repo, [plan.results_file], repo_type="dataset", create_pr=True,
                                      commit_message=plan.pr_title, commit_description=plan.pr_description,
                                      token=token)
    if plan.local_path is not None:
        outcome.local_path = write_bytes_atomic(plan.local_path, plan.results_file.data())
    return outcome


# --------------------------------------------------------------------------- the results dataset

RESULTS_REPO_CARD = """---
pretty_name: t2i-bias-benchmark results
license: mit
tags:
- t2i-bias-benchmark
- bias-audit
- text-to-image
- leaderboard
viewer: false
---

# t2i-bias-benchmark results

One JSON file per audit, `results/<org>__<model>/<UTC timestamp>.json`, each a `results.json`
written by `t2ibench run` / `t2ibench score` (schema `benchmark/results_schema.json` of the
t2i-bias-benchmark package) with a `submission` block added by `t2ibench submit`: when, with
which package version, whether it is a demo (built-in tiny random-weight model, meaningless scores), and the Hub dataset holding the
run's images for audit.

Results arrive as pull requests opened by `t2ibench submit RUN_DIR --repo ORG/RESULTS`. Before
merging one, check it with `t2ibench validate FILE` (exit 0) and look at its images dataset.

The files are nested JSON whose free-form objects (`settings`, `timings`) differ between models,
so they are not one Arrow table: `load_dataset` cannot read them and the viewer is off. Read them
as files:

```python
import json, pathlib
from huggingface_hub import snapshot_download

root = snapshot_download("ORG/RESULTS", repo_type="dataset", allow_patterns="results/**/*.json")
results = [json.loads(p.read_text()) for p in sorted(pathlib.Path(root, "results").glob("*/*.json"))]
```
"""


def results_repo_card(repo_id: str) -> bytes:
    return RESULTS_REPO_CARD.replace("ORG/RESULTS", repo_id).encode("utf-8")
