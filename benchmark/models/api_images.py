"""Image-generation APIs that speak the OpenAI Images API (``--model openai:dall-e-2``).

``POST {api_base}/images/generations`` with ``model``, ``prompt``, ``n=1``, ``size`` (and
``quality`` / ``style`` where the model takes them, ``response_format=b64_json`` for the
DALL-E models; gpt-image-1 always answers base64). ``--api-base`` points it at any provider
that speaks the same API. The key is read from ``OPENAI_API_KEY`` (or the variable
``--api-key-env`` names) when the model is loaded and lives only in the HTTP client's
headers: it is never recorded in settings, files, logs or results, and error messages are
scrubbed of it.

One request per image (so a content-policy refusal hits one probe, not its siblings), at most
``concurrency`` in flight and at most ``rpm`` started per minute; 408, 409, 429 (honouring
``Retry-After`` / ``retry-after-ms``), 5xx, timeouts, dropped connections and malformed
answers are retried with exponential back-off (tenacity). A content-policy refusal is not an
error: the probe gets a placeholder flagged like a safety checker's refusal and a
``withheld.jsonl`` record with the API's message (:mod:`benchmark.contract.withheld`). These APIs take
no seed, so the images are not reproducible and the results say so.

Bounded on every side: before anything heavy loads, :func:`check_api_endpoint` asks
``GET {api_base}/models`` (no image is made; it checks the URL, the key and the model name) and
fails in one line; a server that answers it 405 or 501 (one that serves only
``POST /images/generations``, as in-house wrappers do) is used without the model name checked,
and says so. Every answer is read within a deadline (``deadline`` per attempt, headers included:
a watchdog closes the connection of a server that trickles its answer) and a size cap, as JSON
by the strict bounded reader of request files
(:func:`benchmark.contract.bounded_json.load_bounded_json`); one probe's attempts together stop
at ``probe_deadline`` from its first request (default 600 s: a server that trickled its headers
held a probe for 35 minutes, 300 s times 7 attempts), with one line, and the first failure of a
batch stops its other requests at once (they ran on before, up to another ``probe_deadline``
each when ``concurrency`` was below the batch); while a batch waits, a line on stderr every
minute (or tenth of ``probe_deadline``) says what it waits for; ``Retry-After`` is capped (``retry_after_cap``);
4xx answers other than 408 / 409 / 429 are never retried. An image is checked from its header
before it is decoded: one larger than the size asked for, or one the supplied-images rule
refuses (transparency, a side under 32 px:
:func:`benchmark.contract.image_provenance.load_scorable_image`, what ``--images`` calls), is
withheld by the benchmark and recorded under its own reason (``too large``, ``tiny``,
``transparent``, ``not colour``), apart from the API's content-policy refusals.

The API base is a plain URL: credentials in it are refused and never echoed
(:func:`base_url_problem`): user info, a query or a fragment, and a path segment that is the key
or looks like one (:func:`key_like`).
"""

from __future__ import annotations

import base64
import io
import math
import os
import re
import socket
import struct
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Mapping

from benchmark.contract.bounded_json import RefusedJson, load_bounded_json
from benchmark.contract import image_provenance
from benchmark.contract.image_provenance import UnscorableImage, api_provenance
from benchmark.contract.withheld import UNSCORABLE, placeholder_image
from benchmark.present.progress import say

from .errors import MalformedSpecError
from .generation_output import GenerationOutput

__all__ = ["API_MODELS", "DEFAULT_API_BASE", "ApiError", "OpenAIImagesModel", "base_url_problem", "check_api_endpoint",
           "check_api_model", "check_rpm", "estimate_requests", "key_like", "split_api_options"]

PROVIDER = "openai"
DEFAULT_API_BASE = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
# Options that say how to reach the API, not what it generates: kept out of the recorded
# settings (a resume may change them).
CONNECTION_OPTIONS = ("api_base", "api_key_env", "concurrency", "rpm", "timeout", "max_retries", "backoff",
                      "deadline", "retry_after_cap", "preflight_deadline", "probe_deadline")
REFUSAL_CODES = ("content_policy_violation", "moderation_blocked")
RETRIED_4XX = (408, 409, 429)     # the only 4xx answers worth asking again; other 4xx stop at once
MAX_ANSWER_BYTES = 64 * 2**20     # a 1536x1024 PNG in base64 is about 4 MB
MAX_ANSWER_DEPTH = 16             # the API's answers nest 3 levels
MIN_RPM = 0.01                    # one request every 100 minutes
DEFAULTS = {"concurrency": 4, "rpm": 60.0, "timeout": 120.0, "max_retries": 6, "backoff": 1.0,
            "deadline": 300.0, "retry_after_cap": 60.0, "preflight_deadline": 8.0, "probe_deadline": 600.0}
#: ``GET /models`` answers of a server that is there but cannot list its models
NO_MODEL_LIST = (405, 501)
#: how API keys of the common providers start (OpenAI sk- / sk-proj-, Anthropic sk-ant-, Hugging
#: Face hf_, Google AIza, GitHub ghp_ / github_pat_, Groq gsk_, xAI xai-, Slack xox.-, ...)
KEY_PREFIXES = re.compile(r"^(sk|rk|pk|ak)[-_]|^(hf|gsk|ghp|gho|ghs|ghu|github_pat)_|^xai-|^xox[abprs]-|^AIza|"
                          r"^(api|access|secret)[-_]?key[-_=]", re.IGNORECASE)
#: a token this long (base64 / base62 keys) that mixes letters and digits is taken for a key;
#: UUIDs (36) and 32-hex account IDs are shorter and pass
KEY_LIKE_LENGTH = 40
PRICES_AS_OF = "OpenAI's list prices of 2025"
#: the longest silence while a batch waits for its images: a line on stderr at least this often
#: (or every tenth of ``probe_deadline``, when that is shorter)
WAIT_NOTICE_S = 60.0


@dataclass(frozen=True)
class ApiModel:
    sizes: tuple[str, ...]
    default_size: str
    qualities: tuple[str, ...]
    default_quality: str | None
    price: Mapping[tuple[str, str | None], float]  # (size, quality) -> USD per image
    b64_parameter: bool = True                      # takes response_format=b64_json
    styles: tuple[str, ...] = ()


API_MODELS: dict[str, ApiModel] = {
    "dall-e-2": ApiModel(("256x256", "512x512", "1024x1024"), "1024x1024", (), None,
                         {("256x256", None): 0.016, ("512x512", None): 0.018, ("1024x1024", None): 0.020}),
    "dall-e-3": ApiModel(("1024x1024", "1792x1024", "1024x1792"), "1024x1024", ("standard", "hd"), "standard",
                         {("1024x1024", "standard"): 0.040, ("1792x1024", "standard"): 0.080,
                          ("1024x1792", "standard"): 0.080, ("1024x1024", "hd"): 0.080,
                          ("1792x1024", "hd"): 0.120, ("1024x1792", "hd"): 0.120}, styles=("vivid", "natural")),
    "gpt-image-1": ApiModel(("1024x1024", "1536x1024", "1024x1536"), "1024x1024", ("low", "medium", "high"),
                            "medium", {("1024x1024", "low"): 0.011, ("1024x1024", "medium"): 0.042,
                                       ("1024x1024", "high"): 0.167, ("1536x1024", "low"): 0.016,
                                       ("1536x1024", "medium"): 0.063, ("1536x1024", "high"): 0.25,
                                       ("1024x1536", "low"): 0.016, ("1024x1536", "medium"): 0.063,
                                       ("1024x1536", "high"): 0.25}, b64_parameter=False),
}


class ApiError(ValueError):
    """The API cannot be used as asked (bad key, unknown model, retries spent); one line."""


class _Stopped(Exception):
    """Another request of the batch failed: this one stops at once (its answer would be dropped)."""


@dataclass
class _Waiting:
    """One probe's request as the batch's wait loop sees it: when its first attempt started, which
    attempt runs now, whether it is done."""

    probe_id: str
    started: float | None = None
    attempt: int = 0
    done: bool = False


class _Transient(Exception):
    """A failure worth retrying; ``retry_after``: the seconds the server asked for, if any."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


def split_api_options(options: Mapping[str, Any]) -> tuple[dict, dict]:
    """(connection options, request settings) of ``--set`` / ``--api-*`` values."""
    conn = {k: v for k, v in options.items() if k in CONNECTION_OPTIONS and v is not None}
    return conn, {k: v for k, v in options.items() if k not in CONNECTION_OPTIONS}


def _request_settings(name: str, settings: Mapping[str, Any]) -> dict:
    spec = API_MODELS[name]
    known = {"size", "quality", "style"}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise MalformedSpecError(f"openai:{name} takes no setting {unknown[0]!r} (it takes size, quality, style; "
                                 f"and --api-base, --api-key-env, --api-concurrency, --api-rpm)")
    out = {"size": str(settings.get("size") or spec.default_size)}
    if out["size"] not in spec.sizes:
        raise MalformedSpecError(f"openai:{name} makes sizes {', '.join(spec.sizes)}, not {out['size']!r}")
    quality = settings.get("quality") or spec.default_quality
    if quality is not None:
        if quality not in spec.qualities:
            raise MalformedSpecError(f"openai:{name} takes quality {', '.join(spec.qualities) or 'none'}, "
                                     f"not {quality!r}")
        out["quality"] = str(quality)
    if settings.get("style") is not None:
        if settings["style"] not in spec.styles:
            raise MalformedSpecError(f"openai:{name} takes style {', '.join(spec.styles) or 'none'}, "
                                     f"not {settings['style']!r}")
        out["style"] = str(settings["style"])
    return out


def _option_name(key: str) -> str:
    return f"--api-{key}" if key in ("concurrency", "rpm") else f"--set {key}"


def _positive(conn: Mapping, key: str, default: float | None = None, kind=float) -> Any:
    value = conn.get(key, DEFAULTS[key] if default is None else default)
    try:
        value = kind(value)
    except (TypeError, ValueError, OverflowError):
        raise MalformedSpecError(f"{_option_name(key)} must be a number, got {value!r}") from None
    if not math.isfinite(value) or (value <= 0 and not (key == "max_retries" and value == 0)):
        raise MalformedSpecError(f"{_option_name(key)} must be a positive finite number, got {value!r}")
    if key == "rpm":
        check_rpm(value)
    return value


def check_rpm(value: float) -> float:
    """``--api-rpm``: a finite rate of at least :data:`MIN_RPM` per minute (ValueError otherwise)."""
    if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= MIN_RPM):
        raise MalformedSpecError(f"--api-rpm must be a finite number of requests per minute, at least {MIN_RPM:g} "
                                 f"(one every {1 / MIN_RPM:g} min), got {value!r}")
    return float(value)


def key_like(segment: str, key: str | None = None) -> bool:
    """Whether a URL path segment (percent-decoded) may be a secret: it is, or holds, ``key`` (8
    characters or more); it starts like a provider's key (:data:`KEY_PREFIXES`) followed by at least
    8 more characters (12 in all); or it is a run of :data:`KEY_LIKE_LENGTH` or more letters, digits and
    ``-_.~+/=`` that mixes letters and digits (a base64 / base62 token)."""
    text = urllib.parse.unquote(segment)
    if key and len(key) >= 8 and key in text:
        return True
    if KEY_PREFIXES.match(text) and len(text) >= 12:
        return True
    return (len(text) >= KEY_LIKE_LENGTH and re.fullmatch(r"[A-Za-z0-9._~+/=-]+", text) is not None
            and re.search(r"[A-Za-z]", text) is not None and re.search(r"[0-9]", text) is not None)


def base_url_problem(base: str, key: str | None = None) -> str | None:
    """Why ``base`` cannot be an API base URL (None when it can), without echoing any part of it
    that may be a key: not http(s); user info (``user:...@``), a query or a fragment; a path
    segment that is the key (``key``, the value of ``--api-key-env``'s variable) or looks like
    one (:func:`key_like`). URLs are recorded in run_config.json, results.json and the report."""
    if not re.match(r"^https?://[^\s/]+", base):
        return f"must be an http(s) URL such as {DEFAULT_API_BASE}"
    parts = urllib.parse.urlsplit(base)
    shown = f"{parts.scheme}://{parts.hostname or '?'}"
    advice = ("give the key only in the environment variable --api-key-env names, never in a URL (URLs are "
              "recorded in the run's files)")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return f"holds credentials (user:...@ in {shown}/...): {advice}"
    if parts.query or parts.fragment or "?" in base or "#" in base:
        return f"has a query string or fragment ({shown}/...?...): an API base is a plain URL; {advice}"
    segments = [s for s in parts.path.split("/") if s]
    for i, segment in enumerate(segments, 1):
        if key_like(segment, key):
            what = "the API key" if key and len(key) >= 8 and key in urllib.parse.unquote(segment) else \
                "what looks like a key (a provider's key prefix, or a long token of letters and digits)"
            return f"holds {what} as path segment {i} of {len(segments)} ({shown}/.../***): {advice}"
    return None


def check_api_model(name: str, options: Mapping[str, Any]) -> str:
    """Everything about ``openai:NAME`` and its options that can fail before a request: the model,
    sizes and qualities, the API base URL, the key's variable. Returns the plan's description."""
    if name not in API_MODELS:
        raise MalformedSpecError(f"unknown OpenAI image model {name!r}: use openai:{', openai:'.join(API_MODELS)}")
    conn, settings = split_api_options(options)
    _request_settings(name, settings)
    base = str(conn.get("api_base") or DEFAULT_API_BASE)
    env = str(conn.get("api_key_env") or DEFAULT_KEY_ENV)
    problem = base_url_problem(base, os.environ.get(env, "").strip() or None)
    if problem:
        raise MalformedSpecError(f"--api-base {problem}")
    if not os.environ.get(env, "").strip():
        raise ApiError(f"openai:{name} needs an API key in the environment variable {env} (set it, or name "
                       "another with --api-key-env); the key is never written to any file")
    for key, kind in (("concurrency", int), ("rpm", float), ("timeout", float), ("max_retries", int),
                      ("backoff", float), ("deadline", float), ("retry_after_cap", float),
                      ("preflight_deadline", float), ("probe_deadline", float)):
        _positive(conn, key, None, kind)
    return f"OpenAI Images API at {base.rstrip('/')}"


#: (model, API base, key variable) whose endpoint this process has checked already
_ENDPOINTS_CHECKED: set[tuple[str, str, str]] = set()


def check_api_endpoint(name: str, options: Mapping[str, Any]) -> None:
    """Preflight, before the plan and without generating an image: ``GET {api_base}/models`` with
    the key. An API base that cannot be reached, answers 404 or a page that is not JSON, a key
    it refuses, or a model list without ``name`` fail in one line (:class:`ApiError`), within
    ``preflight_deadline`` seconds (default 8). Checked once per process: ``run`` checks before
    anything heavy loads (:func:`benchmark.commands.external_models.check_api_first`), then its
    preflight asks again."""
    from benchmark.extras import require

    require("PIL", "httpx", "tenacity", extra="audit", purpose="call an image-generation API")
    model = OpenAIImagesModel(name, **options)
    checked = (name, model.api_base, model.key_env)
    if checked in _ENDPOINTS_CHECKED:  # `run` checks it before anything heavy loads, then the preflight asks again
        model.close()
        return
    try:
        model.check_endpoint()
    finally:
        model.close()
    _ENDPOINTS_CHECKED.add(checked)


def estimate_requests(name: str, options: Mapping[str, Any], n_images: int) -> str:
    """The plan's line: requests, list-price cost and the shortest time the rate limit allows."""
    conn, settings = split_api_options(options)
    req = _request_settings(name, settings)
    price = API_MODELS[name].price.get((req["size"], req.get("quality")))
    base = str(conn.get("api_base") or DEFAULT_API_BASE)
    rpm = float(conn.get("rpm", 60))
    cost = (f"about ${n_images * price:,.2f} at ${price:.3f} per {req['size']} image ({PRICES_AS_OF}; "
            f"check your provider's)" if price is not None else "cost: no list price known")
    if base.rstrip("/") != DEFAULT_API_BASE:
        cost += f"; {base} may charge otherwise"
    minutes = n_images / rpm if rpm else 0.0
    return (f"{n_images} request(s), one image each, before retries; {cost}; at most "
            f"{int(conn.get('concurrency', 4))} in flight and {rpm:g}/min, so at least {minutes:.1f} min")


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        try:
            return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
        except (TypeError, ValueError):
            return None


class _RateLimiter:
    """At most ``rpm`` request starts per minute, shared by the worker threads."""

    def __init__(self, rpm: float):
        self.interval = 60.0 / rpm
        self.lock = threading.Lock()
        self.next_start = 0.0

    def wait(self, stop: threading.Event) -> None:
        """Until this request's start; :class:`_Stopped` when ``stop`` is set meanwhile."""
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next_start)
            self.next_start = start + self.interval
        if start > now and stop.wait(start - now):
            raise _Stopped()


class OpenAIImagesModel:
    """``openai:NAME``: one POST per image; see the module docstring. ``generate_probes(rows)``
    is what the generation stage calls (refusals come back in ``withheld``)."""

    is_builtin = False
    revision = None

    def __init__(self, name: str, **options: Any):
        check_api_model(name, options)
        import httpx

        conn, settings = split_api_options(options)
        self.name = name
        self.model_id = f"{PROVIDER}:{name}"
        self.request_settings = _request_settings(name, settings)
        self.api_base = str(conn.get("api_base") or DEFAULT_API_BASE).rstrip("/")
        self.concurrency = _positive(conn, "concurrency", None, int)
        self.max_retries = _positive(conn, "max_retries", None, int)
        self.backoff = _positive(conn, "backoff")
        self.deadline = _positive(conn, "deadline")
        self.retry_after_cap = _positive(conn, "retry_after_cap")
        self.preflight_deadline = _positive(conn, "preflight_deadline")
        self.probe_deadline = _positive(conn, "probe_deadline")
        self._limiter = _RateLimiter(_positive(conn, "rpm"))
        self.key_env = str(conn.get("api_key_env") or DEFAULT_KEY_ENV)
        key = os.environ[self.key_env].strip()
        self._scrub = _scrubber(key)
        self.shown_base = self._scrub(self.api_base)  # what messages show: never the key
        self._said_capped = threading.Event()
        self._cuts: set = set()  # the watchdogs' cut of every exchange in flight (a failed batch cuts them all)
        self._cuts_lock = threading.Lock()
        self.timeout = timeout = _positive(conn, "timeout")
        # no keep-alive: every request has its own connection, which the deadline's watchdog can cut
        self._client = httpx.Client(base_url=self.api_base, timeout=timeout, follow_redirects=False,
                                    limits=httpx.Limits(max_keepalive_connections=0),
                                    headers={"Authorization": f"Bearer {key}"})
        # what determines the images (run_config.json identity); no key, no connection options
        self.settings = {"kind": "image API", "api": "openai-images", "api_base": self.api_base,
                         "api_model": name, **self.request_settings, "n": 1, "seeds": "not controllable"}

    @property
    def provenance(self) -> dict:
        """results.json ``provenance``: the images came from an API, which took no seed."""

        return api_provenance(provider=PROVIDER, api_base=self.api_base, model=self.name,
                              settings=self.request_settings, seeds_controlled=False)

    def __repr__(self) -> str:
        return f"OpenAIImagesModel({self.model_id!r}, api_base={self.api_base!r})"

    def _body(self, prompt: str) -> dict:
        body = {"model": self.name, "prompt": prompt, "n": 1, **self.request_settings}
        if API_MODELS[self.name].b64_parameter:
            body["response_format"] = "b64_json"
        return body

    def close(self) -> None:
        self._client.close()

    def _clean(self, text: str) -> str:
        return self._scrub(" ".join(str(text).split()))[:300]

    def _exchange(self, method: str, path: str, *, deadline: float, json: Any = None,
                  stop: threading.Event | None = None) -> _Answer:
        """One HTTP exchange read in full within ``deadline`` seconds (a watchdog shuts the socket
        of a server that trickles its answer, headers included) and :data:`MAX_ANSWER_BYTES`.
        Transport failures and the deadline raise :class:`_Transient`; an oversized body ApiError."""
        import httpx

        streams: list = []
        expired = threading.Event()

        def shut(stream) -> None:
            sock = stream.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        def trace(event: str, info: dict) -> None:
            if event.endswith("connect_tcp.complete") and info.get("return_value") is not None:  # direct or proxy
                streams.append(info["return_value"])
                if expired.is_set():  # cut while it connected
                    shut(info["return_value"])

        def cut() -> None:
            expired.set()
            for stream in list(streams):
                shut(stream)

        watchdog = threading.Timer(deadline, cut)
        watchdog.daemon = True
        watchdog.start()
        with self._cuts_lock:
            self._cuts.add(cut)
        late = f"no complete answer within the {deadline:.3g} s deadline"
        t_end = time.monotonic() + deadline
        try:
            if stop is not None and stop.is_set():  # the batch failed before this exchange could be cut with the others
                raise _Stopped()
            with self._client.stream(method, path, json=json, timeout=min(self.timeout, deadline),
                                     extensions={"trace": trace}) as resp:
                chunks, size = [], 0
                for chunk in resp.iter_bytes():
                    size += len(chunk)
                    if size > MAX_ANSWER_BYTES:
                        raise ApiError(f"{self.model_id} at {self.shown_base}: an answer over "
                                       f"{MAX_ANSWER_BYTES // 2**20} MiB, refused")
                    if time.monotonic() > t_end:
                        raise _Transient(late)
                    chunks.append(chunk)
                return _Answer(resp.status_code, resp.headers, b"".join(chunks), resp.reason_phrase or "")
        except httpx.TimeoutException as err:
            raise _Transient(late if expired.is_set() else f"timed out ({type(err).__name__})") from None
        except (httpx.TransportError, httpx.StreamError) as err:
            raise _Transient(late if expired.is_set() else f"connection failed ({type(err).__name__})") from None
        finally:
            watchdog.cancel()
            with self._cuts_lock:
                self._cuts.discard(cut)

    def _json(self, answer: _Answer) -> Any:
        """The answer's JSON by the bounded reader; RefusedJson when it is not JSON or over a limit."""
        return load_bounded_json(answer.body, MAX_ANSWER_DEPTH)

    def _error_message(self, answer: _Answer, doc: Any) -> tuple[str, str | None]:
        error = doc.get("error") if isinstance(doc, dict) else None
        error = error if isinstance(error, dict) else {}
        code = error.get("code") if isinstance(error.get("code"), str) else None
        return self._clean(error.get("message") or answer.reason or f"HTTP {answer.status}"), code

    def check_endpoint(self) -> None:
        """See :func:`check_api_endpoint`."""
        where = f"{self.model_id}: --api-base {self.shown_base}"
        try:
            answer = self._exchange("GET", "/models", deadline=self.preflight_deadline)
        except _Transient as err:
            raise ApiError(f"{where} cannot be reached: {self._clean(err)} (checked with GET /models before "
                           "anything is written)") from None
        status = answer.status
        try:
            doc = self._json(answer)
        except RefusedJson as err:
            doc, not_json = None, err
        else:
            not_json = None
        message, _ = self._error_message(answer, doc)
        if status in (401, 403):
            raise ApiError(f"{where} refused the key in ${self.key_env} (HTTP {status}: {message})")
        if status == 404:
            raise ApiError(f"{where}: GET {self.shown_base}/models answered HTTP 404: not the base URL of an "
                           f"OpenAI-style API (it usually ends in /v1, as {DEFAULT_API_BASE} does)")
        if status == 429:  # the URL and the key are right; the run waits as the server asks
            return
        if status in NO_MODEL_LIST:  # there, but serves no model list (e.g. only POST /images/generations)
            print(f"{where}: GET /models answered HTTP {status} (no model list), so the model name "
                  f"{self.name} is not checked; going on", file=sys.stderr)
            return
        if status >= 300 or status < 200:
            raise ApiError(f"{where}: GET /models answered HTTP {status}: {message}")
        if not_json is not None:
            kind = self._clean(answer.headers.get("content-type", "no content type"))
            raise ApiError(f"{where}: GET /models answered HTTP {status} with a body that is not JSON "
                           f"({kind}; {not_json}): not an OpenAI-style API; check --api-base")
        listed = doc.get("data") if isinstance(doc, dict) else None
        ids = [m.get("id") for m in listed if isinstance(m, dict)] if isinstance(listed, list) else []
        ids = [str(i) for i in ids if isinstance(i, str)]
        if ids and self.name not in ids:
            shown = [self._clean(i)[:40] for i in ids if "image" in i or "dall" in i][:5] or \
                [self._clean(i)[:40] for i in ids[:5]]
            raise ApiError(f"{where} does not list the model {self.name} (GET /models lists {len(ids)}, e.g. "
                           f"{', '.join(shown)}); choose one it serves, or check that your key has access")

    def _post_once(self, prompt: str, t_end: float, stop: threading.Event):
        """One request, answered before ``t_end`` (the probe's deadline; ``deadline`` seconds at most):
        ("image", PIL image), ("refused", message) or (a reason of
        :data:`benchmark.contract.withheld.UNSCORABLE`, message); raises _Transient or ApiError."""
        left = t_end - time.monotonic()
        if left <= 0:
            raise _Transient(f"the {self.probe_deadline:g} s deadline of one probe had passed")
        deadline = min(self.deadline, left)
        answer = self._exchange("POST", "/images/generations", json=self._body(prompt), deadline=deadline, stop=stop)
        status = answer.status
        if status in RETRIED_4XX or status >= 500:
            raise _Transient(f"HTTP {status}", _retry_after(answer.headers))
        try:
            doc = self._json(answer)
        except RefusedJson as err:
            if err.refused:  # nested too deep, a number over the limits...: refused, not asked again
                raise ApiError(f"{self.model_id} at {self.shown_base}: HTTP {status}: an answer the bounded "
                               f"JSON reader refuses ({self._clean(err)})") from None
            if 200 <= status < 300:  # a cut or garbled answer: asked again
                raise _Transient(f"HTTP {status} with a body that is not JSON") from None
            doc = None
        message, code = self._error_message(answer, doc)
        if 400 <= status < 500 or (isinstance(doc, dict) and doc.get("error")):
            if code in REFUSAL_CODES or "safety system" in message.lower():
                return "refused", message
            raise ApiError(f"{self.model_id} at {self.shown_base}: HTTP {status}: {message}")
        if not 200 <= status < 300:  # 1xx / 3xx: redirects are not followed
            raise ApiError(f"{self.model_id} at {self.shown_base}: HTTP {status} ({message}; redirects are not "
                           "followed: give the final URL as --api-base)")
        return self._decode(doc)

    def _decode(self, doc: Any):
        """("image", RGB image), or (its reason, why) for an image the benchmark does not score."""
        try:
            data = base64.b64decode(doc["data"][0]["b64_json"], validate=True)
        except (KeyError, IndexError, TypeError, ValueError):
            raise _Transient("the answer has no decodable data[0].b64_json image") from None
        asked = tuple(int(v) for v in self.request_settings["size"].split("x"))
        size = _header_size(data)
        if size is None:
            raise _Transient("the answer's data[0].b64_json is not an image") from None
        if size[0] > asked[0] or size[1] > asked[1]:
            shown = f"a {size[0]}x{size[1]} image" if size != _BOMB else "an image its header declares enormous"
            return "too large", (f"not scored: the API answered {shown} for a {asked[0]}x{asked[1]} request "
                                 "(larger than asked; not decoded)")
        try:  # the rule images supplied as a folder pass too (transparency, a side under 32 px...)
            return "image", image_provenance.load_scorable_image(data, label="the API's image")
        except UnscorableImage as err:
            if err.reason not in UNSCORABLE:  # a cut answer: asked again
                raise _Transient("the answer's image cannot be decoded") from None
            return err.reason, f"not scored: {self._clean(err)}"

    def _wait(self, retry_state) -> float:
        from tenacity import wait_exponential, wait_random

        exc = retry_state.outcome.exception()
        if isinstance(exc, _Transient) and exc.retry_after is not None:
            if exc.retry_after > self.retry_after_cap and not self._said_capped.is_set():
                self._said_capped.set()
                print(f"{self.model_id}: the server asked to wait {exc.retry_after:,.0f} s before retrying; waiting "
                      f"{self.retry_after_cap:g} s at most (the cap) each time", file=sys.stderr)
            return min(exc.retry_after, self.retry_after_cap)  # what the server asked for, capped
        return (wait_exponential(multiplier=self.backoff, max=60.0) + wait_random(0, self.backoff))(retry_state)

    def request(self, prompt: str, stop: threading.Event | None = None, waiting: _Waiting | None = None):
        """One image, retried (see the module docstring); ApiError (one line) once retries are spent
        or the probe's total deadline (``probe_deadline`` from its first request, across attempts
        and waits) has passed. ``stop``: set when another request of the batch failed (this one
        then raises _Stopped at once); ``waiting``: updated for the wait loop's progress lines."""
        from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt

        stop = stop or threading.Event()
        waiting = waiting or _Waiting("")
        t_end = math.inf

        def past_deadline(retry_state) -> bool:  # no attempt starts after the probe's deadline, waits included
            return time.monotonic() + retry_state.upcoming_sleep >= t_end

        retrying = Retrying(retry=retry_if_exception_type(_Transient), wait=self._wait, sleep=stop.wait,
                            stop=stop_after_attempt(self.max_retries + 1) | past_deadline)
        try:
            for attempt in retrying:
                with attempt:
                    if stop.is_set():
                        raise _Stopped()
                    self._limiter.wait(stop)
                    if waiting.started is None:  # the probe's clock starts at its first request, not in the rate queue
                        waiting.started = time.monotonic()
                        t_end = waiting.started + self.probe_deadline
                    waiting.attempt = attempt.retry_state.attempt_number
                    return self._post_once(prompt, t_end, stop)
        except RetryError as err:
            last, n = err.last_attempt.exception(), err.last_attempt.attempt_number
            spent = (f"no image within the {self.probe_deadline:g} s total deadline of one probe ({n} attempt"
                     f"{'s' if n != 1 else ''})" if time.monotonic() >= t_end - 1.0 or n <= self.max_retries
                     else f"gave up after {n} attempts")
            raise ApiError(f"{self.model_id} at {self.shown_base}: {spent}: {self._clean(last)}; rerun the "
                           "same command to resume (the images made so far are kept)") from None
        finally:
            waiting.done = True

    def _notice_every(self) -> float:
        """Seconds between the lines said while a batch waits: a minute, or a tenth of the probe's deadline."""
        return min(WAIT_NOTICE_S, self.probe_deadline / 10)

    def _say_waiting(self, waits: list[_Waiting], since: float) -> None:
        """One line about the batch's requests still out (the oldest one's attempt and deadline)."""
        out = [w for w in waits if not w.done]
        if not out:
            return
        now = time.monotonic()
        oldest = min(out, key=lambda w: w.started if w.started is not None else now)
        if oldest.started is None:
            what = "waiting for the rate limit (--api-rpm)"
        else:
            left = max(oldest.started + self.probe_deadline - now, 0.0)
            what = (f"probe {oldest.probe_id}: attempt {oldest.attempt} of at most {self.max_retries + 1}, "
                    f"{left:.0f} s left of its {self.probe_deadline:g} s deadline")
        say(f"{self.model_id} at {self.shown_base}: still waiting for {len(out)} of {len(waits)} image(s) of this "
            f"batch after {now - since:.0f} s ({what})")

    def _answers(self, rows: list[dict]) -> list:
        """Every row's answer, the requests run ``concurrency`` at a time; a line on stderr every
        :meth:`_notice_every` seconds while some are out. The first request that fails stops the
        others at once (their connections cut, the queued ones never started) and is raised: the
        batch ends within ``probe_deadline`` of the failing probe's first request, whatever
        ``--api-concurrency`` and ``--batch-size`` are."""
        from concurrent.futures import FIRST_EXCEPTION, wait

        stop = threading.Event()
        waits = [_Waiting(str(r.get("probe_id", i))) for i, r in enumerate(rows)]
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, max(len(rows), 1)), thread_name_prefix="t2ibench-api")
        futures = [pool.submit(self.request, str(r["prompt"]), stop, w) for r, w in zip(rows, waits)]
        since = time.monotonic()
        try:
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, timeout=self._notice_every(), return_when=FIRST_EXCEPTION)
                failed = next((f for f in finished if f.exception() is not None), None)
                if failed is not None:
                    raise failed.exception()
                if pending:
                    self._say_waiting(waits, since)
            return [f.result() for f in futures]
        except BaseException:
            stop.set()  # the others: queued ones never start, running ones stop at their next step
            with self._cuts_lock:
                cuts = list(self._cuts)
            for cut in cuts:  # ... and the exchanges in flight now are cut
                cut()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def generate_probes(self, rows: list[dict]):
        answers = self._answers(rows)
        size = tuple(int(v) for v in self.request_settings["size"].split("x"))
        images, flags, withheld = [], [], []
        for row, (kind, value) in zip(rows, answers):
            if kind == "image":
                images.append(value)
                flags.append(None)
            else:  # refused by the API (content policy), or withheld by the benchmark: by its reason
                images.append(placeholder_image(size))
                flags.append(True)
                withheld.append({"probe_id": row["probe_id"], "reason": kind, "message": value})
        return GenerationOutput(images=images, nsfw=flags, withheld=withheld)


@dataclass
class _Answer:
    status: int
    headers: Any
    body: bytes
    reason: str


def _scrubber(key: str):
    """A function masking ``key`` in text: as is, reversed, URL-quoted, hex, base64 (standard and
    URL-safe, at each alignment inside a longer encoded text), anything shaped like an OpenAI key,
    and any run of 32 or more key-like characters (an encoding this list does not know)."""
    forms = {key, key[::-1], urllib.parse.quote(key, safe=""), key.encode().hex()}
    raw = key.encode()
    for text in (raw, raw[::-1]):
        for offset in range(3):
            whole = text[offset:][: 3 * ((len(text) - offset) // 3)]
            if whole:
                forms.add(base64.b64encode(whole).decode())
                forms.add(base64.urlsafe_b64encode(whole).decode())
    forms = sorted((f for f in forms if len(f) >= 4), key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(f) for f in forms) + r"|sk-[A-Za-z0-9_*.-]{6,}|[A-Za-z0-9+/=_-]{32,}",
                         re.IGNORECASE)
    return lambda text: pattern.sub("***", text)


_BOMB = (2**31, 2**31)  # what _header_size says of a header PIL refuses as a decompression bomb


def _header_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from the image's header, without decoding it (PNG: its IHDR chunk; other
    formats: PIL's lazy open, which reads only the header); None when it is not an image."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24 and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    import warnings

    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as im:
                return im.size
    except Image.DecompressionBombError:
        return _BOMB  # larger than any size asked for
    except (OSError, ValueError, SyntaxError):
        return None
