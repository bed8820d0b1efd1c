"""The HTTP server: a JSON API under ``/v1``, live event streams (SSE), a dashboard at ``/``
and ``/metrics``, all through a :class:`~perdure.runtime.runtime.Runtime` (the ``server``
extra: Starlette, uvicorn, Jinja2, prometheus-client).

``create_app(runtime)`` returns an ASGI application; run it with ``perdure serve`` or mount it
inside your own ASGI app. See ``docs/server.md``.
"""

from __future__ import annotations

from perdure.server.app import create_app

__all__ = ["create_app"]
