"""Errors as HTTP responses: the CLI's stable codes, each with an HTTP status."""

from __future__ import annotations

import math

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from perdure.core.errors import PerdureError, StoreUnavailableError, TooManyAttemptsError

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
    """The headers a refusal carries: ``WWW-Authenticate`` on 401, ``Retry-After`` on 429."""
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
