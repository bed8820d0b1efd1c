"""The failed-check policy by a fake clock: free failures, a doubling wait up to its cap, the
longest wait of several subjects, and forgetting a quiet subject."""

from __future__ import annotations

from perdure import FakeClock
from perdure.core.throttle import FailedChecks, ThrottlePolicy


def test_failures_past_the_free_ones_earn_a_doubling_wait_up_to_the_cap() -> None:
    clock, policy = FakeClock(), ThrottlePolicy(free=3, first=1.0, cap=8.0, forget=60.0)
    found: FailedChecks | None = None
    waits = []
    for _ in range(8):
        found = policy.failed("addr:1", found, clock.now())
        waits.append(policy.wait([found], clock.now()))
    assert waits == [0, 0, 0, 1, 2, 4, 8, 8]
    other = policy.failed("addr:2", None, clock.now())
    assert policy.wait([other, found], clock.now()) == 8  # the longest counts
    clock.advance(8)
    assert policy.wait([found], clock.now()) == 0
    assert policy.wait([policy.failed("addr:1", found, clock.now())], clock.now()) == 8


def test_a_subject_quiet_past_forget_counts_from_zero_again() -> None:
    clock, policy = FakeClock(), ThrottlePolicy(free=1, first=2.0, forget=60.0)
    found = policy.failed("key:k", policy.failed("key:k", None, clock.now()), clock.now())
    assert policy.wait([found], clock.now()) == 2
    clock.advance(62)
    assert policy.forgotten(found, clock.now())
    again = policy.failed("key:k", found, clock.now())
    assert again.failures == 1 and policy.wait([again], clock.now()) == 0
