"""Who a request speaks for. The API (``/v1``, ``/metrics``) takes an API key in
``Authorization: Bearer`` and nothing else: the dashboard's cookie is not accepted there, so
another page cannot act through a logged-in browser. The runtime turns the key into a
:class:`~perdure.core.model.Principal`; roles are checked here.

A presented key is always checked, and a valid one is always accepted: no one can lock a
person out by failing at the same address or at the same key id. Only failed checks are
counted, per client address and per key id, in the store (:meth:`~perdure.runtime.runtime.
Credentials.failed_check`, by the runtime's clock; every server on the database counts once):
after a few, a failing check is answered ``too_many_attempts`` (429, ``Retry-After``) instead
of 401, for a growing time. A failure that cannot be counted (the store is away) is answered
429 too: a bad key never gets the quick 401 a guesser wants."""

from __future__ import annotations

import contextlib
import logging

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from perdure.core.errors import (
    NotAuthenticatedError,
    NotAuthorizedError,
    PerdureError,
    StoreError,
    TooManyAttemptsError,
)
from perdure.core.keys import parse_token
from perdure.core.model import Principal
from perdure.core.throttle import ThrottlePolicy
from perdure.runtime.admin.credentials import Credentials
from perdure.runtime.runtime import Runtime

log = logging.getLogger("perdure.server")

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


def address_of(request: Request) -> str:
    """What a failed check is counted against for the client's address."""
    return f"addr:{request.client.host if request.client else 'unknown'}"


def attempt_subjects(request: Request, token: str) -> list[str]:
    """What a failed key check is counted against: the client's address and, when the token
    names one, the key id."""
    subjects = [address_of(request)]
    with contextlib.suppress(NotAuthenticatedError):
        subjects.append(f"key:{parse_token(token)[0]}")
    return subjects


async def refusal(request: Request, subjects: list[str], exc: PerdureError) -> PerdureError:
    """What to answer a failed check: ``exc`` (401), or :class:`TooManyAttemptsError` once
    ``subjects`` have failed too often (the failure is counted first). A failure the store
    cannot count is answered with a wait too (fail closed)."""
    credentials: Credentials = request.app.state.credentials
    policy: ThrottlePolicy = request.app.state.throttle
    try:
        wait = await run_in_threadpool(credentials.failed_check, subjects, policy=policy)
    except StoreError as failed:
        log.warning("a failed key check could not be counted (%s); answered 429", failed.code)
        wait = policy.first
    if wait <= 0:
        return exc
    return TooManyAttemptsError(
        f"too many failed keys from this address or for this key; try again in "
        f"{max(1, round(wait))} s",
        retry_after=wait,
    )


async def principal_of(request: Request) -> Principal:
    """The principal of the request's bearer key, or :class:`NotAuthenticatedError` (no key,
    or a malformed, unknown or revoked one) or, after too many of those,
    :class:`TooManyAttemptsError`."""
    token = bearer(request)
    if token is None:
        raise NotAuthenticatedError(
            "this request carries no API key (the dashboard's cookie is not accepted here)"
        )
    runtime: Runtime = request.app.state.runtime
    try:
        principal: Principal = await run_in_threadpool(runtime.keys.authenticate, token)
    except NotAuthenticatedError as exc:
        raise await refusal(request, attempt_subjects(request, token), exc) from None
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
    credentials: Credentials = request.app.state.credentials
    try:
        principal, scope = await run_in_threadpool(credentials.stream_access, token)
    except NotAuthenticatedError as exc:
        raise await refusal(request, [address_of(request)], exc) from None
    return principal, scope


def require(principal: Principal, role: str, doing: str) -> None:
    """Refuse with :class:`NotAuthorizedError` unless ``principal`` holds ``role``."""
    if role not in principal.roles:
        held = ", ".join(sorted(principal.roles)) or "none"
        raise NotAuthorizedError(
            f"{doing} needs role {role!r}; {principal.subject} holds {held}",
            fix=f"use a key with role {role} (`perdure keys create NAME --role {role}`)",
        )
