"""Where a request's results are posted, and finding them again.

A worker's results file is named by its request, ``<model folder>/request-<commit>.json``
(the layout of ``t2ibench submit --to-folder``; under ``results/`` in a Hub results
dataset), not by a time stamp: two requests (two commits of one model finishing in the same
second) never share a name, and a worker that takes over a request whose first worker was
killed after posting finds those results and marks the request FINISHED instead of auditing
and posting a second time. A request's attempts share the name: at most one results file
per request.
"""

from __future__ import annotations

from typing import Any

from benchmark.hub.access import hub_errors
from submissions.requests import WORKER_PREFIX, RequestRecord
from submissions.model_folders import model_folder_name
from submissions.submit import RESULTS_DIR_IN_REPO
from submissions.validate import UnreadableResults, load_results_file

RESULTS_PREFIX = "request-"


class ForeignResults(RuntimeError):
    """A file under the request's results name that is not this request's worker results."""


def results_relpath(record: RequestRecord) -> str:
    """``<model folder>/request-<commit>[+lora-<hash>][+opts-<hash>].json`` for the request
    (relative to the results folder, or to ``results/`` in a Hub results dataset): a base model,
    the same base with LoRAs and a single file of its repo post three files."""
    return f"{model_folder_name(record.model_id)}/{RESULTS_PREFIX}{record.commit}{record.variant}.json"


def is_own_results(doc: dict, record: RequestRecord) -> bool:
    by = doc.get("evaluated_by")
    model = doc.get("model") if isinstance(doc.get("model"), dict) else {}
    return (doc.get("request_id") == record.request_id and isinstance(by, str) and by.startswith(WORKER_PREFIX)
            and model.get("id") == record.audited_model_id)


def _local_posted(record: RequestRecord, opts: Any) -> tuple[str, None] | None:
    path = opts.results_folder / results_relpath(record)
    if not (path.exists() or path.is_symlink()):
        return None
    try:
        doc = load_results_file(path)
    except UnreadableResults as exc:
        raise ForeignResults(f"{path} exists and is not readable results ({exc.reason}); a maintainer must "
                             "remove it") from None
    if not is_own_results(doc, record):
        raise ForeignResults(f"{path} exists and holds other results than this request's; a maintainer must "
                             "remove it")
    return str(path), None


def _hub_posted(record: RequestRecord, opts: Any) -> tuple[str, str] | None:
    """The results file on the results dataset's main branch, or in a pull request opened by
    this worker's own Hub user (anyone may open a pull request: another's is never trusted)."""
    from huggingface_hub import HfApi

    repo = opts.results_repo
    path = f"{RESULTS_DIR_IN_REPO}/{results_relpath(record)}"
    api = HfApi(token=opts.token)
    with hub_errors(repo, "read results from"):
        places = [("main", f"https://huggingface.co/datasets/{repo}/blob/main/{path}")]
        me = api.whoami()["name"]
        for pr in api.get_repo_discussions(repo, repo_type="dataset", discussion_type="pull_request", author=me):
            places.append((pr.git_reference, pr.url))
        for revision, url in places:
            if revision and api.file_exists(repo, path, repo_type="dataset", revision=revision):
                _check_hub_file(api, repo, path, revision, record)
                return path, url
    return None


def _check_hub_file(api, repo: str, path: str, revision: str, record: RequestRecord) -> None:
    local = api.hf_hub_download(repo, path, repo_type="dataset", revision=revision)
    try:
        own = is_own_results(load_results_file(local), record)
    except UnreadableResults:
        own = False
    if not own:
        raise ForeignResults(f"{repo}: {path} at {revision} holds other results than this request's; a "
                             "maintainer must remove it")


def find_posted_results(record: RequestRecord, opts: Any) -> tuple[str, str | None] | None:
    """(results path, PR URL) of this request's results when an earlier attempt posted them, else
    None; ForeignResults when the name is taken by a file that is not them. ``opts``: the
    worker's WorkerOptions (results_folder or results_repo, token)."""
    if opts.results_folder is not None:
        return _local_posted(record, opts)
    return _hub_posted(record, opts)
