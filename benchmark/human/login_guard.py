"""An ASGI middleware that answers 401 to Gradio routes its own login check leaves open.

Gradio (6.x) checks the login on its pages and API, but ``/gradio_api/heartbeat/<session>``
(an event stream a page keeps open) only reads the user, so an anonymous client could hold
connections open for as long as it liked. With a login (``auth``) this middleware refuses
those routes to a client without a valid session cookie, before Gradio sees the request.
"""

from __future__ import annotations

from typing import Any

#: routes Gradio serves without its login check
GUARDED_PREFIXES = ("/gradio_api/heartbeat/",)


def _user(app: Any, cookies: dict[str, str]) -> str | None:
    cookie_id = getattr(app, "cookie_id", None)
    token = cookies.get(f"access-token-{cookie_id}") or cookies.get(f"access-token-unsecure-{cookie_id}")
    return getattr(app, "tokens", {}).get(token) if token else None


class GuardedRoutesNeedLogin:
    """401 for a GUARDED_PREFIXES request without a logged-in session, when the app has a login."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") == "http" and scope.get("path", "").startswith(GUARDED_PREFIXES):
            from starlette.requests import Request

            gradio_app = scope.get("app")
            if getattr(gradio_app, "auth", None) is not None and _user(gradio_app, Request(scope).cookies) is None:
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": b'{"detail": "Not authenticated"}'})
                return
        await self.app(scope, receive, send)


def middleware() -> list:
    """``app_kwargs["middleware"]`` for ``Blocks.launch``."""
    from starlette.middleware import Middleware

    return [Middleware(GuardedRoutesNeedLogin)]
