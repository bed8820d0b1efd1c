"""Exceptions are classified by their signs, without importing any client library."""

from __future__ import annotations

import errno
from datetime import UTC, datetime
from typing import Any

import pytest

from perdure.core.effects import ErrorClass, PermanentError, TransientError, classify
from perdure.core.failures import describe, never_sent, parse_retry_after
from perdure.runtime.step.model_calls import classified


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


def _caused(outer: BaseException, inner: BaseException) -> BaseException:
    """``outer`` raised ``from inner``, as the SDKs wrap their transport's errors."""
    outer.__cause__ = inner
    return outer


def _transport_errors() -> list[tuple[BaseException, str, bool]]:
    """(the real client's exception, its kind, whether it proves the request never left)."""
    import socket

    import anthropic
    import httpcore
    import httpx
    import openai
    from pydantic_ai import exceptions as pyd

    found: list[tuple[BaseException, str, bool]] = [
        (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), "dependency_unavailable", True),
        (ConnectionResetError(errno.ECONNRESET, "reset"), "dependency_unavailable", False),
        (socket.gaierror(socket.EAI_NONAME, "no such host"), "dependency_unavailable", True),
        (TimeoutError("timed out"), "timeout", False),
        (httpcore.ConnectError("refused"), "dependency_unavailable", True),
        (httpcore.ReadTimeout("slow"), "timeout", False),
        (pyd.ModelConnectionError("m", "refused", phase="connect"), "dependency_unavailable", True),
        (pyd.ModelConnectionError("m", "dropped", phase="read"), "dependency_unavailable", False),
        (pyd.ModelTimeoutError("m", "slow", phase="read"), "timeout", False),
        (pyd.ModelRequestTimeout("m", 30.0), "timeout", False),
        (pyd.ModelRateLimitError("m", "slow down", retry_after=4), "rate_limited", False),
        (pyd.ModelUnavailableError("m", "overloaded"), "dependency_unavailable", False),
    ]
    http_modules: list[Any] = [httpx]
    try:
        import httpx2  # the transport of the newest OpenAI and Anthropic SDKs

        http_modules.append(httpx2)
    except ImportError:  # pragma: no cover - an older SDK on httpx
        pass
    for http in http_modules:
        request = http.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
        refused = http.ConnectError("[Errno 111] Connection refused")
        found += [
            (refused, "dependency_unavailable", True),
            (http.ConnectTimeout("slow connect"), "timeout", True),
            (http.PoolTimeout("no free connection"), "timeout", True),
            (http.ReadTimeout("slow reply"), "timeout", False),
            (http.ReadError("reset"), "dependency_unavailable", False),
            (http.RemoteProtocolError("closed before the reply"), "dependency_unavailable", False),
        ]
        for sdk in (openai, anthropic):
            try:
                wrapped = sdk.APIConnectionError(request=request)
                timed_out = sdk.APITimeoutError(request=request)
            except TypeError:  # this SDK is built on the other httpx
                continue
            found += [
                (_caused(wrapped, refused), "dependency_unavailable", True),
                (
                    _caused(sdk.APIConnectionError(request=request), http.RemoteProtocolError("x")),
                    "dependency_unavailable",
                    False,
                ),
                (_caused(timed_out, http.ReadTimeout("slow")), "timeout", False),
            ]
    return found


TRANSPORT = _transport_errors()


@pytest.mark.parametrize(
    ("exc", "kind", "unsent"),
    TRANSPORT,
    ids=[type(e).__module__ + "." + type(e).__name__ for e, _, _ in TRANSPORT],
)
def test_a_transport_error_of_a_real_client_is_transient(
    exc: BaseException, kind: str, unsent: bool
) -> None:
    failure = describe(exc)
    assert (failure.kind, failure.transient) == (kind, True)
    assert never_sent(exc) is unsent
    expected = ErrorClass.TRANSIENT if unsent else ErrorClass.UNKNOWN_OUTCOME
    assert classify(exc) is expected, "a side effect is resent only if it never left"
    assert isinstance(classified(exc), TransientError), "a model request is always resent"


def test_a_retry_after_that_pydantic_ai_read_is_honoured() -> None:
    from pydantic_ai.exceptions import ModelRateLimitError

    assert describe(ModelRateLimitError("m", "slow down", retry_after=4)).retry_after == 4


def test_a_refused_credential_or_request_is_rejected_not_retried() -> None:
    import httpx
    import openai
    from pydantic_ai.exceptions import ModelAuthenticationError, ModelRequestRejectedError

    request = httpx.Request("POST", "http://127.0.0.1:9/v1")
    for status, kind in [
        (401, "permission_denied"),
        (403, "permission_denied"),
        (400, "invalid_request"),
        (404, "invalid_request"),
        (422, "invalid_request"),
    ]:
        response = httpx.Response(status, request=request)
        try:
            exc: Exception = openai.APIStatusError("refused", response=response, body=None)
        except TypeError:  # pragma: no cover - the SDK on the other httpx
            exc = SDKError(status)
        assert describe(exc).transient is False
        rejected = classified(exc)
        assert isinstance(rejected, PermanentError) and rejected.kind == kind
    # pydantic-ai's categories for a refusal reported without a status (inside a stream)
    auth = classified(ModelAuthenticationError("m", "bad key"))
    assert isinstance(auth, PermanentError) and auth.kind == "permission_denied"
    bad = classified(ModelRequestRejectedError("m", "bad request"))
    assert isinstance(bad, PermanentError) and bad.kind == "invalid_request"
