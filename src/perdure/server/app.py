"""The ASGI application: the API, the streams, the dashboard and the metrics of one
:class:`~perdure.runtime.runtime.Runtime`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from perdure.core.errors import PerdureError
from perdure.runtime.runtime import Runtime
from perdure.server import dashboard, metrics
from perdure.server.api import json_response, unexpected
from perdure.server.errors import error_body, on_error
from perdure.server.hub import Hub
from perdure.server.routes import ENDPOINTS, openapi

log = logging.getLogger("perdure.server")


def _version() -> str:
    try:
        return version("perdure")
    except PackageNotFoundError:  # pragma: no cover - a source checkout without metadata
        return "0"


def create_app(
    runtime: Runtime,
    *,
    dashboard_ui: bool = True,
    heartbeat: float = 15.0,
    poll: float = 0.1,
) -> Starlette:
    """The ASGI app serving ``runtime``: ``/v1`` (JSON API and SSE streams), ``/openapi.json``,
    ``/metrics`` (Prometheus), ``/healthz`` and, unless ``dashboard_ui=False``, the dashboard
    at ``/``. Every request under ``/v1`` needs an API key (``perdure keys create``).

    ``heartbeat`` is the seconds of silence after which a stream sends a keep-alive comment;
    ``poll`` how often streams look for new events on a store that cannot notify (SQLite).
    The runtime stays the caller's: close it after the app stops. Mount the app inside
    another ASGI app with ``Mount("/perdure", app=create_app(rt))``.
    """
    hub = Hub(runtime, poll=poll)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        hub.start(asyncio.get_running_loop())
        log.info("serving %s", runtime.store.url.split("@")[-1])
        try:
            yield
        finally:
            hub.stop()

    async def openapi_doc(request: Request) -> Response:
        return json_response(openapi(_version()))

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    routes: list[BaseRoute] = [Route(e.path, e.handler, methods=list(e.methods)) for e in ENDPOINTS]
    routes += [
        Route("/openapi.json", openapi_doc, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics.endpoint(runtime), methods=["GET"]),
    ]
    if dashboard_ui:
        routes += dashboard.routes()

    async def on_unexpected(request: Request, exc: Exception) -> Response:
        log.exception("request %s %s failed", request.method, request.url.path)
        return JSONResponse(error_body(unexpected(exc)), status_code=500)

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={PerdureError: on_error, Exception: on_unexpected},
    )
    app.state.runtime = runtime
    app.state.hub = hub
    app.state.heartbeat = heartbeat
    return app
