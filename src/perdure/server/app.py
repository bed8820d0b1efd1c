"""The ASGI application: the API, the streams, the dashboard and the metrics of one
:class:`~perdure.runtime.runtime.Runtime`, every response with the security headers of
:mod:`perdure.server.headers`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from perdure.core.errors import PerdureError
from perdure.core.sessions import IDLE, LIFETIME
from perdure.core.throttle import ThrottlePolicy
from perdure.runtime.admin.credentials import Credentials
from perdure.runtime.runtime import Runtime
from perdure.server import apidocs, assets, dashboard, metrics
from perdure.server.api import json_response
from perdure.server.cookies import Cookies
from perdure.server.cors import Cors, checked_origins
from perdure.server.errors import on_error, on_http_error
from perdure.server.guard import Recheck
from perdure.server.headers import SecurityHeaders
from perdure.server.hub import Hub
from perdure.server.openapi import document, workflow_inputs
from perdure.server.policy import Policy
from perdure.server.routes import api_routes

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
    secure_cookies: bool = False,
    session_lifetime: timedelta = LIFETIME,
    session_idle: timedelta = IDLE,
    recheck: float = 2.0,
    throttle: ThrottlePolicy | None = None,
    cors_origins: tuple[str, ...] = (),
) -> Starlette:
    """The ASGI app serving ``runtime``: ``/v1`` (JSON API and SSE streams), ``/openapi.json``,
    ``/metrics`` (Prometheus), ``/healthz`` and, unless ``dashboard_ui=False``, the dashboard
    at ``/``. Every request under ``/v1`` needs an API key in ``Authorization: Bearer``
    (``perdure keys create``); the dashboard logs a person in with a key and keeps a
    server-side session (see ``docs/server.md``, Security).

    ``heartbeat`` is the seconds of silence after which a stream sends a keep-alive comment;
    ``poll`` how often streams look for new events on a store that cannot notify (SQLite).
    ``secure_cookies`` marks the dashboard's cookies ``Secure`` even when requests reach the
    app over plain HTTP (behind a proxy that ends TLS); ``session_lifetime`` and
    ``session_idle`` bound a dashboard session; ``recheck`` is how often, in seconds, an open
    stream checks that its key or session still holds. ``throttle`` is how failed key checks
    earn a wait (by default five are free, then the wait doubles from 1 s up to 15 minutes;
    counted in the store, so every server on the database counts once; a valid key never
    waits).
    ``cors_origins`` are the web origins (``https://app.example.com``) whose pages may call
    ``/v1`` from a browser (see :mod:`perdure.server.cors`); none by default.
    ``/docs`` is a page of the API's operations, ``/openapi.json`` its OpenAPI 3.1 document.
    The runtime stays the caller's: close it after the app stops. Mount the app inside
    another ASGI app with ``Mount("/perdure", app=create_app(rt))``.
    """
    origins = checked_origins(cors_origins)
    hub = Hub(runtime, poll=poll)
    release = _version()
    policy = Policy(secure_cookies, session_lifetime, session_idle, recheck)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        hub.start(asyncio.get_running_loop())
        log.info("serving %s", runtime.store.url.split("@")[-1])
        try:
            yield
        finally:
            hub.stop()

    def spec() -> dict[str, Any]:
        return document(release, workflow_inputs(runtime.parts.workflows))

    async def openapi_doc(request: Request) -> Response:
        return json_response(spec())

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    routes: list[BaseRoute] = [*api_routes()]
    routes += [
        Route("/openapi.json", openapi_doc, methods=["GET"]),
        Route(
            "/docs",
            apidocs.page(lambda: document(release, workflow_inputs(runtime.parts.workflows))),
            methods=["GET"],
        ),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics.endpoint(runtime), methods=["GET"]),
    ]
    routes += dashboard.routes() if dashboard_ui else assets.routes()

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[Middleware(SecurityHeaders), Middleware(Cors, origins=origins)],
        exception_handlers={PerdureError: on_error, HTTPException: on_http_error},
    )
    app.state.runtime = runtime
    app.state.credentials = Credentials(runtime.parts)
    app.state.hub = hub
    app.state.heartbeat = heartbeat
    app.state.policy = policy
    app.state.cookies = Cookies(policy)
    app.state.recheck = Recheck(runtime, recheck)
    app.state.throttle = throttle or ThrottlePolicy()
    return app
