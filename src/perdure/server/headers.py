"""The headers every response carries, refusals and failures included: a strict Content
Security Policy (no inline script or style, no framing), ``X-Frame-Options``,
``X-Content-Type-Options``, ``Referrer-Policy``, no caching of what a person sees, and
``Strict-Transport-Security`` over HTTPS. An unexpected exception becomes a one-line JSON 500
(its traceback stays in the log) that carries them too."""

from __future__ import annotations

import logging

from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from perdure.core.errors import PerdureError
from perdure.server.errors import error_body

log = logging.getLogger("perdure.server")

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""The dashboard's scripts and styles are files of this server; nothing inline runs, nothing
else loads, forms post only here, and no page may be framed."""

HEADERS = (
    ("content-security-policy", CSP),
    ("x-frame-options", "DENY"),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "same-origin"),
    ("cross-origin-opener-policy", "same-origin"),
    ("cross-origin-resource-policy", "same-origin"),
    ("cache-control", "no-store"),
)
"""Set on every response (``cache-control`` only where the response set none)."""

HSTS = ("strict-transport-security", "max-age=31536000")


class SecurityHeaders:
    """ASGI middleware: :data:`HEADERS` on every HTTP response of ``app``, and a JSON 500
    for an exception no handler took (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve ``scope`` through the app, adding the headers to its response."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS:
                    if name == "cache-control":
                        headers.setdefault(name, value)
                    else:
                        headers[name] = value
                if scope.get("scheme") == "https":
                    headers[HSTS[0]] = HSTS[1]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            if started:
                raise
            log.exception("request %s %s failed", scope.get("method"), scope.get("path"))
            failure = PerdureError(
                f"the server failed: {type(exc).__name__}", fix="see the server's log"
            )
            await JSONResponse(error_body(failure), status_code=500)(scope, receive, sending)
