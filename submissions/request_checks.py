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

from benchmark.contract.audit_request import ModelChoice
from benchmark.contract.times import utc_iso_ms
from benchmark.hub.access import NO_CONNECTION, hub_failures
from benchmark.models.builtin_cache import BUILDER_VERSION, check_builtin_name
from benchmark.models.errors import UnknownBuiltinError
from benchmark.models.hub_access import is_local_folder, looks_like_path
from benchmark.models.lora import parse_lora_specs
from benchmark.models.single_file import parse_single_file
from submissions import request_store
from submissions.request_store import Conflict, RequestStore, Snapshot, StoredRecord, retry_delays
from submissions.requests import (
    FAILED,
    FINISHED,
    PENDING,
    RUNNING,
    MODEL_OPTIONS,
    InvalidRequest,
    RequestRecord,
    check_dtype,
    check_hub_model_id,
    check_lora_trigger,
    check_loras,
    check_model_options,
    check_quantization,
    check_settings,
    check_submitter,
    one_line,
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
    file: str | None = None  # a single-file checkpoint in the repo (t2ibench request hf://ORG/NAME/FILE)


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


@dataclass(frozen=True)
class HubRepo:
    """What ``model_info`` says of a repo a request names: its canonical id, the commit its
    revision resolves to, its files and pipeline tag, and its card's ``base_model``."""

    repo_id: str
    commit: str
    files: frozenset
    tag: str | None
    card_base: Any = None


def public_repo(repo_id: str, revision: str | None, api: Any, *, what: str = "") -> HubRepo:
    """``repo_id`` at ``revision`` (default main) from ``api.model_info``: RequestRefused when it
    cannot be seen, is private or disabled, or the Hub gives no commit. ``what``: the role named
    in the refusals ("the LoRA ", "the base model "; "" for the model audited)."""
    check_hub_model_id(repo_id)
    revision = revision or "main"
    where = f"cannot check {what}{repo_id}"
    with hub_failures(MODEL_CHECK_MESSAGES, error=RequestRefused, where=where, model_id=repo_id, revision=revision):
        info = api.model_info(repo_id, revision=revision)
    canonical = str(getattr(info, "id", None) or repo_id)
    if "/" not in canonical:
        canonical = repo_id
    if getattr(info, "private", False):
        hint = "" if what else "; make it public, or audit it yourself and submit the results (t2ibench submit)"
        raise RequestRefused(f"{what}{canonical} is private: the maintainers' workers cannot download it{hint}")
    if getattr(info, "disabled", False):
        raise RequestRefused(f"{what}{canonical} is disabled on the Hub")
    commit = str(getattr(info, "sha", "") or "")
    if len(commit) != 40:
        raise RequestRefused(f"{where}: the Hub gave no commit for revision {revision!r}")
    files = frozenset(str(getattr(s, "rfilename", "")) for s in (getattr(info, "siblings", None) or []))
    card = getattr(info, "card_data", None)
    card_base = card.get("base_model") if hasattr(card, "get") else None
    return HubRepo(canonical, commit.lower(), files, getattr(info, "pipeline_tag", None), card_base)


def _text_to_image_tag(repo: HubRepo, what: str = "") -> None:
    if repo.tag not in (None, TEXT_TO_IMAGE):
        raise RequestRefused(f"{what}{repo.repo_id} is tagged {repo.tag}, not {TEXT_TO_IMAGE}")


def resolve_hub_model(model_id: str, revision: str | None, api: Any, *, what: str = "") -> ResolvedModel:
    """The model's commit at ``revision`` from ``api.model_info``; RequestRefused when it is
    private, disabled, or not a diffusers text-to-image pipeline."""
    repo = public_repo(model_id, revision, api, what=what)
    if DIFFUSERS_INDEX not in repo.files:
        raise RequestRefused(f"{what}{repo.repo_id} has no {DIFFUSERS_INDEX}: the workers audit diffusers pipelines "
                             "only")
    _text_to_image_tag(repo, what)
    return ResolvedModel(repo.repo_id, revision or "main", repo.commit)


def resolve_hub_file(single: Any, revision: str | None, api: Any, *, base: str | None) -> ResolvedModel:
    """A single-file checkpoint on the Hub (``single``: :func:`benchmark.models.single_file.parse_single_file`
    of ``hf://ORG/NAME[@REV]/FILE``) pinned to the commit its revision resolves to; RequestRefused
    when the repo cannot be seen, is private, holds no such file, or nothing names its base (no
    ``base``, the repo is no diffusers pipeline and its card names no base_model: the worker's
    `t2ibench run` would refuse it the same way)."""
    if single.ref.revision and revision and single.ref.revision != revision:
        raise InvalidRequest(f"{single.text} names revision {single.ref.revision}, --revision {revision}: give one")
    revision = single.ref.revision or revision or "main"
    repo = public_repo(single.ref.repo, revision, api)
    if single.ref.weight_name not in repo.files:
        raise RequestRefused(f"{repo.repo_id} has no file {single.ref.weight_name} at revision {revision!r}")
    _text_to_image_tag(repo)
    if not base and DIFFUSERS_INDEX not in repo.files and not repo.card_base:
        raise RequestRefused(f"{single.text}: neither its repo (no {DIFFUSERS_INDEX}) nor its model card (no "
                             "base_model) names the diffusers model it fine-tunes: give it with --base ORG/NAME")
    return ResolvedModel(repo.repo_id, revision, repo.commit, file=single.ref.weight_name)


def check_base_name(base: str | None) -> str | None:
    """``--base`` names a Hub model (no network): a local folder or a built-in model is refused,
    the workers cannot see it."""
    if base is None:
        return None
    base = base.strip()
    if base.startswith("builtin:") or is_local_folder(base) or looks_like_path(base):
        raise InvalidRequest(f"--base {base!r}: a request names its base on the Hub (ORG/NAME); a local folder or "
                             "built-in model is for `t2ibench run --base`")
    try:
        return check_hub_model_id(base)
    except InvalidRequest as exc:
        raise InvalidRequest(f"--base: {exc}") from None


def resolve_base(base: str | None, api: Any = None) -> str | None:
    """``--base``: a public diffusers text-to-image model on the Hub (its id as the Hub writes it),
    whose configs the worker reads a single file with (:func:`check_base_name` first)."""
    if check_base_name(base) is None:
        return None
    return resolve_hub_model(base.strip(), None, api if api is not None else HfApi(),
                             what="the base model ").model_id


def parse_requested_model(model_id: str, *, demo: bool):
    """The model a request names, read without the network: ``(model_id, single)`` with ``single``
    the parsed single-file checkpoint on the Hub (``hf://ORG/NAME[@REV]/FILE``) or None. Refused: a
    built-in model without ``demo`` (and ``demo`` with anything else), a local folder or file (the
    workers cannot see it), a pickle file, a malformed Hub id."""
    model_id = (model_id or "").strip()
    if model_id.startswith("builtin:"):
        if not demo:
            raise RequestRefused(f"{model_id} is a built-in tiny random-weight model (meaningless scores): "
                                 "accepted only as a demo (--demo)")
        return model_id, None
    if demo:
        raise InvalidRequest("--demo is for built-in tiny models (builtin:tiny-sd) only")
    try:
        single = parse_single_file(model_id)
    except ValueError as exc:  # a pickle file, a malformed Hub file, a path to no file
        raise InvalidRequest(one_line(exc)) from None
    if single is not None and single.ref.repo is None:
        raise InvalidRequest(f"{model_id!r}: a request names a model on the Hub (ORG/NAME, or a single file "
                             "hf://ORG/NAME[@REV]/FILE); a local file is for `t2ibench run --model`")
    if single is None:
        check_hub_model_id(model_id)
    return model_id, single


def resolve_model(model_id: str, revision: str | None, *, demo: bool, api: Any = None,
                  base: str | None = None) -> ResolvedModel:
    """The model a request names (:func:`parse_requested_model`), resolved to a commit: a built-in
    model (``demo`` only), a Hub model (a diffusers text-to-image pipeline), or a single-file
    checkpoint on the Hub, read with ``base`` or the base its repo or card names."""
    model_id, single = parse_requested_model(model_id, demo=demo)
    if model_id.startswith("builtin:"):
        return resolve_builtin(model_id, revision)
    if api is None:
        api = HfApi()
    if single is not None:
        return resolve_hub_file(single, revision, api, base=base)
    return resolve_hub_model(model_id, revision, api)


def check_request_options(model_id: str, *, demo: bool, loras=(), options: dict | None = None) -> dict:
    """A request's model and its options (``loras`` as typed; ``options``: ``base``, ``quantization``,
    ``lora_unet_only``, ``lora_trigger``) checked without the network, by `t2ibench run`'s own rules:
    :func:`parse_requested_model`, :func:`check_base_name`, ``--quantize`` as run parses it, the
    record's bound on a trigger, and the combination by run's :class:`ModelChoice` (a trigger or
    --lora-unet-only without --lora, --base without a single file, a LoRA's syntax). Returns the
    options as the record writes them; InvalidRequest / RequestRefused (one line)."""
    model_id, _ = parse_requested_model(model_id, demo=demo)
    options = dict(options or {})
    trigger = options.get("lora_trigger")
    out = {"base": check_base_name(options.get("base")),
           "quantization": check_quantization(options.get("quantization")),
           "lora_unet_only": bool(options.get("lora_unet_only")),
           "lora_trigger": check_lora_trigger(None if trigger is False else trigger)}
    try:
        ModelChoice(model_id, adapters=tuple(loras or ()), base=out["base"], quantization=out["quantization"],
                    lora_unet_only=out["lora_unet_only"], lora_trigger=out["lora_trigger"])
    except ValueError as exc:
        raise InvalidRequest(one_line(exc)) from None
    return out


# --------------------------------------------------------------------------- the request


def resolve_lora(ref: str, api: Any = None) -> str:
    """A ``--lora ORG/NAME[@REV][/FILE][:SCALE]`` of a request pinned to the commit its revision
    resolves to now (``ORG/NAME@COMMIT[/FILE][:SCALE]``): the workers load exactly what was asked.
    RequestRefused when the repository cannot be seen, is private, or holds no .safetensors file."""
    parsed = parse_lora_specs([ref])[0]
    if not parsed.repo:
        raise InvalidRequest(f"LoRA {ref!r}: a request names a LoRA on the Hub (ORG/NAME[@REV][/FILE][:SCALE]); "
                             "a local file is for `t2ibench run --lora`")
    repo = public_repo(parsed.repo, parsed.revision, api if api is not None else HfApi(), what="the LoRA ")
    files, commit = repo.files, repo.commit
    if parsed.weight_name and parsed.weight_name not in files or not any(f.endswith(".safetensors") for f in files):
        raise RequestRefused(f"the LoRA {parsed.repo} has no {parsed.weight_name or '.safetensors file'}")
    return (f"{parsed.repo}@{commit}" + (f"/{parsed.weight_name}" if parsed.weight_name else "")
            + (f":{parsed.scale:g}" if parsed.scale_given else ""))


def build_request(model: ResolvedModel, *, submitter: str, dtype: str | None = None, settings: dict | None = None,
                  loras: list[str] | None = None, now: str | None = None, options: dict | None = None) -> RequestRecord:
    """The PENDING record of a resolved model (``loras``: pinned by :func:`resolve_lora`; ``options``:
    ``base`` (resolved by :func:`resolve_base`), ``quantization``, ``lora_unet_only``,
    ``lora_trigger``, checked as `t2ibench run` checks them: :func:`submissions.requests.check_model_options`)."""
    options = dict(options or {})
    unknown = sorted(set(options) - (set(MODEL_OPTIONS) - {"file"}))
    if unknown:  # the file is the resolved model's
        raise ValueError(f"build_request: unknown model option {unknown[0]!r}")
    trigger = options.get("lora_trigger")
    record = RequestRecord(model_id=model.model_id, revision=model.revision, commit=model.commit,
                           submitter=check_submitter(submitter), submitted_at=now or utc_iso_ms(),
                           dtype=check_dtype(dtype), settings=check_settings(settings), loras=check_loras(loras),
                           demo=model.demo, file=model.file, base=options.get("base"),
                           quantization=check_quantization(options.get("quantization")),
                           lora_unet_only=bool(options.get("lora_unet_only")),
                           lora_trigger=None if trigger is False else trigger)
    check_model_options(record)
    return record


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
