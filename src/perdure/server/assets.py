"""The dashboard's static files (its stylesheet and its one script), served from the package:
the Content-Security-Policy lets pages load scripts and styles from this server only, never
inline."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

TYPES = {
    "dashboard.css": "text/css; charset=utf-8",
    "dashboard.js": "text/javascript; charset=utf-8",
}
"""Each file of ``perdure/server/static/`` and its media type."""


def _serving(name: str) -> Callable[[Request], Awaitable[Response]]:
    content = (files("perdure.server") / "static" / name).read_bytes()

    async def serve(request: Request) -> Response:
        return Response(content, media_type=TYPES[name], headers={"Cache-Control": "no-cache"})

    return serve


def routes() -> list[BaseRoute]:
    """``GET /static/<name>`` for each file of :data:`TYPES` (read once, here)."""
    return [Route(f"/static/{name}", _serving(name), methods=["GET"]) for name in TYPES]
