"""The only source of "now" in perdure.

Code that needs the time takes a :class:`Clock`; SQL gets ``now`` as a parameter. Tests use
:class:`FakeClock` and :meth:`FakeClock.advance` to expire leases and fire timers without sleeping.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Tells the current time as a timezone-aware UTC datetime."""

    def now(self) -> datetime:
        """The current time (UTC, timezone-aware)."""
        ...


class SystemClock:
    """The wall clock."""

    def now(self) -> datetime:
        """The current UTC time."""
        return datetime.now(UTC)


class FakeClock:
    """A clock that moves only when told to; safe to share between threads."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The fake current time."""
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        """Move the clock forward by ``seconds`` and return the new time."""
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now
