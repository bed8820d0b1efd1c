"""Failed credential checks: counted per subject in one transaction, each later failure
waiting twice as long, a quiet subject forgotten, and two stores on one database counting
once."""

from __future__ import annotations

from datetime import timedelta

import pytest

from perdure.core.clock import FakeClock
from perdure.core.throttle import ThrottlePolicy
from perdure.store.base import Store
from perdure.testing.conformance.support import needs

POLICY = ThrottlePolicy(free=2, first=1.0, cap=4.0, forget=60.0)


@pytest.fixture(autouse=True)
def needs_throttle_wing(store: Store) -> None:
    """Every test here needs the throttle wing: skipped on a store without."""
    needs(store, "throttle")


def test_failures_are_counted_per_subject_and_earn_a_doubling_wait(
    store: Store, clock: FakeClock
) -> None:
    waits = []
    for _ in range(5):
        found = store.throttle.failed(["addr:1", "key:k"], clock.now(), POLICY)
        assert [r.subject for r in found] == ["addr:1", "key:k"]
        waits.append(POLICY.wait(found, clock.now()))
    assert waits == [0, 0, 1, 2, 4]
    (other,) = store.throttle.failed(["key:j"], clock.now(), POLICY)
    assert other.failures == 1
    assert {r.subject: r.failures for r in store.throttle.checks(["addr:1", "key:j", "x"])} == {
        "addr:1": 5,
        "key:j": 1,
    }


def test_a_subject_quiet_past_forget_is_deleted_and_counts_from_zero(
    store: Store, clock: FakeClock
) -> None:
    for _ in range(4):
        store.throttle.failed(["addr:1"], clock.now(), POLICY)
    clock.advance(timedelta(seconds=POLICY.cap + POLICY.forget + 1).total_seconds())
    (fresh,) = store.throttle.failed(["addr:2"], clock.now(), POLICY)
    assert fresh.failures == 1
    assert store.throttle.checks(["addr:1"]) == []  # forgotten, and its row gone
    (again,) = store.throttle.failed(["addr:1"], clock.now(), POLICY)
    assert again.failures == 1
