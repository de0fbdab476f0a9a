"""A local HTTP server on 127.0.0.1 speaking the shape of the OpenAI Images API
(``POST /v1/images/generations``), for the API backend's tests: no internet, no key.

Each answer is scripted per prompt: ``server.script[prompt] = ["429", "ok"]`` answers the
first request for that prompt with a 429 and the next with an image; prompts with no script
(or a spent one) get an image. Actions: ``ok``, ``429`` (Retry-After: 1), ``500``,
``timeout`` (answers after ``slow_seconds``), ``malformed`` (200 with a body that is not
JSON), ``refuse`` (400 content_policy_violation), ``401`` (a message echoing the key, as the
real API does). Misbehaving answers: ``401-b64`` / ``401-rev`` (the key echoed base64-encoded
/ reversed), ``404-html`` (a 404 whose body is an HTML page), ``deep`` (JSON nested 100,000
levels), ``bomb`` (a PNG whose header claims 30,000 x 30,000 pixels), ``big`` (an image twice
the size asked for), ``rgba`` (an image with transparency), ``tiny`` (1 x 1 px),
``429-huge`` (Retry-After: one day), ``trickle`` (headers, then the body one byte every
``trickle_seconds``), ``trickle-head`` (the status line itself one byte at a time), ``blank``
(a black image of the size asked: what a filter that blanks instead of refusing answers).
``default_action``: the action of prompts with no script.

``GET /v1/models`` lists ``models`` (``models_action``: ``ok``, ``html`` (an HTML page with
status 200), ``404-html``, ``401``, ``405`` / ``501`` (a server that serves only
``POST /images/generations``, as in-house wrappers do)). Every request is recorded (time, path, prompt, body,
Authorization header).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import struct
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def png_for(prompt: str, size: str) -> bytes:
    """A PNG whose colours depend on the prompt (so every image has its own bytes): a ramp from a
    colour of the prompt's, never one colour (one-colour images are degenerate: the runner stops
    before scoring a run of them)."""
    import numpy as np
    from PIL import Image

    w, h = (int(v) for v in size.split("x"))
    rgb = np.frombuffer(hashlib.sha256(prompt.encode()).digest()[:3], dtype=np.uint8).astype(np.uint16)
    ramp = np.add.outer(np.arange(h), np.arange(w)).astype(np.uint16)[:, :, None]
    buf = io.BytesIO()
    Image.fromarray(((rgb[None, None, :] + ramp) % 256).astype(np.uint8), "RGB").save(buf, format="PNG")
    return buf.getvalue()


def png_header_claiming(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims ``width`` x ``height`` RGB pixels, with a few bytes of data: what a
    decompression bomb looks like before it is decoded."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 4096))
            + chunk(b"IEND", b""))


def png_of(size: tuple[int, int], mode: str = "RGB", colour=(200, 30, 40)) -> bytes:
    from PIL import Image

    image = Image.new(mode, size, colour if mode == "RGB" else (*colour, 255))
    if mode == "RGBA":
        image.putpixel((0, 0), (0, 0, 0, 0))  # one transparent pixel
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


HTML_PAGE = b"<!doctype html><html><head><title>Welcome</title></head><body>It works!</body></html>"


class _Handler(BaseHTTPRequestHandler):
    server: "FakeImagesServer"

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _send_html(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(HTML_PAGE)))
        self.end_headers()
        self.wfile.write(HTML_PAGE)

    def _echo_key(self, transform) -> None:
        key = str(self.headers.get("Authorization", "")).removeprefix("Bearer ")
        return self._send(401, json.dumps({"error": {
            "code": "invalid_api_key", "message": f"Incorrect API key provided: {transform(key)}."}}).encode())

    def _trickle(self, head: bool) -> None:
        body = json.dumps({"data": [{"b64_json": base64.b64encode(png_for("x", "256x256")).decode()}]}).encode()
        raw = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
               .encode())
        try:
            if head:
                data = raw + body
            else:
                self.wfile.write(raw)
                self.wfile.flush()
                data = body
            for i in range(len(data)):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(self.server.trickle_seconds)
        except OSError:  # the client hung up: what the deadline is for
            pass
        self.close_connection = True

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        srv = self.server
        with srv.lock:
            srv.requests.append({"time": time.monotonic(), "path": self.path, "method": "GET", "prompt": None,
                                 "body": None, "authorization": self.headers.get("Authorization")})
        if self.path != "/v1/models":  # e.g. an --api-base without /v1
            return self._send(404, b'{"error": {"message": "not found"}}')
        if srv.models_action == "404-html":
            return self._send_html(404)
        if srv.models_action in ("405", "501"):
            return self._send(int(srv.models_action), b'{"error": {"message": "not implemented"}}')
        if srv.models_action == "html":
            return self._send_html(200)
        if srv.models_action == "401":
            return self._echo_key(lambda k: k)
        if srv.models_action == "401-b64":
            return self._echo_key(lambda k: base64.b64encode(f"Incorrect API key provided: {k}".encode()).decode())
        listed = [{"id": m, "object": "model", "owned_by": "system"} for m in srv.models]
        self._send(200, json.dumps({"object": "list", "data": listed}).encode())

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        prompt = str(body.get("prompt"))
        srv = self.server
        with srv.lock:
            srv.requests.append({"time": time.monotonic(), "path": self.path, "method": "POST", "prompt": prompt,
                                 "body": body, "authorization": self.headers.get("Authorization")})
            queue = srv.script.get(prompt) or []
            action = queue.pop(0) if queue else srv.default_action
        if self.path != "/v1/images/generations":
            return self._send(404, b'{"error": {"message": "not found"}}')
        if srv.delay:
            time.sleep(srv.delay)
        if action == "429":
            return self._send(429, b'{"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}',
                              {"Retry-After": "1"})
        if action == "500":
            return self._send(500, b'{"error": {"message": "The server had an error"}}')
        if action == "timeout":
            time.sleep(srv.slow_seconds)
        if action == "malformed":
            return self._send(200, b'{"data": [{"b64_json": "iVBOR')
        if action == "refuse":
            return self._send(400, json.dumps({"error": {
                "code": "content_policy_violation", "type": "invalid_request_error", "param": None,
                "message": "Your request was rejected as a result of our safety system."}}).encode())
        if action == "401":
            return self._echo_key(lambda k: k)
        if action == "401-b64":
            return self._echo_key(lambda k: base64.b64encode(f"Incorrect API key provided: {k}".encode()).decode())
        if action == "401-rev":
            return self._echo_key(lambda k: k[::-1])
        if action == "404-html":
            return self._send_html(404)
        if action == "deep":
            return self._send(200, b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        if action == "429-huge":
            return self._send(429, b'{"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}',
                              {"Retry-After": "86400"})
        if action in ("trickle", "trickle-head"):
            return self._trickle(head=action == "trickle-head")
        w, h = (int(v) for v in str(body.get("size") or "256x256").split("x"))
        special = {"bomb": lambda: png_header_claiming(30_000, 30_000), "big": lambda: png_of((2 * w, 2 * h)),
                   "rgba": lambda: png_of((w, h), "RGBA"), "tiny": lambda: png_of((1, 1)),
                   "blank": lambda: png_of((w, h), colour=(0, 0, 0))}
        if action in special:
            data = special[action]()
            return self._send(200, json.dumps({"data": [{"b64_json": base64.b64encode(data).decode()}]}).encode())
        image = base64.b64encode(png_for(prompt, str(body.get("size") or "256x256"))).decode()
        self._send(200, json.dumps({"created": int(time.time()), "data": [{"b64_json": image}]}).encode())


class FakeImagesServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        self.script: dict[str, list[str]] = {}
        self.delay = 0.0          # seconds before every answer
        self.slow_seconds = 2.0   # how long a "timeout" answer takes
        self.trickle_seconds = 0.2  # between two bytes of a "trickle" answer
        self.default_action = "ok"  # for prompts with no script
        self.models_action = "ok"   # GET /v1/models
        self.models = ["dall-e-2", "dall-e-3", "gpt-image-1", "gpt-4o"]
        # shutdown() waits for serve_forever's next poll: at its default 0.5 s that was half a
        # second at the end of every test that starts this server
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def __enter__(self) -> "FakeImagesServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()
