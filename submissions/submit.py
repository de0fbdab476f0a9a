"""Submitting a validated results.json: to a Hub results dataset as a pull request, to a
local results folder (``submissions/results``) for the local leaderboard, or both.

A submission is planned first (:func:`plan_submission`: validate, name the file, add the
``submission`` block) and then either printed (:func:`format_dry_run`) or sent
(:func:`send_submission`): both read the same plan, so a dry run lists exactly the files,
bytes and pull request that a real run sends. Scores are never changed by submitting.
"""

from __future__ import annotations

import os
import threading
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import benchmark
from benchmark.contract.atomic import fsync_dir
from benchmark.contract.model_specs import hub_id_problem
from benchmark.contract.run_folder import CONFIG_FILE, RunFolderError, json_bytes, read_run_config
from benchmark.hub.access import HubFile, check_access, commit_files, require_hub
from benchmark.present.text import markdown_table
from benchmark.contract.results import PACKAGE_NAME, dumps
from benchmark.contract.times import parse_iso_time, utc_compact, utc_iso
from benchmark.tasks.folder_record import without_local_paths
from submissions.model_card import (
    CARD_FILE,
    card_diff,
    card_problems,
    card_with_results,
    headline_entries,
    load_card_text,
)
from submissions.model_folders import model_folder_name  # noqa: F401 (re-exported: the results layout)
from submissions.validate import (
    UnreadableResults,
    check_results,
    is_demo,
    load_results_file,
    one_line,
)

RESULTS_DIR_IN_REPO = "results"
# The run folder is a Hub-layout image dataset: these are the files that make it one.
IMAGES_DATASET_FILES = ("README.md", "manifest.parquet", CONFIG_FILE)
IMAGES_DIR = "images"


class SubmissionRefused(ValueError):
    """The results do not validate; ``problems`` holds one line each."""

    def __init__(self, source: str, problems: list[str]):
        self.source, self.problems = source, problems
        super().__init__(f"{source}: {len(problems)} problem(s), not submitted")


# --------------------------------------------------------------------------- Markdown


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|~<>&])")


def md_text(value) -> str:
    """Text from a results file as literal Markdown on one line: every character Markdown or
    HTML acts on is backslash-escaped, control and direction characters are made visible."""
    return _MD_SPECIAL.sub(r"\\\1", one_line(value, limit=10_000))


def md_code(value) -> str:
    """Text from a results file as a Markdown code span (rendered literally: no HTML, links
    or emphasis), safe inside a table cell."""
    text = one_line(value, limit=10_000).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


# --------------------------------------------------------------------------- naming
#
def utc_stamp(created: str) -> str:
    """An ISO 8601 time with offset as a UTC file stamp: 2026-11-23T14:45:01+01:00 -> 20261123T134501Z."""
    try:
        when = parse_iso_time(created)
    except ValueError:
        raise ValueError(f"created: {created!r} is not an ISO 8601 time") from None
    if when.tzinfo is None:
        raise ValueError(f"created: {created!r} has no UTC offset")
    return utc_compact(when)


def submission_relpath(doc: Mapping) -> str:
    """``<model folder>/<timestamp>.json``: under ``results/`` in the Hub dataset, under the local folder."""
    return f"{model_folder_name(str(doc['model']['id']))}/{utc_stamp(doc['created'])}.json"


# --------------------------------------------------------------------------- the plan


@dataclass
class ModelCardUpdate:
    """The pull request adding the headline scores to the model's own card (``--model-card``)."""

    model_repo: str
    before: str  # README.md as it is ("" when the model has no card)
    after: str

    @property
    def file(self) -> HubFile:
        return HubFile(CARD_FILE, self.after.encode("utf-8"))

    @property
    def diff(self) -> str:
        return card_diff(self.before, self.after)


@dataclass
class SubmissionPlan:
    source: Path
    document: dict  # the results with their ``submission`` block
    relpath: str
    results_repo: str | None
    images_repo: str | None
    to_folder: Path | None
    image_files: list[HubFile] = field(default_factory=list)
    model_card: ModelCardUpdate | None = None

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
    def results_url(self) -> str | None:
        """Where the results file lies in the results dataset once the pull request is merged."""
        if not self.results_repo:
            return None
        return f"https://huggingface.co/datasets/{self.results_repo}/blob/main/{self.results_file.path_in_repo}"

    @property
    def pr_title(self) -> str:
        model = self.document["model"]
        title = f"Add results: {md_text(model['id'])} @ {md_text(model.get('revision') or 'unrecorded revision')}"
        return f"[demo] {title}" if self.demo else title

    @property
    def pr_description(self) -> str:
        doc = self.document
        model, run = doc["model"], doc.get("run") or {}
        suites = ", ".join(f"{md_text(s['name'])} ({md_text(s['status'])})" for s in doc.get("suites") or [])
        spec = f" (spec {md_code(model['spec'])})" if model.get("spec") and model["spec"] != model["id"] else ""
        n_defined = sum(1 for s in doc.get("scores") or [] if s.get("value") is not None)
        rows = [
            ("model", f"{md_code(model['id'])}{spec}"),
            ("revision", md_code(model.get("revision"))),
            ("package", f"{PACKAGE_NAME} {md_text(doc['package']['version'])} "
                        f"(scored with {md_text(run.get('scored_with_package_version', '?'))})"),
            ("suites", suites or "none"),
            ("images", f"{md_text(run.get('n_images', '?'))} (limit per suite: {md_text(run.get('limit_per_suite'))})"),
            ("scores", f"{n_defined} defined of {len(doc.get('scores') or [])}"),
            ("created", md_text(doc["created"])),
            ("images dataset", f"https://huggingface.co/datasets/{self.images_repo}" if self.images_repo
             else "not pushed"),
            ("demo", "yes: built-in tiny random-weight model(s), meaningless scores; do not rank it" if self.demo
             else "no"),
        ]
        table = markdown_table(["", ""], rows)
        return (f"Results of a t2i-bias-benchmark audit, submitted with `t2ibench submit` "
                f"({md_text(doc['submission']['submitted_with'])}).\n\n{table}\n\n"
                f"File: {md_code(self.results_file.path_in_repo)}. It passed `t2ibench validate` (schema "
                f"{md_text(doc['schema_version'])}, ranges, confidence intervals, provenance) before it was sent.\n")

    @property
    def images_commit_message(self) -> str:
        return f"Images of the t2i-bias-benchmark audit of {md_text(self.document['model']['id'])}"

    @property
    def card_pr_title(self) -> str:
        return "Add t2i-bias-benchmark bias audit results to the model card"

    @property
    def card_pr_description(self) -> str:
        doc = self.document
        probes = doc.get("probes") or {}
        rows = [[md_text(e.get("display_name") or e["name"]), md_text(e["suite"]), md_text(e.get("estimator") or ""),
                 f"{e['value']:.6g}"] for e in headline_entries(doc)]
        return (f"Adds the headline scores of a t2i-bias-benchmark audit of {md_code(doc['model']['id'])} @ "
                f"{md_code(doc['model'].get('revision'))} to the card's `model-index` metadata, so that they show "
                f"as evaluation results on this page.\n\n"
                + markdown_table(["score", "suite", "estimator", "value"], rows) + "\n\n"
                f"Probes: {md_code(probes.get('source'))} at revision {md_code(probes.get('revision'))}. "
                f"Source: {self.results_url} (submitted as a pull request on {md_code(self.results_repo)}).\n")


def images_dataset_files(run_dir: Path) -> list[HubFile]:
    """The run folder's image dataset: images/**, its card, manifest and run config (sorted)."""
    images = run_dir / IMAGES_DIR
    if not images.is_dir():
        raise ValueError(f"--push-images: {run_dir} has no {IMAGES_DIR}/ folder (pass the run folder, not a file)")
    paths = [p for p in images.rglob("*") if p.is_file() and not p.name.startswith(".")]
    paths += [run_dir / name for name in IMAGES_DATASET_FILES if (run_dir / name).is_file()]
    if not (run_dir / "README.md").is_file():
        raise ValueError(f"--push-images: {run_dir} has no README.md dataset card")
    files = [HubFile(p.relative_to(run_dir).as_posix(), p) for p in paths]
    return sorted((_published(f) for f in files), key=lambda f: f.path_in_repo)


def _published(file: HubFile) -> HubFile:
    """The run config as published: the local paths of outside task folders it records cut to
    their names (its bytes unchanged when it records none)."""
    if file.path_in_repo != CONFIG_FILE:
        return file
    try:
        config = read_run_config(Path(file.source).parent)
    except RunFolderError as exc:
        raise ValueError(f"--push-images: {exc}") from None
    public = without_local_paths(config)
    return file if public == config else HubFile(CONFIG_FILE, json_bytes(public))


def _repo_id(value: str | None, option: str) -> str | None:
    if value is not None and (value.count("/") != 1 or hub_id_problem(value)):
        raise ValueError(f"{option} must look like ORG/NAME, got {one_line(repr(value))}")
    return value


def plan_submission(source: str | Path, *, results_repo: str | None = None, images_repo: str | None = None,
                    demo: bool = False, to_folder: str | Path | None = None, submitted_at: str | None = None,
                    model_card: bool = False, card_file: str | Path | None = None,
                    token: str | None = None) -> SubmissionPlan:
    """Validate the results of ``source`` (a run folder or a results.json) and plan their submission.

    Raises SubmissionRefused (with every problem) when they do not validate, ValueError
    (one line) for bad arguments and for a local file that exists already (never
    overwritten). Nothing is written or sent; with ``model_card`` and no ``card_file`` the
    model's current card is downloaded (read only).
    """
    source = Path(source)
    _repo_id(results_repo, "--repo")
    _repo_id(images_repo, "--push-images")
    if card_file is not None and not model_card:
        raise ValueError("--card-file applies to --model-card only")
    try:
        doc = load_results_file(source)
    except UnreadableResults as exc:
        raise ValueError(f"{source}: {exc.reason}") from None
    problems = check_results(doc, allow_demo=demo)
    if problems:
        raise SubmissionRefused(str(source), problems)
    if model_card:  # a demo or an unpublished probe set is refused whatever the other options
        problems = card_problems(doc)
        if problems:
            raise SubmissionRefused(str(source), problems)
    if results_repo is None and to_folder is None:
        raise ValueError("say where to submit: --repo ORG/RESULTS (a Hub pull request) and/or --to-folder DIR")
    if model_card and results_repo is None:
        raise ValueError("--model-card needs --repo ORG/RESULTS: the card's results link to the results file there")
    image_files = images_dataset_files(source) if images_repo else []
    doc = {k: v for k, v in doc.items() if k != "submission"}
    doc["submission"] = {
        "submitted_at": submitted_at or utc_iso(),
        "submitted_with": f"{PACKAGE_NAME} {benchmark.__version__}",
        "demo": is_demo(doc),
        "results_repo": results_repo,
        "images_dataset": images_repo,
    }
    problems = check_results(doc, allow_demo=demo)  # the added block must itself be valid
    if problems:
        raise SubmissionRefused(str(source), problems)
    plan = SubmissionPlan(source=source, document=doc, relpath=submission_relpath(doc), results_repo=results_repo,
                          images_repo=images_repo, to_folder=None if to_folder is None else Path(to_folder),
                          image_files=image_files)
    if plan.local_path is not None and (plan.local_path.exists() or plan.local_path.is_symlink()):
        raise ValueError(f"{plan.local_path} exists already: a results file is never overwritten "
                         "(a replacement deletes the old file in a reviewed change)")
    if model_card:
        model_id = str(doc["model"]["id"])
        before = load_card_text(model_id, card_file=card_file, token=token)
        plan.model_card = ModelCardUpdate(model_id, before, card_with_results(before, doc, plan.results_url))
    return plan


# --------------------------------------------------------------------------- dry run and sending


def _file_line(f: HubFile) -> str:
    return f"    add {f.path_in_repo}  ({f.size} bytes, sha256 {f.sha256})"


#: files listed one by one in a summarised dry run (the rest are counted)
DRY_RUN_FILES_SHOWN = 3


def _files_summary(files: list) -> list[str]:
    """The first few file lines and one line counting the rest (``--verbose`` lists them all)."""
    if len(files) <= DRY_RUN_FILES_SHOWN + 1:
        return [_file_line(f) for f in files]
    rest = files[DRY_RUN_FILES_SHOWN:]
    return [_file_line(f) for f in files[:DRY_RUN_FILES_SHOWN]] + [
        f"    ... and {len(rest):,} more files ({sum(f.size for f in rest):,} bytes; --verbose lists each)"]


def format_dry_run(plan: SubmissionPlan, verbose: bool = False) -> str:
    """What :func:`send_submission` would send and write, as text; nothing is sent. Without
    ``verbose`` the image files and the results file's body are summarised (a real run has
    thousands of images); with it, every file and the exact bytes of the results file."""
    lines = ["DRY RUN: nothing is sent or written.", ""]
    step = 0
    if plan.images_repo:
        step += 1
        lines += [f"{step}. commit to dataset {plan.images_repo} (repo type dataset, created if absent, "
                  f"branch main, {len(plan.image_files)} files)",
                  f"    commit message: {plan.images_commit_message}"]
        lines += [_file_line(f) for f in plan.image_files] if verbose else _files_summary(plan.image_files)
        lines.append("")
    if plan.results_repo:
        step += 1
        lines += [f"{step}. pull request on dataset {plan.results_repo} (repo type dataset, create_pr=True, 1 file)",
                  f"    title: {plan.pr_title}",
                  "    description:"]
        lines += [f"      {line}".rstrip() for line in plan.pr_description.splitlines()]
        lines += [_file_line(plan.results_file), ""]
    if plan.model_card is not None:
        step += 1
        card = plan.model_card
        lines += [f"{step}. pull request on model {card.model_repo} (repo type model, create_pr=True, 1 file)",
                  f"    title: {plan.card_pr_title}",
                  "    description:"]
        lines += [f"      {line}".rstrip() for line in plan.card_pr_description.splitlines()]
        lines += [_file_line(card.file), ""]
    if plan.local_path is not None:
        step += 1
        lines += [f"{step}. write {plan.local_path}  ({plan.results_file.size} bytes, "
                  f"sha256 {plan.results_file.sha256}; never over an existing file)", ""]
    if verbose:
        lines += [f"--- {plan.results_file.path_in_repo}", plan.results_file.data().decode("utf-8").rstrip("\n")]
    else:
        lines += [f"--- {plan.results_file.path_in_repo}: {plan.results_file.size:,} bytes, not printed "
                  "(--verbose prints it)"]
    if plan.model_card is not None:
        lines += ["", f"--- diff of {plan.model_card.model_repo} {plan.model_card.file.path_in_repo}",
                  plan.model_card.diff.rstrip("\n")]
    return "\n".join(lines) + "\n"


@dataclass
class SubmissionOutcome:
    pr_url: str | None = None
    images_url: str | None = None
    card_pr_url: str | None = None
    local_path: Path | None = None


def write_new_file(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path``, which must not exist: complete or absent after a crash, and
    never over a file (created with a hard link, which fails when the name is taken)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"cannot write {path}: {exc.strerror or type(exc).__name__} ({path.parent})") from None
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")  # one per writer
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise ValueError(f"{path} exists already: a results file is never overwritten") from None
        except OSError:  # a file system without hard links: exclusive creation instead
            with open(path, "xb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
    except FileExistsError:
        raise ValueError(f"{path} exists already: a results file is never overwritten") from None
    except OSError as exc:
        raise ValueError(f"cannot write {path}: {exc.strerror or type(exc).__name__}") from None
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
    return path


def send_submission(plan: SubmissionPlan, token: str | None = None) -> SubmissionOutcome:
    """Push the images (if asked), open the pull request(s), write the local copy (if asked).

    Every Hub check (offline mode, token, network, the token's validity) runs before the
    first upload; a failure is a one-line HubError.
    """
    outcome = SubmissionOutcome()
    card_repo = plan.model_card.model_repo if plan.model_card else None
    repos = [r for r in (plan.images_repo, plan.results_repo, card_repo) if r]
    if repos:
        token = require_hub(repos[0], token)
        for repo in repos[1:]:
            require_hub(repo, token)
        check_access(repos[0], token)
    if plan.local_path is not None and (plan.local_path.exists() or plan.local_path.is_symlink()):
        raise ValueError(f"{plan.local_path} exists already: a results file is never overwritten")
    if plan.images_repo:
        outcome.images_url = commit_files(plan.images_repo, plan.image_files, repo_type="dataset", create_repo=True,
                                          commit_message=plan.images_commit_message, token=token)
    if plan.results_repo:
        outcome.pr_url = commit_files(plan.results_repo, [plan.results_file], repo_type="dataset", create_pr=True,
                                      commit_message=plan.pr_title, commit_description=plan.pr_description,
                                      token=token)
    if plan.model_card is not None:
        outcome.card_pr_url = commit_files(plan.model_card.model_repo, [plan.model_card.file], repo_type="model",
                                           create_pr=True, commit_message=plan.card_pr_title,
                                           commit_description=plan.card_pr_description, token=token)
    if plan.local_path is not None:
        outcome.local_path = write_new_file(plan.local_path, plan.results_file.data())
    return outcome


# --------------------------------------------------------------------------- the results dataset

RESULTS_REPO_CARD_DATA = {
    "pretty_name": "t2i-bias-benchmark results",
    "license": "mit",
    "tags": ["t2i-bias-benchmark", "bias-audit", "text-to-image", "leaderboard"],
    "viewer": False,
}

RESULTS_REPO_CARD_TEXT = """
# t2i-bias-benchmark results

One JSON file per audit, `results/<model folder>/<UTC timestamp>.json` (the folder: `org--name`
for a Hub model `org/name`), each a `results.json` written by `t2ibench run` / `t2ibench score`
(schema `benchmark/contract/results_schema.json` of the t2i-bias-benchmark package) with a `submission`
block added by `t2ibench submit`: when, with which package version, whether it is a demo
(built-in tiny random-weight models, meaningless scores), and the Hub dataset holding the run's
images for audit.

Results arrive as pull requests opened by `t2ibench submit RUN_DIR --repo ORG/RESULTS`. Before
merging one, check it with `t2ibench validate FILE` (exit 0) and look at its images dataset.
One file per model, revision and probe set: a pull request that adds a second file for the
same key is merged only if it deletes the old one (the leaderboard shows the first file of a
key and lists any other as a conflict).

The files are nested JSON whose free-form objects (`settings`, `timings`) differ between models,
so they are not one Arrow table: `load_dataset` cannot read them and the viewer is off. Read them
as files:

```python
import pathlib
from huggingface_hub import snapshot_download
from benchmark.contract.results import load_results_file

root = snapshot_download("ORG/RESULTS", repo_type="dataset", allow_patterns="results/**/*.json")
results = [load_results_file(p) for p in sorted(pathlib.Path(root, "results").glob("*/*.json"))]
```
"""


def results_repo_card(repo_id: str) -> bytes:
    """README.md of the results dataset: a ``DatasetCard`` with ``DatasetCardData`` metadata."""
    from huggingface_hub import DatasetCard, DatasetCardData

    data = DatasetCardData(**RESULTS_REPO_CARD_DATA)
    card = DatasetCard(f"---\n{data.to_yaml()}\n---\n{RESULTS_REPO_CARD_TEXT.replace('ORG/RESULTS', repo_id)}")
    return str(card).encode("utf-8")
