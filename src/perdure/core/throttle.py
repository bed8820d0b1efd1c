"""Failed credential checks and the wait they earn: how many times a subject (a client
address, a key id) failed, and until when its failing checks are answered "wait". Pure: time is
passed in, never read, so the policy is tested with a fake clock; the counts live in the store
(the ``throttle`` wing), so every server on one database counts once.

Only failures are counted and only failures wait: a valid credential is always accepted, so
no one can lock another person out by failing at the same address or at the same key id.

The first ``free`` failures cost nothing; each later one doubles the wait (``first`` seconds,
then twice that, ... at most ``cap``). A subject that stays quiet for ``forget`` seconds after
its wait is forgotten (and its row may be deleted).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True, slots=True)
class FailedChecks:
    """What is remembered of a subject: its failures, and until when a failing check of it is
    answered with a wait."""

    subject: str
    failures: int
    until: datetime


@dataclass(frozen=True, slots=True)
class ThrottlePolicy:
    """How failures earn a wait (see the module docstring)."""

    free: int = 5
    first: float = 1.0
    cap: float = 900.0
    forget: float = 900.0

    def forgotten(self, found: FailedChecks, now: datetime) -> bool:
        """Whether ``found`` has been quiet long enough to count from zero again."""
        return now - found.until >= timedelta(seconds=self.forget)

    def failed(self, subject: str, found: FailedChecks | None, now: datetime) -> FailedChecks:
        """``subject``'s record after one more failure at ``now`` (``found``: before it)."""
        if found is None or self.forgotten(found, now):
            failures, until = 1, now
        else:
            failures, until = found.failures + 1, found.until
        over = failures - self.free
        delay = 0.0 if over <= 0 else min(self.first * 2 ** min(over - 1, 64), self.cap)
        return FailedChecks(subject, failures, max(until, now + timedelta(seconds=delay)))

    @staticmethod
    def wait(records: list[FailedChecks], now: datetime) -> float:
        """Seconds the longest-waiting of ``records`` must still wait (0: none)."""
        return max([(r.until - now).total_seconds() for r in records] + [0.0])
