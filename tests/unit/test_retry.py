from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from perdure.core.effects import (
    ErrorClass,
    PermanentError,
    TransientError,
    UnknownOutcomeError,
    classify,
    effect_key,
    request_hash,
)
from perdure.core.errors import DefinitionError
from perdure.core.retry import RetryPolicy

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_backoff_grows_by_the_multiplier_up_to_the_cap() -> None:
    policy = RetryPolicy(initial_delay=1, multiplier=2, max_delay=5, jitter=False, max_attempts=9)
    rng = random.Random(1)
    assert [policy.delay(n, rng) for n in range(1, 6)] == [1, 2, 4, 5, 5]


def test_full_jitter_stays_between_zero_and_the_computed_delay() -> None:
    policy = RetryPolicy(initial_delay=2, multiplier=3, max_delay=100)
    rng = random.Random(7)
    for attempt in range(1, 5):
        for _ in range(50):
            assert 0 <= policy.delay(attempt, rng) <= 2 * 3 ** (attempt - 1)


def test_retry_after_wins_even_over_max_delay() -> None:
    policy = RetryPolicy(initial_delay=1, max_delay=30, jitter=False)
    rng = random.Random(0)
    assert policy.delay(1, rng, retry_after=12) == 12
    assert policy.delay(1, rng, retry_after=500) == 500, "never earlier than the other side said"


def test_retry_on_and_no_retry_on_decide_for_exception_classes() -> None:
    class Flaky(Exception):
        pass

    policy = RetryPolicy(retry_on=(Flaky,), no_retry_on=(ConnectionResetError,))
    assert policy.retries(Flaky(), "unexpected", transient=False)
    assert not policy.retries(ConnectionResetError(), "dependency_unavailable", transient=True)
    assert policy.retries(TimeoutError(), "timeout", transient=True)
    assert not policy.retries(ValueError(), "unexpected", transient=False)
    assert not policy.retries(ValueError(), "invalid_request", transient=True)


def test_retry_on_must_name_exception_classes() -> None:
    with pytest.raises(DefinitionError, match="retry_on"):
        RetryPolicy(retry_on=("TimeoutError",))  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="no_retry_on"):
        RetryPolicy(no_retry_on=(int,))  # type: ignore[arg-type]


def test_attempts_and_total_time_bound_the_retries() -> None:
    policy = RetryPolicy(max_attempts=3, initial_delay=10, jitter=False, total_time=25)
    rng = random.Random(0)
    kw = {"kind": "timeout", "first_failure": T0, "rng": rng}
    assert policy.next_try(attempt=1, now=T0, **kw) == T0 + timedelta(seconds=10)  # type: ignore[arg-type]
    later = T0 + timedelta(seconds=10)
    assert policy.next_try(attempt=2, now=later, **kw) is None, "20 s more passes the 25 s limit"  # type: ignore[arg-type]
    assert policy.next_try(attempt=3, now=T0, **kw) is None, "three attempts used"  # type: ignore[arg-type]


def test_only_retryable_kinds_are_retried() -> None:
    policy = RetryPolicy()
    assert policy.allows("rate_limited")
    assert not policy.allows("invalid_request")
    assert not policy.allows("exception")
    custom = RetryPolicy(retryable=frozenset({"exception"}))
    assert custom.allows("exception")


@pytest.mark.parametrize(
    ("kwargs", "field", "allowed"),
    [
        ({"max_attempts": 0}, "max_attempts", "from 1 to 1000"),
        ({"max_attempts": 1001}, "max_attempts", "from 1 to 1000"),
        ({"max_attempts": 2.5}, "max_attempts", "an integer"),
        ({"initial_delay": 0}, "initial_delay", "> 0"),
        ({"initial_delay": "1"}, "initial_delay", "> 0"),
        ({"initial_delay": 10, "max_delay": 5}, "max_delay", ">= initial_delay"),
        ({"max_delay": float("inf")}, "max_delay", "finite"),
        ({"multiplier": 0.5}, "multiplier", ">= 1"),
        ({"total_time": 0}, "total_time", "> 0"),
        ({"jitter": "yes"}, "jitter", "True or False"),
        ({"retryable": "timeout"}, "retryable", "a set of error kinds"),
        ({"non_retryable": {1}}, "non_retryable", "strings"),
        ({"retryable": {"timeout"}, "non_retryable": {"timeout"}}, "['timeout']", "at most one"),
        ({"on_exhausted": ""}, "on_exhausted", "a step name"),
    ],
)
def test_an_invalid_policy_is_refused_when_declared(
    kwargs: dict[str, object], field: str, allowed: str
) -> None:
    with pytest.raises(DefinitionError) as caught:
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
    line = caught.value.one_line()
    assert line.startswith("error[invalid_definition]: retry policy:")
    assert field in line, line
    assert allowed in line, line


def test_an_unknown_option_is_refused() -> None:
    with pytest.raises(TypeError, match="unknown_option"):
        RetryPolicy(unknown_option=1)  # type: ignore[call-arg]


def test_a_policy_is_frozen_hashable_and_normalises_its_values() -> None:
    policy = RetryPolicy(initial_delay=2, retryable=["exception", "timeout"])  # type: ignore[arg-type]
    assert policy.initial_delay == 2.0
    assert isinstance(policy.initial_delay, float)
    assert policy.retryable == frozenset({"exception", "timeout"})
    assert policy == RetryPolicy(initial_delay=2.0, retryable=frozenset({"timeout", "exception"}))
    assert hash(policy) == hash(RetryPolicy(initial_delay=2, retryable={"timeout", "exception"}))  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        policy.max_attempts = 9  # type: ignore[misc]


def test_the_defaults_are_the_documented_ones() -> None:
    policy = RetryPolicy()
    assert (policy.max_attempts, policy.initial_delay, policy.max_delay) == (3, 1.0, 60.0)
    assert (policy.multiplier, policy.jitter, policy.total_time) == (2.0, True, None)
    assert policy.retryable == frozenset({"timeout", "rate_limited", "dependency_unavailable"})
    assert policy.non_retryable == frozenset(
        {"invalid_request", "permission_denied", "policy_rejected"}
    )
    assert policy.on_exhausted == "needs_attention"


def test_errors_are_classified_not_all_retried() -> None:
    assert classify(TransientError("rate_limited")) is ErrorClass.TRANSIENT
    assert classify(PermanentError("permission_denied")) is ErrorClass.PERMANENT
    assert classify(UnknownOutcomeError("timeout")) is ErrorClass.UNKNOWN_OUTCOME
    assert classify(ConnectionRefusedError()) is ErrorClass.TRANSIENT
    assert classify(TimeoutError()) is ErrorClass.UNKNOWN_OUTCOME, "a timeout may have been applied"
    assert classify(ValueError()) is ErrorClass.UNKNOWN_OUTCOME


def test_effect_keys_are_stable_and_request_hashes_canonical() -> None:
    assert effect_key("t", "wf", "r", 3, "pay", "refund") == "t/wf/r/3.pay/refund"
    assert request_hash({"a": 1, "b": 2}) == request_hash({"b": 2, "a": 1})
    assert request_hash({"a": 1}) != request_hash({"a": 2})
