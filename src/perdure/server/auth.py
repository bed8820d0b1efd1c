"""Who a request speaks for. The API (``/v1``, ``/metrics``) takes an API key in
``Authorization: Bearer`` and nothing else: the dashboard's cookie is not accepted there, so
another page cannot act through a logged-in browser. The runtime turns the key into a
:class:`~perdure.core.model.Principal`; roles are checked here.

Failed keys are counted per client address and per key id (:class:`~perdure.core.throttle.
Throttle`, by the runtime's clock): after a few, the next attempts are refused with
``too_many_attempts`` (429) for a growing time, without the key being looked at."""

from __future__ import annotations

import contextlib

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from perdure.core.errors import NotAuthenticatedError, NotAuthorizedError, TooManyAttemptsError
from perdure.core.keys import parse_token
from perdure.core.model import Principal
from perdure.core.throttle import Throttle
from perdure.runtime.admin.credentials import Credentials
from perdure.runtime.runtime import Runtime

ADMIN = "admin"
"""The role of administrative verbs: resolving effects, repairing or failing runs, reopening
runs that need a person, keys, and the fleet."""


def bearer(request: Request) -> str | None:
    """The key a request presents in ``Authorization: Bearer``, if any."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def attempt_subjects(request: Request, token: str) -> list[str]:
    """What a key check is counted against: the client's address and, when the token names
    one, the key id."""
    subjects = [f"addr:{request.client.host if request.client else 'unknown'}"]
    with contextlib.suppress(NotAuthenticatedError):
        subjects.append(f"key:{parse_token(token)[0]}")
    return subjects


def check_attempts(request: Request, subjects: list[str]) -> None:
    """Refuse with :class:`TooManyAttemptsError` while any of ``subjects`` must wait."""
    runtime: Runtime = request.app.state.runtime
    throttle: Throttle = request.app.state.throttle
    wait = throttle.wait(subjects, runtime.clock.now())
    if wait > 0:
        raise TooManyAttemptsError(
            f"too many failed keys from this address or for this key; try again in "
            f"{max(1, round(wait))} s",
            retry_after=wait,
        )


def count_attempt(request: Request, subjects: list[str], *, ok: bool) -> None:
    """Count a failed check against ``subjects``; a key presented correctly is forgiven."""
    runtime: Runtime = request.app.state.runtime
    throttle: Throttle = request.app.state.throttle
    if ok:
        for subject in subjects[1:]:
            throttle.forgive(subject)
    else:
        throttle.failed(subjects, runtime.clock.now())


async def principal_of(request: Request) -> Principal:
    """The principal of the request's bearer key, or :class:`NotAuthenticatedError` (no key,
    or a malformed, unknown or revoked one) or :class:`TooManyAttemptsError`."""
    token = bearer(request)
    if token is None:
        raise NotAuthenticatedError(
            "this request carries no API key (the dashboard's cookie is not accepted here)"
        )
    subjects = attempt_subjects(request, token)
    check_attempts(request, subjects)
    runtime: Runtime = request.app.state.runtime
    try:
        principal: Principal = await run_in_threadpool(runtime.keys.authenticate, token)
    except NotAuthenticatedError:
        count_attempt(request, subjects, ok=False)
        raise
    count_attempt(request, subjects, ok=True)
    return principal


async def stream_principal_of(request: Request) -> tuple[Principal, str | None]:
    """Who a stream request speaks for, and the scope its stream token opens (None: it came
    with a bearer key, which opens every stream of its tenant). ``?token=`` is read only when
    the request has no ``Authorization`` header; an API key put there is refused, so a key
    never has to travel in a URL."""
    token = request.query_params.get("token")
    if bearer(request) is not None or token is None:
        return await principal_of(request), None
    if token.startswith("pdk_"):
        raise NotAuthenticatedError(
            "an API key was sent in the URL, where proxies and browsers keep it; it was not used",
            fix="mint a stream token with POST /v1/stream-tokens and pass that as ?token=, "
            "then revoke the exposed key (`perdure keys revoke`)",
        )
    subjects = [f"addr:{request.client.host if request.client else 'unknown'}"]
    check_attempts(request, subjects)
    credentials: Credentials = request.app.state.credentials
    try:
        principal, scope = await run_in_threadpool(credentials.stream_access, token)
    except NotAuthenticatedError:
        count_attempt(request, subjects, ok=False)
        raise
    return principal, scope


def require(principal: Principal, role: str, doing: str) -> None:
    """Refuse with :class:`NotAuthorizedError` unless ``principal`` holds ``role``."""
    if role not in principal.roles:
        held = ", ".join(sorted(principal.roles)) or "none"
        raise NotAuthorizedError(
            f"{doing} needs role {role!r}; {principal.subject} holds {held}",
            fix=f"use a key with role {role} (`perdure keys create NAME --role {role}`)",
        )
