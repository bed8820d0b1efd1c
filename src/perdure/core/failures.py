"""What an exception means for a retry, decided without importing any client library; pure.

A step or an effect may fail with anything: the library's own error classes
(:class:`~perdure.core.effect_errors.TransientError` and its siblings say what they are), or
whatever an HTTP client, a model SDK or the standard library raised. :func:`describe` reads
the usual signs:

* ``TimeoutError``, ``ConnectionError`` and network ``OSError``\\ s (host unreachable, network
  down, connection reset…) are transient;
* so are the transport errors of the usual clients, recognised by class name and package
  (:data:`TRANSPORT_ERRORS`): httpx's and httpcore's timeouts, network and remote protocol
  errors, the OpenAI and Anthropic SDKs' ``APIConnectionError`` and ``APITimeoutError``,
  pydantic-ai's ``ModelConnectionError``, ``ModelTimeoutError`` and the categories it gives a
  provider failure that came without an HTTP status, requests' and aiohttp's connection errors
  and timeouts, and a DNS failure (``socket.gaierror``);
* an exception that carries an HTTP status — a ``status_code`` or ``status`` attribute, or
  ``.response.status_code`` (httpx, requests, the OpenAI and Anthropic SDKs) — is transient for
  408, 409, 425, 429 and 5xx, and permanent for any other 4xx;
* a ``Retry-After`` header on such an exception (``.headers`` or ``.response.headers``), in
  seconds or as an HTTP date, sets the delay;
* anything else is ``unexpected``: not retried by default, it hands the run to a person.

Whether a request that failed in transport was sent at all is a separate question
(:func:`never_sent`): a refused connection, a DNS failure or a connect timeout prove it was
not, so even a side effect may be sent again; a reset, a read timeout or a connection closed
before the reply leave the outcome unknown.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from perdure.core.effect_errors import EffectError, ErrorClass
from perdure.core.values import JSON

TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})
"""4xx statuses that say "try again later"; every 5xx is transient too."""

INF = float("inf")

NETWORK_ERRNOS = frozenset(
    {
        errno.ECONNREFUSED,
        errno.ECONNRESET,
        errno.ECONNABORTED,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.ENETDOWN,
        errno.ETIMEDOUT,
        errno.EPIPE,
    }
)


_HTTP_PACKAGES = ("httpx", "httpx2", "httpcore", "httpcore2")

TRANSPORT_ERRORS: dict[tuple[str, str], str] = {
    **{
        (package, name): kind
        for package in _HTTP_PACKAGES
        for name, kind in (
            ("TimeoutException", "timeout"),  # httpx: Connect/Read/Write/PoolTimeout
            ("TimeoutError", "timeout"),  # httpcore's base of the same
            ("NetworkError", "dependency_unavailable"),  # ConnectError, ReadError, WriteError
            ("RemoteProtocolError", "dependency_unavailable"),  # closed before the reply
            ("ProxyError", "dependency_unavailable"),
        )
    },
    **{
        (package, name): kind
        for package in ("openai", "anthropic")
        for name, kind in (
            ("APITimeoutError", "timeout"),
            ("APIConnectionError", "dependency_unavailable"),
        )
    },
    ("pydantic_ai", "ModelTimeoutError"): "timeout",
    ("pydantic_ai", "ModelRequestTimeout"): "timeout",
    ("pydantic_ai", "ModelConnectionError"): "dependency_unavailable",
    ("pydantic_ai", "ModelRateLimitError"): "rate_limited",
    ("pydantic_ai", "ModelUnavailableError"): "dependency_unavailable",
    ("pydantic_ai", "ModelServerError"): "dependency_unavailable",
    ("requests", "Timeout"): "timeout",
    ("requests", "ConnectionError"): "dependency_unavailable",
    ("aiohttp", "ServerTimeoutError"): "timeout",
    ("aiohttp", "ClientConnectionError"): "dependency_unavailable",
    ("socket", "gaierror"): "dependency_unavailable",  # DNS: the name did not resolve
}
"""Transport errors of the usual clients, by (top-level package, class name) of a class in the
exception's MRO, and the kind each is (all transient). Matched by name so that no client
library is imported; the first class of the MRO found here decides."""

REFUSED_REQUESTS: dict[tuple[str, str], str] = {
    ("pydantic_ai", "ModelAuthenticationError"): "permission_denied",
    ("pydantic_ai", "ModelRequestRejectedError"): "invalid_request",
}
"""Provider refusals that came without an HTTP status (an error inside a stream), by the same
key: permanent, never retried. With a status, the status decides."""

NOT_SENT_ERRORS = frozenset(
    {
        *(
            (package, name)
            for package in _HTTP_PACKAGES
            for name in ("ConnectError", "ConnectTimeout", "PoolTimeout")
        ),
        ("socket", "gaierror"),
    }
)
"""Transport errors that prove the request never left: the connection was never made."""

NOT_SENT_PHASES = frozenset({"connect", "pool"})
"""pydantic-ai's ``ModelConnectionError.phase`` values before any byte was sent."""


@dataclass(frozen=True, slots=True)
class Failure:
    """How to treat one exception: its ``kind`` (a stable code such as ``timeout``,
    ``rate_limited``, ``http_503`` or ``unexpected``), whether it is ``transient``, the HTTP
    ``status`` it carried and the ``retry_after`` (seconds) the other side asked for."""

    kind: str
    transient: bool
    message: str
    exception: str
    status: int | None = None
    retry_after: float | None = None

    def to_json(self) -> dict[str, JSON]:
        """The failure as evidence on a run or an effect."""
        return {
            "kind": self.kind,
            "transient": self.transient,
            "exception": self.exception,
            "message": self.message,
            "status": self.status,
            "retry_after": self.retry_after,
        }


def describe(exc: BaseException, now: datetime | None = None) -> Failure:
    """Classify ``exc`` (see the module docstring); ``now`` turns an HTTP-date Retry-After
    into seconds."""
    name = type(exc).__name__
    message = f"{name}: {exc}"[:2000]
    if isinstance(exc, EffectError):
        transient = exc.error_class is ErrorClass.TRANSIENT
        return Failure(exc.kind, transient, message, name, None, exc.retry_after)
    status = http_status(exc)
    if status is not None:
        transient = status in TRANSIENT_STATUSES or 500 <= status <= 599
        if status == 429:
            kind = "rate_limited"
        elif status == 408:
            kind = "timeout"
        else:
            kind = f"http_{status}"
        return Failure(kind, transient, message, name, status, retry_after_of(exc, now))
    refused = _named(exc, REFUSED_REQUESTS)
    if refused is not None:
        return Failure(refused, False, message, name)
    transport = transport_kind(exc)
    if transport is not None:
        return Failure(transport, True, message, name, None, retry_after_of(exc, now))
    if isinstance(exc, TimeoutError):
        return Failure("timeout", True, message, name)
    if isinstance(exc, ConnectionError):
        return Failure("dependency_unavailable", True, message, name)
    if isinstance(exc, OSError) and exc.errno in NETWORK_ERRNOS:
        return Failure("dependency_unavailable", True, message, name)
    return Failure("unexpected", False, message, name)


def transport_kind(exc: BaseException) -> str | None:
    """``timeout`` or ``dependency_unavailable`` (``rate_limited`` for pydantic-ai's category)
    when ``exc`` is a known client's transport error (:data:`TRANSPORT_ERRORS`), else None."""
    return _named(exc, TRANSPORT_ERRORS)


def never_sent(exc: BaseException) -> bool:
    """True when ``exc`` proves the request never reached the other side: a refused
    connection, a DNS failure, a connect or pool timeout (:data:`NOT_SENT_ERRORS`), or
    pydantic-ai's ``ModelConnectionError`` in phase ``connect`` or ``pool``. A known transport
    error that wraps another (the SDKs' ``APIConnectionError`` wraps httpx's, httpx's wraps
    httpcore's) is judged by what it wraps; no other exception's cause is looked at."""
    current: BaseException | None = exc
    for _ in range(8):  # a chain of wrappers is short; a cycle must not loop
        if current is None:
            return False
        if isinstance(current, ConnectionRefusedError) or (
            isinstance(current, OSError) and current.errno == errno.ECONNREFUSED
        ):
            return True
        if any(_key(cls) in NOT_SENT_ERRORS for cls in type(current).__mro__):
            return True
        phase = getattr(current, "phase", None)
        if isinstance(phase, str):
            return phase in NOT_SENT_PHASES
        if transport_kind(current) is None:
            return False
        current = current.__cause__ or current.__context__
    return False


def _named(exc: BaseException, table: dict[tuple[str, str], str]) -> str | None:
    for cls in type(exc).__mro__:
        found = table.get(_key(cls))
        if found is not None:
            return found
    return None


def _key(cls: type) -> tuple[str, str]:
    return (cls.__module__.partition(".")[0], cls.__name__)


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an exception carries, if any."""
    for holder in (exc, getattr(exc, "response", None)):
        for attribute in ("status_code", "status"):
            value = getattr(holder, attribute, None)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
                return value
    return None


def retry_after_of(exc: BaseException, now: datetime | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header on the exception or its response, or from a
    number of seconds the exception carries as ``retry_after`` (pydantic-ai's errors)."""
    carried = getattr(exc, "retry_after", None)
    if isinstance(carried, int | float) and not isinstance(carried, bool) and 0 <= carried < INF:
        return float(carried)
    for holder in (exc, getattr(exc, "response", None)):
        headers: Any = getattr(holder, "headers", None)
        if headers is None:
            continue
        try:
            raw = headers.get("retry-after") or headers.get("Retry-After")
        except (AttributeError, TypeError):
            continue
        if raw is None:
            continue
        return parse_retry_after(str(raw), now)
    return None


def parse_retry_after(value: str, now: datetime | None = None) -> float | None:
    """``Retry-After`` as seconds: a number of seconds, or an HTTP date (needs ``now``)."""
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is not None:
        return seconds if 0 <= seconds < float("inf") else None
    if now is None:
        return None
    try:
        from email.utils import parsedate_to_datetime  # only for an HTTP-date Retry-After

        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - now).total_seconds())
