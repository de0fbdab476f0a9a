"""The evaluation request: what a user asks the maintainers' workers to audit.

One JSON file per model commit, ``requests/<org>--<model>/<commit>.json`` (the results'
folder name; files under the older ``<org>__<model>`` folders are read too), in a requests
dataset on the Hub or a local requests folder (see :mod:`submissions.request_store`).
Its ``status`` goes PENDING -> RUNNING -> FINISHED or FAILED; a RUNNING request whose
heartbeat is too old goes back to PENDING (``attempts`` + 1). See docs/queue.md.

Everything in a record is checked when it is read (:func:`record_from_json`), because
records are written by others: a file that fails is listed as invalid, never run.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from benchmark.cli_types import LORA_SCALE_RANGE, MAX_LORAS
from benchmark.contract.audit_request import ModelChoice
from benchmark.contract.bounded_json import RefusedJson, load_bounded_json
from benchmark.contract.digest import sha256_hex
from benchmark.contract.model_specs import HUB_FILE_PREFIX, hub_id_problem, unsafe_char
from benchmark.contract.times import parse_iso_time, utc_now
from benchmark.models.quantization import parse_quantization
from submissions.model_folders import model_folder_name

REQUESTS_DIR_IN_REPO = "requests"
RECORD_FORMAT = 1
PENDING, RUNNING, FINISHED, FAILED = "PENDING", "RUNNING", "FINISHED", "FAILED"
STATUSES = (PENDING, RUNNING, FINISHED, FAILED)
DTYPES = ("float32", "float16", "bfloat16")
WORKER_PREFIX = "maintainers' worker "
MAX_REASON_CHARS = 500
MAX_SUBMITTER_CHARS = 96
SUBMITTER_PUNCTUATION = "._-@+ "
SUBMITTER = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._@+ -]*[A-Za-z0-9])?$")
# A record is about 1 kB; these limits (modelled on the results reader's) refuse a file before
# it can cost the worker memory, a RecursionError or a slow int() (docs/queue.md).
MAX_RECORD_BYTES = 64 * 1024
MAX_RECORD_DEPTH = 4  # the record nests 2 levels (settings)
# MAX_LORAS and LORA_SCALE_RANGE: the command line's (benchmark.cli_types), so a request and a run agree

#: the generation settings a request may set (docs/models.md): (type, min, max, multiple of)
GENERATION_SETTINGS: dict[str, tuple[type, float, float, int | None]] = {
    "num_inference_steps": (int, 1, 500, None),
    "guidance_scale": (float, 0.0, 50.0, None),
    "height": (int, 64, 4096, 8),
    "width": (int, 64, 4096, 8),
}

# The Hub's repo id rule (huggingface_hub.utils.validate_repo_id, ASCII only): two parts of
# letters, digits, "_", "-", "."; no "--" or ".."; neither part starts or ends with "-" or ".".
_HUB_PART = r"(?![-.])[A-Za-z0-9_.-]{1,96}(?<![-.])"
HUB_MODEL_ID = re.compile(rf"^{_HUB_PART}/{_HUB_PART}$")
HUB_COMMIT = re.compile(r"^[0-9a-f]{40}$")
BUILTIN_COMMIT = re.compile(r"^builtin-v\d+$")
PINNED_LORA = re.compile(r"^(?P<repo>[A-Za-z0-9_.-]{1,96}/[A-Za-z0-9_.-]{1,96})@[0-9a-f]{40}"
                         r"(?P<file>/[A-Za-z0-9_./-]{1,200}\.safetensors)?(?::(?P<scale>-?\d{1,3}(?:\.\d{1,6})?))?$")
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
#: the options of `t2ibench run`'s model a request may carry besides its LoRAs: record field -> option.
#: Each one set makes another model than the plain request's (its own request id, run folder and results)
MODEL_OPTIONS = {"file": "--model hf://ORG/NAME/FILE", "base": "--base", "quantization": "--quantize",
                 "lora_unet_only": "--lora-unet-only", "lora_trigger": "--lora-trigger"}
MAX_TRIGGER_CHARS = 200


class InvalidRequest(ValueError):
    """A request (argument or record) that cannot be used; the message is one line."""


# --------------------------------------------------------------------------- names and paths


def check_hub_model_id(model_id: Any) -> str:
    """``model_id`` if it is a Hub model id ``ORG/NAME`` (the one id rule, t2ibench validate's
    too); InvalidRequest otherwise."""
    if not isinstance(model_id, str) or not HUB_MODEL_ID.match(model_id) or hub_id_problem(model_id):
        shown = model_id if isinstance(model_id, str) else type(model_id).__name__
        raise InvalidRequest(f"{shown!r} is not a Hub model id: ORG/NAME of letters, digits, '_', '-', '.' "
                             "(no '--' or '..', at most 96 characters each)")
    return model_id


def _escape_part(part: str) -> str:
    # Injective: an underscore that starts or ends the part, or touches another underscore,
    # becomes %5F ("%" is in no Hub id), so an escaped part never holds "__" nor starts or
    # ends with "_", and "<org>__<model>" splits back at its only "__".
    out = []
    for i, ch in enumerate(part):
        lone = 0 < i < len(part) - 1 and part[i - 1] != "_" and part[i + 1] != "_"
        out.append("%5F" if ch == "_" and not lone else ch)
    return "".join(out)


def model_folder(model_id: str) -> str:
    """The folder name results use too (:func:`submissions.model_folders.model_folder_name`):
    ``<org>--<model>`` for a Hub id ("--" is in no Hub id, so it splits back), ``_builtin--<name>``."""
    if not model_id.startswith("builtin:"):
        check_hub_model_id(model_id)
    return model_folder_name(model_id)


def legacy_model_folder(model_id: str) -> str:
    """``<org>__<model>``: the folder of requests written before they took the results' names;
    it still names the request (:func:`request_id`), so records and results keep their ids."""
    if model_id.startswith("builtin:"):
        return f"builtin__{_escape_part(model_id[len('builtin:'):])}"
    org, name = check_hub_model_id(model_id).split("/")
    return f"{_escape_part(org)}__{_escape_part(name)}"


def check_commit(commit: Any, *, builtin: bool) -> str:
    pattern = BUILTIN_COMMIT if builtin else HUB_COMMIT
    if not isinstance(commit, str) or not pattern.match(commit):
        what = "builtin-v<N>" if builtin else "a 40-character lowercase hex commit id"
        raise InvalidRequest(f"commit {commit!r} is not {what}")
    return commit


def check_loras(loras: Any) -> list[str]:
    """The LoRA adapters of a request: at most :data:`MAX_LORAS` Hub references pinned to a commit,
    ``ORG/NAME@COMMIT[/FILE.safetensors][:SCALE]`` (``t2ibench request --lora`` resolves the
    revision; a base with LoRAs is another model than the base, with its own request)."""
    if loras is None:
        return []
    if not isinstance(loras, (list, tuple)) or len(loras) > MAX_LORAS:
        raise InvalidRequest(f"loras must be a list of at most {MAX_LORAS} LoRA references, got {_shown(loras)}")
    for ref in loras:
        m = PINNED_LORA.match(ref) if isinstance(ref, str) else None
        if m is None or hub_id_problem(m["repo"]):
            raise InvalidRequest(f"LoRA {_shown(ref)} is not ORG/NAME@COMMIT[/FILE.safetensors][:SCALE] (a Hub LoRA "
                                 "pinned to its 40-character commit)")
        low, high = LORA_SCALE_RANGE
        if m["scale"] is not None and not low <= float(m["scale"]) <= high:
            raise InvalidRequest(f"LoRA {ref!r}: scale {m['scale']} is outside [{low:g}, {high:g}]")
    return list(loras)


def _lora_suffix(loras: Any) -> str:
    """``+lora-<12 hex>`` naming a request's LoRAs (sha256 of the ordered list; '' with none):
    the base model and the base with LoRAs are two requests, two run folders, two results."""
    loras = check_loras(loras)
    return f"+lora-{sha256_hex(json.dumps(loras).encode('utf-8'))[:12]}" if loras else ""


def _options_suffix(options: Mapping | None) -> str:
    """``+opts-<12 hex>`` naming a request's model options (:data:`MODEL_OPTIONS`: sha256 of the
    options set, as sorted JSON; '' with none): a single file, a base, a quantization, a LoRA
    trigger or the LoRAs' UNet part alone is another model, with its own request."""
    chosen = {k: v for k, v in (options or {}).items() if k in MODEL_OPTIONS and v not in (None, False)}
    return f"+opts-{sha256_hex(json.dumps(chosen, sort_keys=True).encode('utf-8'))[:12]}" if chosen else ""


def variant_suffix(loras: Any = (), options: Mapping | None = None) -> str:
    """What follows the commit in a request's file name and id: ``+lora-<hash>`` for its LoRAs,
    then ``+opts-<hash>`` for its other model options ('' for the model alone, as before either)."""
    return _lora_suffix(loras) + _options_suffix(options)


def request_path(model_id: str, commit: str, loras: Any = (), options: Mapping | None = None) -> str:
    """``requests/<org>--<model>/<commit>[+lora-<hash>][+opts-<hash>].json``: where a new record is written."""
    check_commit(commit, builtin=model_id.startswith("builtin:"))
    return f"{REQUESTS_DIR_IN_REPO}/{model_folder(model_id)}/{commit}{variant_suffix(loras, options)}.json"


def legacy_request_path(model_id: str, commit: str, loras: Any = (), options: Mapping | None = None) -> str:
    """``requests/<org>__<model>/<commit>.json``: where records were written before; read too."""
    check_commit(commit, builtin=model_id.startswith("builtin:"))
    return f"{REQUESTS_DIR_IN_REPO}/{legacy_model_folder(model_id)}/{commit}{variant_suffix(loras, options)}.json"


def request_id(model_id: str, commit: str, loras: Any = (), options: Mapping | None = None) -> str:
    """``<org>__<model>@<commit>[+lora-<hash>][+opts-<hash>]``: names the request, its run folder
    and its results ("@" is in neither part). Unchanged by the folder rename, so older records and
    results still match."""
    check_commit(commit, builtin=model_id.startswith("builtin:"))
    return f"{legacy_model_folder(model_id)}@{commit}{variant_suffix(loras, options)}"


# --------------------------------------------------------------------------- time


def parse_utc(value: str) -> _dt.datetime:
    if not isinstance(value, str) or not _TIME.match(value):
        raise InvalidRequest(f"{_shown(value)} is not a UTC time like 2026-11-24T09:30:00Z")
    try:  # the pattern lets 2026-13-45T99:99:99Z through; the calendar does not
        return parse_iso_time(value)
    except ValueError:
        raise InvalidRequest(f"{value!r} is not a date and time of the calendar") from None


def _shown(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters: a refusal names the value, never megabytes of it."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def seconds_since(value: str, now: _dt.datetime | None = None) -> float:
    now = now or utc_now()
    return (now - parse_utc(value)).total_seconds()


# --------------------------------------------------------------------------- settings


def check_settings(settings: Any) -> dict:
    """The generation settings with their types and ranges checked (ints stay ints, guidance a float)."""
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise InvalidRequest(f"settings must be a mapping, got {type(settings).__name__}")
    out = {}
    for key, value in settings.items():
        if key not in GENERATION_SETTINGS:
            raise InvalidRequest(f"unknown generation setting {key!r}; a request may set "
                                 + ", ".join(GENERATION_SETTINGS))
        kind, low, high, multiple = GENERATION_SETTINGS[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or (kind is int and not isinstance(value, int)) or not math.isfinite(value):
            raise InvalidRequest(f"{key} must be {'an integer' if kind is int else 'a number'}, got {value!r}")
        if not low <= value <= high:
            raise InvalidRequest(f"{key} = {value!r} is outside [{low:g}, {high:g}]")
        if multiple and value % multiple:
            raise InvalidRequest(f"{key} = {value!r} is not a multiple of {multiple}")
        out[key] = kind(value)
    return out


def check_dtype(dtype: Any) -> str | None:
    if dtype is None or dtype in DTYPES:
        return dtype
    raise InvalidRequest(f"dtype must be one of {', '.join(DTYPES)} (or unset: per device), got {dtype!r}")


def submitter_problem(name: Any) -> str | None:
    """Why ``name`` cannot be a submitter, or None: a name like the others the queue and the board
    show (Hub user names, worker ids, model names): 1 to :data:`MAX_SUBMITTER_CHARS` ASCII letters,
    digits and ``. _ - @ +`` or inner spaces, starting and ending with a letter or digit.
    ``<script>...</script>`` was stored as is; every page escapes what it shows, and a name
    is checked like a name all the same."""
    if not isinstance(name, str) or not name.strip():
        return "is empty"
    if len(name) > MAX_SUBMITTER_CHARS:
        return f"is {len(name)} characters long (at most {MAX_SUBMITTER_CHARS})"
    unsafe = unsafe_char(name)
    if unsafe:
        return unsafe
    bad = next((ch for ch in name if not (ch.isalnum() or ch in SUBMITTER_PUNCTUATION)), None)
    if bad is not None:
        return f"holds {bad!r}: use letters, digits, '.', '_', '-', '@', '+' and inner spaces"
    if not SUBMITTER.match(name):
        return "must start and end with a letter or digit"
    return None


def check_submitter(name: Any) -> str:
    """``name`` without surrounding spaces if :func:`submitter_problem` finds nothing in it;
    InvalidRequest (one line) otherwise."""
    name = name.strip() if isinstance(name, str) else name
    problem = submitter_problem(name)
    if problem:
        raise InvalidRequest(f"submitter {_shown(name)} {problem} (--submitter NAME)")
    return name


def one_line(text: Any, limit: int = MAX_REASON_CHARS) -> str:
    """The first non-empty line of ``text``, at most ``limit`` characters (failure reasons)."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def check_quantization(text: Any) -> str | None:
    """``--quantize BACKEND:SCHEME`` as `t2ibench run` reads it (benchmark.models.quantization's
    :func:`parse_quantization`), in its written form (``bnb:4bit``); None when unset."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise InvalidRequest(f"quantization must be BACKEND:SCHEME, got {_shown(text)}")
    try:
        return parse_quantization(text).text
    except ValueError as exc:
        raise InvalidRequest(one_line(exc)) from None


def check_lora_trigger(trigger: Any) -> bool | str | None:
    """``--lora-trigger``: None (unset), True (the LoRA cards' instance_prompt) or one line of at most
    :data:`MAX_TRIGGER_CHARS` characters, without spaces around it or control characters."""
    if trigger is None or trigger is True:
        return trigger
    if not isinstance(trigger, str) or not trigger.strip() or trigger != trigger.strip() \
            or len(trigger) > MAX_TRIGGER_CHARS or any(not ch.isprintable() for ch in trigger):
        raise InvalidRequest(f"lora_trigger must be true or one line of text of at most {MAX_TRIGGER_CHARS} "
                             f"characters, without spaces around it, got {_shown(trigger)}")
    return trigger


def check_model_options(record: "RequestRecord") -> None:
    """The record's model options (:data:`MODEL_OPTIONS`): their types, a file and a base on the Hub
    only (a worker sees nothing else), and the combination checked by `t2ibench run`'s own rules
    (:meth:`RequestRecord.model_choice`: a trigger or --lora-unet-only without a LoRA, a base without
    a single file, a file name that is not ``PATH.safetensors`` / ``PATH.gguf``...). InvalidRequest."""
    if record.file is not None:
        if not isinstance(record.file, str) or not record.file or record.model_id.startswith("builtin:"):
            raise InvalidRequest(f"file {_shown(record.file)} must name a .safetensors or .gguf file of a Hub model")
    if record.base is not None:
        try:
            check_hub_model_id(record.base)
        except InvalidRequest as exc:
            raise InvalidRequest(f"base: {exc}") from None
    if check_quantization(record.quantization) != record.quantization:
        raise InvalidRequest(f"quantization {record.quantization!r} is not written as --quantize reads it "
                             f"({check_quantization(record.quantization)})")
    if not isinstance(record.lora_unet_only, bool):
        raise InvalidRequest("lora_unet_only must be true or false")
    check_lora_trigger(record.lora_trigger)
    try:
        record.model_choice()
    except ValueError as exc:
        raise InvalidRequest(one_line(exc)) from None


# --------------------------------------------------------------------------- the record


@dataclass(frozen=True)
class RequestRecord:
    model_id: str
    revision: str  # as requested (branch, tag or commit)
    commit: str  # what it resolved to when submitted: the workers audit this one
    submitter: str
    submitted_at: str
    dtype: str | None = None
    settings: dict = field(default_factory=dict)
    loras: list = field(default_factory=list)  # LoRA adapters, pinned (check_loras): part of the model audited
    # the other model options of `t2ibench run` (MODEL_OPTIONS; check_model_options): absent when unset
    file: str | None = None  # a single-file checkpoint in the model's repo at the commit: the model audited
    base: str | None = None  # the Hub model whose configs read that file (None: its repo or card names one)
    quantization: str | None = None  # BACKEND:SCHEME, as parse_quantization writes it
    lora_unet_only: bool = False  # the LoRAs' text-encoder layers skipped (and recorded)
    lora_trigger: bool | str | None = None  # True: the LoRA cards' instance_prompt; a text: that text
    demo: bool = False  # a built-in tiny random-weight model: meaningless scores
    status: str = PENDING
    worker_id: str | None = None
    started_at: str | None = None
    heartbeat_at: str | None = None
    heartbeat_timeout_s: float | None = None  # the claiming worker's promise: a heartbeat at least this often
    attempts: int = 0  # runs abandoned so far (no heartbeat for longer than the timeout)
    results_path: str | None = None
    results_url: str | None = None
    finished_at: str | None = None
    failure_reason: str | None = None

    @property
    def options(self) -> dict:
        """The model options (:data:`MODEL_OPTIONS`) as recorded, unset ones included."""
        return {name: getattr(self, name) for name in MODEL_OPTIONS}

    @property
    def request_id(self) -> str:
        return request_id(self.model_id, self.commit, self.loras, self.options)

    @property
    def variant(self) -> str:
        """``+lora-<hash>+opts-<hash>`` (:func:`variant_suffix`): what names this request apart
        from the plain model's ('' for the plain model)."""
        return variant_suffix(self.loras, self.options)

    @property
    def path(self) -> str:
        return request_path(self.model_id, self.commit, self.loras, self.options)

    @property
    def paths(self) -> tuple[str, str]:
        """Where this record may be stored: its path, then the older folder's (read, kept in place)."""
        return self.path, legacy_request_path(self.model_id, self.commit, self.loras, self.options)

    @property
    def audited_model_id(self) -> str:
        """The model id the audit's results record: the model id, or for a single file
        ``hf://ORG/NAME@COMMIT/FILE`` (the file at the commit the request pinned)."""
        if self.file:
            return f"{HUB_FILE_PREFIX}{self.model_id}@{self.commit}/{self.file}"
        return self.model_id

    @property
    def model_label(self) -> str:
        """What the queue view calls the model: its id (``hf://ORG/NAME/FILE`` for a single file)
        with its LoRAs and options, so two requests of one commit are told apart."""
        parts = [f"{HUB_FILE_PREFIX}{self.model_id}/{self.file}" if self.file else self.model_id]
        parts += [f"+ LoRA {ref.split('@', 1)[0]}" + (f":{ref.rsplit(':', 1)[1]}" if ":" in ref else "")
                  for ref in self.loras]
        if self.base:
            parts.append(f"[base {self.base}]")
        if self.quantization:
            parts.append(f"[quantized {self.quantization}]")
        if self.lora_unet_only:
            parts.append("[LoRA UNet / transformer layers only]")
        if self.lora_trigger is not None:
            parts.append("[trigger from the LoRA card]" if self.lora_trigger is True
                         else f"[trigger {self.lora_trigger!r}]")
        return " ".join(parts)

    def model_choice(self) -> ModelChoice:
        """The model `t2ibench run` audits for this request (the worker's ``--model``, ``--revision``,
        ``--set``, ``--lora``, ``--base``, ``--quantize``, ``--lora-unet-only``, ``--lora-trigger``),
        built and checked by run's own :class:`ModelChoice`; a one-line ValueError when its rules
        refuse the combination."""
        pinned = not (self.demo or self.file)  # a single file's revision is in its id
        return ModelChoice(self.audited_model_id, revision=self.commit if pinned else None,
                           settings=dict(self.settings),
                           adapters=tuple(self.loras), base=self.base, quantization=self.quantization,
                           lora_unet_only=self.lora_unet_only, lora_trigger=self.lora_trigger)

    def replace(self, **changes: Any) -> "RequestRecord":
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict:
        doc = {"format": RECORD_FORMAT, "request_id": self.request_id}
        doc.update(dataclasses.asdict(self))
        for name in ("loras", *MODEL_OPTIONS):  # a request without them reads as it did before they existed
            if doc[name] in (None, False, []):
                del doc[name]
        return doc

    def dumps(self) -> bytes:
        return (json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")


_OPTIONAL_TIMES = ("started_at", "heartbeat_at", "finished_at")
_OPTIONAL_TEXT = ("worker_id", "results_path", "results_url", "failure_reason")


def record_from_json(doc: Any) -> RequestRecord:
    """A record from its JSON document, every field checked; InvalidRequest (one line) otherwise."""
    if not isinstance(doc, Mapping):
        raise InvalidRequest("a request is a JSON object")
    if doc.get("format") != RECORD_FORMAT:
        raise InvalidRequest(f"format {doc.get('format')!r} is not {RECORD_FORMAT}")
    names = {f.name for f in dataclasses.fields(RequestRecord)}
    unknown = sorted(set(doc) - names - {"format", "request_id"})
    if unknown:
        raise InvalidRequest(f"unknown field {unknown[0]!r}")
    missing = [n for n in ("model_id", "revision", "commit", "submitter", "submitted_at", "status") if n not in doc]
    if missing:
        raise InvalidRequest(f"required field {missing[0]!r} is missing")
    record = RequestRecord(**{k: v for k, v in doc.items() if k in names})
    builtin = isinstance(record.model_id, str) and record.model_id.startswith("builtin:")
    if builtin:
        if not record.demo:
            raise InvalidRequest(f"{record.model_id} is a built-in model but the request is not marked demo")
        if not re.match(r"^builtin:[a-z0-9-]{1,40}$", record.model_id):
            raise InvalidRequest(f"{record.model_id!r} is not a built-in model name")
    else:
        check_hub_model_id(record.model_id)
        if record.demo is not False:
            raise InvalidRequest("demo must be false for a Hub model")
    check_commit(record.commit, builtin=builtin)
    if not isinstance(record.revision, str) or not record.revision or len(record.revision) > 256:
        raise InvalidRequest(f"revision {record.revision!r} is not a branch, tag or commit name")
    if check_submitter(record.submitter) != record.submitter:
        raise InvalidRequest(f"submitter {_shown(record.submitter)} has spaces around it")
    parse_utc(record.submitted_at)
    check_dtype(record.dtype)
    if check_settings(record.settings) != record.settings:
        raise InvalidRequest(f"settings {record.settings!r} are not in their canonical types")
    check_loras(record.loras)
    if record.loras and builtin:
        raise InvalidRequest("a demo request (built-in model) takes no LoRA")
    check_model_options(record)
    if record.status not in STATUSES:
        raise InvalidRequest(f"status {record.status!r} is not one of {', '.join(STATUSES)}")
    if isinstance(record.attempts, bool) or not isinstance(record.attempts, int) or record.attempts < 0:
        raise InvalidRequest(f"attempts {record.attempts!r} is not a count")
    if not isinstance(record.demo, bool):
        raise InvalidRequest("demo must be true or false")
    for name in _OPTIONAL_TIMES:
        if getattr(record, name) is not None:
            parse_utc(getattr(record, name))
    for name in _OPTIONAL_TEXT:
        value = getattr(record, name)
        if value is not None and (not isinstance(value, str) or "\n" in value or len(value) > 2 * MAX_REASON_CHARS):
            raise InvalidRequest(f"{name} must be one line of text")
    timeout = record.heartbeat_timeout_s
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not math.isfinite(timeout) or timeout <= 0):
        raise InvalidRequest(f"heartbeat_timeout_s {timeout!r} is not a positive number of seconds")
    if record.status == RUNNING and not (record.worker_id and record.heartbeat_at):
        raise InvalidRequest("a RUNNING request needs worker_id and heartbeat_at")
    if record.status == FAILED and not record.failure_reason:
        raise InvalidRequest("a FAILED request needs a failure_reason")
    if doc.get("request_id") is not None and doc["request_id"] != record.request_id:
        raise InvalidRequest(f"request_id {doc['request_id']!r} does not match the model and commit "
                             f"({record.request_id})")
    return record


def load_record_json(data: bytes) -> Any:
    """The JSON document in a request file's bytes, read within the limits (size, nesting,
    integer digits, NaN, duplicate keys) of the results reader; InvalidRequest (one line)
    for anything else. Nothing else raises."""
    if len(data) > MAX_RECORD_BYTES:
        raise InvalidRequest(f"{len(data)} bytes, over the limit of {MAX_RECORD_BYTES} for a request")
    try:
        return load_bounded_json(data, MAX_RECORD_DEPTH)  # the results reader's own rules
    except RefusedJson as exc:
        raise InvalidRequest(exc.reason) from None


def record_from_bytes(data: bytes) -> RequestRecord:
    """A record from a request file's bytes: read within bounds, then every field checked.
    Any problem is InvalidRequest (one line): a file written by anyone cannot stop a reader."""
    doc = load_record_json(data)
    try:
        return record_from_json(doc)
    except InvalidRequest:
        raise
    except Exception as exc:  # a type no check foresaw: still one invalid file, not a crash
        raise InvalidRequest(f"not a valid request ({type(exc).__name__}: {one_line(exc, 200)})") from None
