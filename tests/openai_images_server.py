"""A local HTTP server on 127.0.0.1 speaking the shape of the OpenAI Images API
(``POST /v1/images/generations``), for the API backend's tests: no internet, no key.

Each answer is scripted per prompt: ``server.script[prompt] = ["429", "ok"]`` answers the
first request for that prompt with a 429 and the next with an image; prompts with no script
(or a spent one) get an image. Actions: ``ok``, ``429`` (Retry-After: 1), ``500``,
``timeout`` (answers after ``slow_seconds``), ``malformed`` (200 with a body that is not
JSON), ``refuse`` (400 content_policy_violation), ``401`` (a message echoing the key, as the
real API does). Every request is recorded (time, prompt, body, Authorization header).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def png_for(prompt: str, size: str) -> bytes:
    """A PNG whose colour depends on the prompt (so every image has its own bytes)."""
    from PIL import Image

    w, h = (int(v) for v in size.split("x"))
    rgb = tuple(hashlib.sha256(prompt.encode()).digest()[:3])
    buf = io.BytesIO()
    Image.new("RGB", (w, h), rgb).save(buf, format="PNG")
    return buf.getvalue()


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

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        prompt = str(body.get("prompt"))
        srv = self.server
        with srv.lock:
            srv.requests.append({"time": time.monotonic(), "path": self.path, "prompt": prompt, "body": body,
                                 "authorization": self.headers.get("Authorization")})
            queue = srv.script.get(prompt) or []
            action = queue.pop(0) if queue else "ok"
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
            key = str(self.headers.get("Authorization", "")).removeprefix("Bearer ")
            return self._send(401, json.dumps({"error": {
                "code": "invalid_api_key", "message": f"Incorrect API key provided: {key}."}}).encode())
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
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def __enter__(self) -> "FakeImagesServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()
