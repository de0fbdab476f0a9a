"""Image-generation APIs that speak the OpenAI Images API (``--model openai:dall-e-2``).

``POST {api_base}/images/generations`` with ``model``, ``prompt``, ``n=1``, ``size`` (and
``quality`` / ``style`` where the model takes them, ``response_format=b64_json`` for the
DALL-E models; gpt-image-1 always answers base64). ``--api-base`` points it at any provider
that speaks the same API. The key is read from ``OPENAI_API_KEY`` (or the variable
``--api-key-env`` names) when the model is loaded and lives only in the HTTP client's
headers: it is never recorded in settings, files, logs or results, and error messages are
scrubbed of it.

One request per image (so a content-policy refusal hits one probe, not its siblings), at most
``concurrency`` in flight and at most ``rpm`` started per minute; 429 (honouring
``Retry-After`` / ``retry-after-ms``), 5xx, timeouts, dropped connections and malformed
answers are retried with exponential back-off (tenacity). A content-policy refusal is not an
error: the probe gets a placeholder flagged like a safety checker's refusal and a
``withheld.jsonl`` record with the API's message (:mod:`benchmark.contract.withheld`). These APIs take
no seed, so the images are not reproducible and the results say so.
"""

from __future__ import annotations

import base64
import io
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Mapping

from benchmark.contract.image_provenance import api_provenance
from benchmark.contract.withheld import placeholder_image

from .errors import MalformedSpecError
from .generation_output import GenerationOutput

__all__ = ["API_MODELS", "DEFAULT_API_BASE", "ApiError", "OpenAIImagesModel", "check_api_model",
           "estimate_requests", "split_api_options"]

PROVIDER = "openai"
DEFAULT_API_BASE = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
# Options that say how to reach the API, not what it generates: kept out of the recorded
# settings (a resume may change them).
CONNECTION_OPTIONS = ("api_base", "api_key_env", "concurrency", "rpm", "timeout", "max_retries", "backoff")
REFUSAL_CODES = ("content_policy_violation", "moderation_blocked")
PRICES_AS_OF = "OpenAI's list prices of 2025"


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


def _positive(conn: Mapping, key: str, default: float, kind=float) -> Any:
    value = conn.get(key, default)
    try:
        value = kind(value)
    except (TypeError, ValueError):
        raise MalformedSpecError(f"--api-{key.replace('_', '-')} must be a number, got {value!r}") from None
    if value <= 0 and not (key == "max_retries" and value == 0):
        raise MalformedSpecError(f"--api-{key.replace('_', '-')} must be positive, got {value!r}")
    return value


def check_api_model(name: str, options: Mapping[str, Any]) -> str:
    """Everything about ``openai:NAME`` and its options that can fail before a request: the model,
    sizes and qualities, the API base URL, the key's variable. Returns the plan's description."""
    if name not in API_MODELS:
        raise MalformedSpecError(f"unknown OpenAI image model {name!r}: use openai:{', openai:'.join(API_MODELS)}")
    conn, settings = split_api_options(options)
    _request_settings(name, settings)
    base = str(conn.get("api_base") or DEFAULT_API_BASE)
    if not re.match(r"^https?://[^\s/]+", base):
        raise MalformedSpecError(f"--api-base must be an http(s) URL such as {DEFAULT_API_BASE}, got {base!r}")
    env = str(conn.get("api_key_env") or DEFAULT_KEY_ENV)
    if not os.environ.get(env, "").strip():
        raise ApiError(f"openai:{name} needs an API key in the environment variable {env} (set it, or name "
                       "another with --api-key-env); the key is never written to any file")
    for key, default, kind in (("concurrency", 4, int), ("rpm", 60, float), ("timeout", 120, float),
                               ("max_retries", 6, int), ("backoff", 1.0, float)):
        _positive(conn, key, default, kind)
    return f"OpenAI Images API at {base.rstrip('/')}"


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

    def wait(self) -> None:
        with self.lock:
            now = time.monotonic()
            start = max(now, self.next_start)
            self.next_start = start + self.interval
        if start > now:
            time.sleep(start - now)


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
        self.concurrency = _positive(conn, "concurrency", 4, int)
        self.max_retries = _positive(conn, "max_retries", 6, int)
        self.backoff = _positive(conn, "backoff", 1.0, float)
        self._limiter = _RateLimiter(_positive(conn, "rpm", 60, float))
        key = os.environ[str(conn.get("api_key_env") or DEFAULT_KEY_ENV)].strip()
        self._scrub = re.compile(re.escape(key) + r"|sk-[A-Za-z0-9_*.-]{6,}")
        self._client = httpx.Client(base_url=self.api_base, timeout=_positive(conn, "timeout", 120, float),
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

    def _clean(self, text: str) -> str:
        return self._scrub.sub("***", " ".join(str(text).split()))[:300]

    def _post_once(self, prompt: str):
        """One request: ("image", PIL image) or ("refused", message); raises _Transient or ApiError."""
        import httpx

        self._limiter.wait()
        try:
            resp = self._client.post("/images/generations", json=self._body(prompt))
        except httpx.TimeoutException as err:
            raise _Transient(f"timed out ({type(err).__name__})") from None
        except httpx.TransportError as err:
            raise _Transient(f"connection failed ({type(err).__name__})") from None
        if resp.status_code == 429 or resp.status_code >= 500:
            raise _Transient(f"HTTP {resp.status_code}", _retry_after(resp.headers))
        try:
            doc = resp.json()
        except ValueError:
            raise _Transient(f"HTTP {resp.status_code} with a body that is not JSON") from None
        error = doc.get("error") if isinstance(doc, dict) else None
        if resp.status_code >= 400 or error:
            error = error if isinstance(error, dict) else {}
            message = self._clean(error.get("message") or resp.reason_phrase)
            if error.get("code") in REFUSAL_CODES or "safety system" in message.lower():
                return "refused", message
            raise ApiError(f"{self.model_id} at {self.api_base}: HTTP {resp.status_code}: {message}")
        return "image", self._decode(doc)

    def _decode(self, doc: Any):
        from PIL import Image

        try:
            data = base64.b64decode(doc["data"][0]["b64_json"], validate=True)
            with Image.open(io.BytesIO(data)) as im:
                return im.convert("RGB")
        except (KeyError, IndexError, TypeError, ValueError, OSError):
            raise _Transient("the answer has no decodable data[0].b64_json image") from None

    def _wait(self, retry_state) -> float:
        from tenacity import wait_exponential, wait_random

        exc = retry_state.outcome.exception()
        if isinstance(exc, _Transient) and exc.retry_after is not None:
            return min(exc.retry_after, 300.0)  # what the server asked for
        return (wait_exponential(multiplier=self.backoff, max=60.0) + wait_random(0, self.backoff))(retry_state)

    def request(self, prompt: str):
        """One image, retried (see the module docstring); ApiError (one line) once retries are spent."""
        from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt

        retrying = Retrying(retry=retry_if_exception_type(_Transient), wait=self._wait,
                            stop=stop_after_attempt(self.max_retries + 1))
        try:
            for attempt in retrying:
                with attempt:
                    return self._post_once(prompt)
        except RetryError as err:
            last = err.last_attempt.exception()
            raise ApiError(f"{self.model_id} at {self.api_base}: gave up after {self.max_retries + 1} attempts: "
                           f"{self._clean(last)}; rerun the same command to resume") from None

    def generate_probes(self, rows: list[dict]):

        with ThreadPoolExecutor(max_workers=min(self.concurrency, max(len(rows), 1)),
                                thread_name_prefix="t2ibench-api") as pool:
            answers = list(pool.map(lambda r: self.request(str(r["prompt"])), rows))
        size = tuple(int(v) for v in self.request_settings["size"].split("x"))
        images, flags, withheld = [], [], []
        for row, (kind, value) in zip(rows, answers):
            if kind == "refused":
                images.append(placeholder_image(size))
                flags.append(True)
                withheld.append({"probe_id": row["probe_id"], "reason": "refused", "message": value})
            else:
                images.append(value)
                flags.append(None)
        return GenerationOutput(images=images, nsfw=flags, withheld=withheld)
