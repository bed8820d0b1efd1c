"""Failed attempts with a growing delay: how many times a subject (a client address, a key id)
failed, and how long it must wait before it is heard again. Pure: time is passed in, never
read, so the policy is tested with a fake clock.

The first ``free`` failures cost nothing; each later one doubles the wait (``first`` seconds,
then twice that, ... at most ``cap``). A subject that stays quiet for ``forget`` seconds after
its wait is forgotten. At most ``size`` subjects are remembered (the longest quiet go first),
so a flood of addresses cannot grow the table without bound.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

Record = tuple[int, datetime]
"""What is remembered of a subject: its failures, and until when it waits."""


class Throttle:
    """Failures per subject and the wait they earned (see the module docstring). Not
    thread-safe: use it from one thread (the server's event loop)."""

    def __init__(
        self,
        *,
        free: int = 5,
        first: float = 1.0,
        cap: float = 900.0,
        forget: float = 900.0,
        size: int = 100_000,
    ) -> None:
        self.free = free
        self.first = first
        self.cap = cap
        self.forget = timedelta(seconds=forget)
        self.size = size
        self._seen: dict[str, Record] = {}

    def wait(self, subjects: Iterable[str], now: datetime) -> float:
        """Seconds the longest-waiting of ``subjects`` must still wait (0: go ahead)."""
        longest = 0.0
        for subject in subjects:
            found = self._live(subject, now)
            if found is not None:
                longest = max(longest, (found[1] - now).total_seconds())
        return longest

    def failed(self, subjects: Iterable[str], now: datetime) -> None:
        """Count one failure of each subject at ``now``."""
        for subject in subjects:
            failures, until = self._live(subject, now) or (0, now)
            failures += 1
            over = failures - self.free
            delay = 0.0 if over <= 0 else min(self.first * 2 ** (over - 1), self.cap)
            self._seen.pop(subject, None)  # the newest go last: eviction takes the quietest
            self._seen[subject] = (failures, max(until, now + timedelta(seconds=delay)))
        while len(self._seen) > self.size:
            self._seen.pop(next(iter(self._seen)))

    def forgive(self, subject: str) -> None:
        """Forget a subject's failures (a key that was just presented correctly)."""
        self._seen.pop(subject, None)

    def _live(self, subject: str, now: datetime) -> Record | None:
        found = self._seen.get(subject)
        if found is not None and now - found[1] >= self.forget:
            del self._seen[subject]
            return None
        return found
