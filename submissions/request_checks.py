"""Checks before a request joins the queue, and writing it (``t2ibench request`` and the
leaderboard's Submit tab share these).

A request is accepted when the model exists on the Hub, is public, its revision resolves
to a commit, it is a diffusers text-to-image pipeline, the queue holds no request for that
commit that is pending, running or finished (a failed one may be submitted again), and
the submitter is within the rate limit. ``builtin:tiny-sd`` is accepted only as a demo,
for trying the path offline.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Any

from huggingface_hub import HfApi

from benchmark.contract.times import utc_iso_ms
from benchmark.hub.access import NO_CONNECTION, hub_failures
from benchmark.models.builtin_cache import BUILDER_VERSION, check_builtin_name
from benchmark.models.errors import UnknownBuiltinError
from benchmark.models.lora import parse_lora_specs
from submissions import request_store
from submissions.request_store import Conflict, RequestStore, Snapshot, StoredRecord, retry_delays
from submissions.requests import (
    FAILED,
    FINISHED,
    PENDING,
    RUNNING,
    InvalidRequest,
    RequestRecord,
    check_dtype,
    check_hub_model_id,
    check_loras,
    check_settings,
    check_submitter,
    parse_utc,
)

TEXT_TO_IMAGE = "text-to-image"
DIFFUSERS_INDEX = "model_index.json"


class RequestRefused(ValueError):
    """The request is well formed but not accepted (duplicate, rate limit, not a text-to-image
    pipeline...); the message is one line."""


@dataclass(frozen=True)
class RateLimit:
    """At most ``max_open`` pending or running requests per submitter, and ``max_per_day``
    submitted in the last 24 hours."""

    max_open: int = 3
    max_per_day: int = 10

    def __post_init__(self):
        for name in ("max_open", "max_per_day"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"rate limit {name} must be a positive integer, got {value!r}")

    def check(self, snapshot: Snapshot, submitter: str, now: _dt.datetime) -> None:
        mine = [s.record for s in snapshot.records if s.record.submitter == submitter]
        open_ = [r for r in mine if r.status in (PENDING, RUNNING)]
        if len(open_) >= self.max_open:
            raise RequestRefused(f"{submitter} has {len(open_)} requests pending or running (the limit is "
                                 f"{self.max_open}); submit again when one has finished")
        day = [r for r in mine if (now - parse_utc(r.submitted_at)).total_seconds() < 86400]
        if len(day) >= self.max_per_day:
            raise RequestRefused(f"{submitter} submitted {len(day)} requests in the last 24 hours (the limit is "
                                 f"{self.max_per_day}); try again later")


@dataclass(frozen=True)
class ResolvedModel:
    model_id: str  # canonical (as the Hub names it)
    revision: str
    commit: str
    demo: bool = False


# --------------------------------------------------------------------------- the model


def resolve_builtin(model_id: str, revision: str | None) -> ResolvedModel:
    try:
        check_builtin_name(model_id[len("builtin:"):], "text-to-image")
    except UnknownBuiltinError as exc:
        raise InvalidRequest(str(exc)) from None
    commit = f"builtin-v{BUILDER_VERSION}"
    if revision not in (None, "", commit):
        raise InvalidRequest(f"{model_id} has one revision, {commit}; got {revision!r}")
    return ResolvedModel(model_id, commit, commit, demo=True)


#: why a requested model cannot be checked on the Hub (:func:`benchmark.hub.access.hub_failures`)
MODEL_CHECK_MESSAGES = {
    "offline": "{where}: the Hub is offline (HF_HUB_OFFLINE)",
    "revision": "{model_id} has no revision {revision!r}",
    "gated": "{model_id} is gated and this token cannot see it",
    "not_found": "no model {model_id} on the Hub (or it is private)",
    "http": "{where}: the Hub answered HTTP {status}",
    "connection": NO_CONNECTION,
}


def resolve_hub_model(model_id: str, revision: str | None, api: Any) -> ResolvedModel:
    """The model's commit at ``revision`` from ``api.model_info``; RequestRefused when it is
    private, disabled, or not a diffusers text-to-image pipeline."""
    check_hub_model_id(model_id)
    revision = revision or "main"
    where = f"cannot check {model_id}"
    with hub_failures(MODEL_CHECK_MESSAGES, error=RequestRefused, where=where, model_id=model_id, revision=revision):
        info = api.model_info(model_id, revision=revision)
    canonical = str(getattr(info, "id", None) or model_id)
    if "/" not in canonical:
        canonical = model_id
    if getattr(info, "private", False):
        raise RequestRefused(f"{canonical} is private: the maintainers' workers cannot download it; make it "
                             "public, or audit it yourself and submit the results (t2ibench submit)")
    if getattr(info, "disabled", False):
        raise RequestRefused(f"{canonical} is disabled on the Hub")
    files = {getattr(s, "rfilename", None) for s in (getattr(info, "siblings", None) or [])}
    tag = getattr(info, "pipeline_tag", None)
    if DIFFUSERS_INDEX not in files:
        raise RequestRefused(f"{canonical} has no {DIFFUSERS_INDEX}: the workers audit diffusers pipelines only")
    if tag not in (None, TEXT_TO_IMAGE):
        raise RequestRefused(f"{canonical} is tagged {tag}, not {TEXT_TO_IMAGE}")
    commit = str(getattr(info, "sha", "") or "")
    if len(commit) != 40:
        raise RequestRefused(f"{where}: the Hub gave no commit for revision {revision!r}")
    return ResolvedModel(canonical, revision, commit.lower())


def resolve_model(model_id: str, revision: str | None, *, demo: bool, api: Any = None) -> ResolvedModel:
    model_id = (model_id or "").strip()
    if model_id.startswith("builtin:"):
        if not demo:
            raise RequestRefused(f"{model_id} is a built-in tiny random-weight model (meaningless scores): "
                                 "accepted only as a demo (--demo)")
        return resolve_builtin(model_id, revision)
    if demo:
        raise InvalidRequest("--demo is for built-in tiny models (builtin:tiny-sd) only")
    if api is None:
        api = HfApi()
    return resolve_hub_model(model_id, revision, api)


# --------------------------------------------------------------------------- the request


def resolve_lora(ref: str, api: Any = None) -> str:
    """A ``--lora ORG/NAME[@REV][/FILE][:SCALE]`` of a request pinned to the commit its revision
    resolves to now (``ORG/NAME@COMMIT[/FILE][:SCALE]``): the workers load exactly what was asked.
    RequestRefused when the repository cannot be seen, is private, or holds no .safetensors file."""
    parsed = parse_lora_specs([ref])[0]
    if not parsed.repo:
        raise InvalidRequest(f"LoRA {ref!r}: a request names a LoRA on the Hub (ORG/NAME[@REV][/FILE][:SCALE]); "
                             "a local file is for `t2ibench run --lora`")
    revision, api = parsed.revision or "main", api if api is not None else HfApi()
    where = f"cannot check the LoRA {parsed.repo}"
    with hub_failures(MODEL_CHECK_MESSAGES, error=RequestRefused, where=where, model_id=parsed.repo,
                      revision=revision):
        info = api.model_info(parsed.repo, revision=revision)
    if getattr(info, "private", False):
        raise RequestRefused(f"the LoRA {parsed.repo} is private: the maintainers' workers cannot download it")
    files = [str(getattr(f, "rfilename", "")) for f in (getattr(info, "siblings", None) or [])]
    if parsed.weight_name and parsed.weight_name not in files or not any(f.endswith(".safetensors") for f in files):
        raise RequestRefused(f"the LoRA {parsed.repo} has no {parsed.weight_name or '.safetensors file'}")
    commit = str(getattr(info, "sha", "") or "").lower()
    if len(commit) != 40:
        raise RequestRefused(f"{where}: the Hub gave no commit for revision {revision!r}")
    return (f"{parsed.repo}@{commit}" + (f"/{parsed.weight_name}" if parsed.weight_name else "")
            + (f":{parsed.scale:g}" if parsed.scale_given else ""))


def build_request(model: ResolvedModel, *, submitter: str, dtype: str | None = None, settings: dict | None = None,
                  loras: list[str] | None = None, now: str | None = None) -> RequestRecord:
    """The PENDING record of a resolved model (``loras``: pinned by :func:`resolve_lora`)."""
    return RequestRecord(model_id=model.model_id, revision=model.revision, commit=model.commit,
                         submitter=check_submitter(submitter), submitted_at=now or utc_iso_ms(),
                         dtype=check_dtype(dtype), settings=check_settings(settings), loras=check_loras(loras),
                         demo=model.demo)


def check_queue(snapshot: Snapshot, record: RequestRecord, rate_limit: RateLimit) -> StoredRecord | None:
    """Refuse a duplicate or a submitter over the limit; returns the FAILED request this one replaces."""
    existing = next((found for found in map(snapshot.get, record.paths) if found is not None), None)
    if existing is not None:
        old = existing.record
        if old.status in (PENDING, RUNNING):
            raise RequestRefused(f"{record.model_id} at commit {record.commit} is already queued ({old.status}, "
                                 f"submitted {old.submitted_at} by {old.submitter})")
        if old.status == FINISHED:
            where = f": {old.results_url or old.results_path}" if (old.results_url or old.results_path) else ""
            raise RequestRefused(f"{record.model_id} at commit {record.commit} is already evaluated{where}")
    bad = [p for p, _ in snapshot.invalid if p in record.paths]
    if bad:
        raise RequestRefused(f"{bad[0]} exists but is not a valid request; a maintainer must fix it")
    rate_limit.check(snapshot, record.submitter, parse_utc(record.submitted_at))
    return existing if existing is not None and existing.record.status == FAILED else None


def submit_request(store: RequestStore, record: RequestRecord, *, rate_limit: RateLimit = RateLimit(),
                   dry_run: bool = False) -> StoredRecord:
    """Check the queue and write ``record`` (PENDING); another writer in between means reading
    the queue again and re-checking. With ``dry_run`` nothing is written: the checked record is
    returned as it would be stored."""
    for delay in [*retry_delays(4), None]:
        snapshot = store.snapshot()
        replaced = check_queue(snapshot, record, rate_limit)
        verb = "Resubmit" if replaced else "Request"
        path = replaced.path if replaced else record.path  # a failed request is replaced where it lies
        if dry_run:
            return StoredRecord(record, path, store.expected_for(snapshot, path) or "")
        try:
            return store.write(path, record, expected=store.expected_for(snapshot, path),
                               message=f"{verb} evaluation: {record.model_id} @ {record.commit}")
        except Conflict:
            if delay is None:
                raise RequestRefused(f"the requests queue in {store.name} kept changing; submit again") from None
            request_store.sleep(delay)
    raise AssertionError("unreachable")
