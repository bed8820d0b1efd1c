"""Exceptions are classified by their signs, without importing any client library."""

from __future__ import annotations

import errno
from datetime import UTC, datetime

import pytest

from perdure.core.effects import ErrorClass, TransientError, classify
from perdure.core.failures import describe, parse_retry_after


class Response:
    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.status_code = status
        self.headers = headers or {}


class SDKError(Exception):
    """Shaped like httpx's HTTPStatusError or an SDK's APIStatusError."""

    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"HTTP {status}")
        self.response = Response(status, headers)


@pytest.mark.parametrize(
    ("exc", "kind", "transient"),
    [
        (TimeoutError("read"), "timeout", True),
        (ConnectionResetError(), "dependency_unavailable", True),
        (OSError(errno.ENETUNREACH, "unreachable"), "dependency_unavailable", True),
        (OSError(errno.ENOENT, "no file"), "unexpected", False),
        (SDKError(429), "rate_limited", True),
        (SDKError(408), "timeout", True),
        (SDKError(409), "http_409", True),
        (SDKError(425), "http_425", True),
        (SDKError(500), "http_500", True),
        (SDKError(503), "http_503", True),
        (SDKError(400), "http_400", False),
        (SDKError(404), "http_404", False),
        (ValueError("bug"), "unexpected", False),
        (TransientError("rate_limited", retry_after=3), "rate_limited", True),
    ],
)
def test_describe_reads_the_usual_signs(exc: Exception, kind: str, transient: bool) -> None:
    failure = describe(exc)
    assert (failure.kind, failure.transient) == (kind, transient)


def test_a_status_attribute_on_the_exception_itself_counts() -> None:
    class Plain(Exception):
        status = 502

    assert describe(Plain()).status == 502


def test_retry_after_in_seconds_or_as_an_http_date() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert describe(SDKError(429, {"Retry-After": "17"})).retry_after == 17
    assert parse_retry_after("Thu, 01 Jan 2026 12:01:30 GMT", now) == 90
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after("-5", now) is None
    assert parse_retry_after("nan", now) is None


def test_an_effect_is_resent_only_when_the_provider_did_not_take_it() -> None:
    assert classify(SDKError(429)) is ErrorClass.TRANSIENT
    assert classify(SDKError(503)) is ErrorClass.TRANSIENT
    assert classify(SDKError(422)) is ErrorClass.PERMANENT
    assert classify(SDKError(500)) is ErrorClass.UNKNOWN_OUTCOME, "may have been applied"
    assert classify(TimeoutError()) is ErrorClass.UNKNOWN_OUTCOME, "may have been applied"
    assert classify(ConnectionRefusedError()) is ErrorClass.TRANSIENT
