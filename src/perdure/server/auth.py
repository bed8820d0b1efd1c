"""Who a request speaks for: an API key in ``Authorization: Bearer`` (or, for the dashboard,
the ``perdure_key`` cookie) is turned into a :class:`~perdure.core.model.Principal` by the
runtime; roles are checked here."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from perdure.core.errors import NotAuthenticatedError, NotAuthorizedError
from perdure.core.model import Principal
from perdure.runtime.runtime import Runtime

ADMIN = "admin"
"""The role of administrative verbs: resolving effects, repairing or failing runs, reopening
runs that need a person, keys, and the fleet."""

COOKIE = "perdure_key"


def token_of(request: Request) -> str | None:
    """The key a request presents, if any."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.cookies.get(COOKIE)


async def principal_of(request: Request) -> Principal:
    """The authenticated principal, or :class:`NotAuthenticatedError`."""
    token = token_of(request)
    if token is None:
        raise NotAuthenticatedError("this request carries no API key")
    runtime: Runtime = request.app.state.runtime
    principal: Principal = await run_in_threadpool(runtime.authenticate, token)
    return principal


def require(principal: Principal, role: str, doing: str) -> None:
    """Refuse with :class:`NotAuthorizedError` unless ``principal`` holds ``role``."""
    if role not in principal.roles:
        held = ", ".join(sorted(principal.roles)) or "none"
        raise NotAuthorizedError(
            f"{doing} needs role {role!r}; {principal.subject} holds {held}",
            fix=f"use a key with role {role} (`perdure keys create NAME --role {role}`)",
        )
