"""Errors as HTTP responses: the CLI's stable codes, each with an HTTP status."""

from __future__ import annotations

import math

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from perdure.core.errors import (
    MethodNotAllowedError,
    PathNotFoundError,
    PerdureError,
    StoreUnavailableError,
    TooManyAttemptsError,
)

STATUS = {
    "not_authenticated": 401,
    "not_authorized": 403,
    "forged_request": 403,
    "unsupported_media_type": 415,
    "too_many_attempts": 429,
    "run_not_found": 404,
    "effect_not_found": 404,
    "key_not_found": 404,
    "workflow_not_found": 404,
    "invalid_input": 400,
    "invalid_config": 400,
    "decode_error": 400,
    "run_closed": 409,
    "run_busy": 409,
    "thread_busy": 409,
    "graph_thread_busy": 409,
    "stream_closed": 409,
    "stale_state": 409,
    "approval_not_pending": 409,
    "effect_state_changed": 409,
    "illegal_transition": 409,
    "run_state_conflict": 409,
    "key_name_taken": 409,
    "method_not_allowed": 405,
    "path_not_found": 404,
}
"""The HTTP status of each error code; any other code is 500 (503 when the store is away)."""


def status_of(exc: PerdureError) -> int:
    """The HTTP status for an error."""
    if isinstance(exc, StoreUnavailableError):
        return 503
    return STATUS.get(exc.code, 500)


def error_body(exc: PerdureError) -> dict[str, dict[str, str]]:
    """``{"error": {"code", "message", "fix"}}``: what every failed request returns."""
    return {"error": {"code": exc.code, "message": exc.message, "fix": exc.fix}}


def error_headers(exc: PerdureError) -> dict[str, str]:
    """The headers a refusal carries: ``WWW-Authenticate`` on 401, ``Allow`` on 405,
    ``Retry-After`` on 429."""
    if isinstance(exc, MethodNotAllowedError):
        return {"Allow": ", ".join(exc.allow)}
    if exc.code == "not_authenticated":
        return {"WWW-Authenticate": "Bearer"}
    if isinstance(exc, TooManyAttemptsError):
        return {"Retry-After": str(max(1, math.ceil(exc.retry_after)))}
    return {}


async def on_error(request: Request, exc: Exception) -> Response:
    """The exception handler for :class:`PerdureError`."""
    if not isinstance(exc, PerdureError):  # registered for PerdureError only
        raise exc
    return JSONResponse(error_body(exc), status_code=status_of(exc), headers=error_headers(exc))


async def on_http_error(request: Request, exc: Exception) -> Response:
    """The exception handler for Starlette's own refusals: under ``/v1`` a path no operation
    has is ``path_not_found`` (404) in the API's JSON, like every other error there; elsewhere
    (the dashboard's pages) Starlette's plain answer."""
    if not isinstance(exc, HTTPException):  # registered for HTTPException only
        raise exc
    path = request.url.path.removeprefix(request.scope.get("root_path", ""))
    if exc.status_code == 404 and path.startswith("/v1/"):
        return await on_error(
            request, PathNotFoundError(f"no operation has the path {path[:200]!r}")
        )
    return Response(exc.detail, status_code=exc.status_code, headers=exc.headers)
