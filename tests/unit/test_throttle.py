"""Failed attempts earn a growing wait, by a fake clock; quiet subjects are forgotten."""

from __future__ import annotations

from perdure import FakeClock
from perdure.core.throttle import Throttle


def test_failures_after_the_free_ones_double_the_wait_up_to_the_cap() -> None:
    clock, throttle = FakeClock(), Throttle(free=3, first=1.0, cap=8.0, forget=60.0)
    waits = []
    for _ in range(8):
        throttle.failed(["addr:1"], clock.now())
        waits.append(throttle.wait(["addr:1"], clock.now()))
    assert waits == [0, 0, 0, 1, 2, 4, 8, 8]
    assert throttle.wait(["addr:2"], clock.now()) == 0  # another subject is not held
    assert throttle.wait(["addr:2", "addr:1"], clock.now()) == 8  # the longest counts
    clock.advance(8)
    assert throttle.wait(["addr:1"], clock.now()) == 0
    throttle.failed(["addr:1"], clock.now())  # still remembered: the next failure waits long
    assert throttle.wait(["addr:1"], clock.now()) == 8


def test_a_quiet_subject_is_forgotten_and_a_correct_key_forgiven() -> None:
    clock, throttle = FakeClock(), Throttle(free=1, first=2.0, forget=60.0)
    throttle.failed(["addr:1", "key:k"], clock.now())
    throttle.failed(["addr:1", "key:k"], clock.now())
    assert throttle.wait(["key:k"], clock.now()) == 2
    throttle.forgive("key:k")
    assert throttle.wait(["key:k"], clock.now()) == 0
    clock.advance(62)  # its wait ended 2 s after the failure; then 60 s of quiet
    throttle.failed(["addr:1"], clock.now())  # forgotten: this is a first failure again
    assert throttle.wait(["addr:1"], clock.now()) == 0


def test_the_table_keeps_at_most_its_size() -> None:
    clock, throttle = FakeClock(), Throttle(free=0, size=3)
    for n in range(5):
        throttle.failed([f"addr:{n}"], clock.now())
    assert throttle.wait(["addr:0"], clock.now()) == 0  # evicted
    assert throttle.wait(["addr:4"], clock.now()) == 1
