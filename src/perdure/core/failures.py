"""What an exception means for a retry, decided without importing any client library; pure.

A step or an effect may fail with anything: the library's own error classes
(:class:`~perdure.core.effect_errors.TransientError` and its siblings say what they are), or
whatever an HTTP client, a model SDK or the standard library raised. :func:`describe` reads
the usual signs:

* ``TimeoutError``, ``ConnectionError`` and network ``OSError``\\ s (host unreachable, network
  down, connection reset…) are transient;
* an exception that carries an HTTP status — a ``status_code`` or ``status`` attribute, or
  ``.response.status_code`` (httpx, requests, the OpenAI and Anthropic SDKs) — is transient for
  408, 409, 425, 429 and 5xx, and permanent for any other 4xx;
* a ``Retry-After`` header on such an exception (``.headers`` or ``.response.headers``), in
  seconds or as an HTTP date, sets the delay;
* anything else is ``unexpected``: not retried by default, it hands the run to a person.
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
    if isinstance(exc, TimeoutError):
        return Failure("timeout", True, message, name)
    if isinstance(exc, ConnectionError):
        return Failure("dependency_unavailable", True, message, name)
    if isinstance(exc, OSError) and exc.errno in NETWORK_ERRNOS:
        return Failure("dependency_unavailable", True, message, name)
    return Failure("unexpected", False, message, name)


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an exception carries, if any."""
    for holder in (exc, getattr(exc, "response", None)):
        for attribute in ("status_code", "status"):
            value = getattr(holder, attribute, None)
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
                return value
    return None


def retry_after_of(exc: BaseException, now: datetime | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header on the exception or its response."""
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
