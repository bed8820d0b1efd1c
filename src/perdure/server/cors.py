"""Cross-origin requests from web apps of other origins (``perdure serve --cors-origin``).

Only the API (``/v1``) and its document (``/openapi.json``) answer another origin, and only
the origins listed: a listed origin's requests get ``Access-Control-Allow-Origin`` naming it
(never ``*``), and its preflights (``OPTIONS`` with ``Access-Control-Request-Method``) are
answered here, 204, with the methods and headers the API takes. Credentials are never
allowed: the API authenticates by bearer key (or a stream token in the URL), so a browser
sends no cookie across origins and the dashboard's session cannot be used from another
site. A preflight from an origin not listed is refused (403 ``forged_request``); its other
requests get no CORS headers, so the browser keeps their answers from the page."""

from __future__ import annotations

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from perdure.core.errors import ConfigError, ForgedRequestError
from perdure.server.errors import error_body

METHODS = "GET, POST, DELETE"
HEADERS = "Authorization, Content-Type, Idempotency-Key, Last-Event-ID, traceparent, tracestate"
EXPOSED = "Retry-After, WWW-Authenticate"
MAX_AGE = "600"
PATHS = ("/v1/", "/openapi.json")


def checked_origins(origins: tuple[str, ...] | list[str]) -> frozenset[str]:
    """Origins as the browser sends them (``scheme://host[:port]``, no path), lower case, or
    :class:`ConfigError` for one that is not."""
    found = set()
    for origin in origins:
        scheme, sep, rest = origin.partition("://")
        if (
            scheme not in ("http", "https")
            or not sep
            or not rest
            or "/" in rest
            or origin.strip() != origin
        ):
            raise ConfigError(
                f"CORS origin {origin!r} is not an origin",
                fix="give scheme://host[:port] with no path, e.g. https://app.example.com",
            )
        found.add(origin.lower())
    return frozenset(found)


class Cors:
    """ASGI middleware: CORS for :data:`PATHS` and the origins given (see the module
    docstring)."""

    def __init__(self, app: ASGIApp, origins: frozenset[str]) -> None:
        self.app = app
        self.origins = origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a preflight, or serve the request with CORS headers for a listed origin."""
        path = scope.get("path", "") if scope["type"] == "http" else ""
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        headers = Headers(scope=scope) if scope["type"] == "http" else None
        origin = headers.get("origin") if headers is not None else None
        if headers is None or origin is None or not path.startswith(PATHS):
            await self.app(scope, receive, send)
            return
        allowed = origin.lower() in self.origins
        if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
            await self._preflight(origin, allowed, scope, receive, send)
            return
        if not allowed:
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                out["access-control-allow-origin"] = origin
                out["access-control-expose-headers"] = EXPOSED
                out.add_vary_header("Origin")
            await send(message)

        await self.app(scope, receive, sending)

    async def _preflight(
        self, origin: str, allowed: bool, scope: Scope, receive: Receive, send: Send
    ) -> None:
        response: Response
        if not allowed:
            refusal = ForgedRequestError(
                f"origin {origin[:200]!r} may not call this API",
                fix="list it with `perdure serve --cors-origin ORIGIN`",
            )
            response = JSONResponse(
                error_body(refusal), status_code=403, headers={"Vary": "Origin"}
            )
        else:
            response = Response(
                status_code=204,
                headers={
                    "Access-Control-Allow-Origin": origin,
                    "Access-Control-Allow-Methods": METHODS,
                    "Access-Control-Allow-Headers": HEADERS,
                    "Access-Control-Max-Age": MAX_AGE,
                    "Vary": "Origin",
                },
            )
        await response(scope, receive, send)
