"""The clock a runtime uses when none is given: the wall clock, or a test clock shared by files.

A test that starts processes (``perdure`` commands, workers) cannot hand them a
:class:`~perdure.core.clock.FakeClock`. Instead it sets ``PERDURE_TEST_CLOCK`` to the path of a
small file holding the current fake time (one ISO 8601 line). Every clock built by
:func:`default_clock` in every process then reads that file on each ``now()``, and the test moves
time for all of them at once with :meth:`FileClock.advance`, which rewrites the file atomically.
Time stands still until the test moves it: a timer, a retry wait or a lease expires when the
test says so, never because the wall clock ran. An idle worker re-reads the clock at least every
``max_poll_interval`` seconds (see :class:`~perdure.runtime.worker.Worker`), so it notices moved
time within that poll. Never set the variable in production.
"""

from __future__ import annotations

import os
import threading
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from perdure.core.clock import Clock, SystemClock
from perdure.core.errors import ConfigError

TEST_CLOCK_VARIABLE = "PERDURE_TEST_CLOCK"
TEST_CLOCK_START = datetime(2026, 1, 1, tzinfo=UTC)


class FileClock:
    """A fake clock kept in a file, so that several processes share one fake time.

    ``now()`` reads the file each time; :meth:`set` and :meth:`advance` replace it atomically
    (write a temporary file beside it, then ``os.replace``), so a reader sees the old time or the
    new one, never half a write. Create the file with :meth:`create` before any process reads it.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    @classmethod
    def create(cls, path: str | os.PathLike[str], start: datetime | None = None) -> FileClock:
        """Write the file with ``start`` (default 2026-01-01 UTC) and return its clock."""
        clock = cls(path)
        clock.set(start or TEST_CLOCK_START)
        return clock

    @property
    def env(self) -> dict[str, str]:
        """The environment variable that makes another process read this clock."""
        return {TEST_CLOCK_VARIABLE: str(self.path)}

    def now(self) -> datetime:
        """The time written in the file (UTC, timezone-aware)."""
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            raise ConfigError(
                f"{TEST_CLOCK_VARIABLE} names {self.path}, which does not exist",
                fix="create it with FileClock.create(path) or unset the variable",
            ) from None
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            when = None
        if when is None or when.tzinfo is None:
            raise ConfigError(
                f"the test clock {self.path} holds {text[:40]!r}, not an ISO 8601 time with a "
                "time zone",
                fix="write it with FileClock.set or FileClock.advance",
            )
        return when.astimezone(UTC)

    def set(self, when: datetime) -> datetime:
        """Make ``when`` the current time of every process reading this file."""
        if when.tzinfo is None:
            raise ValueError("the test clock needs a timezone-aware time")
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
        tmp.write_text(when.astimezone(UTC).isoformat() + "\n", encoding="utf-8")
        os.replace(tmp, self.path)
        return when

    def advance(self, seconds: float) -> datetime:
        """Move the time forward by ``seconds`` for every process and return the new time."""
        with self._lock:
            return self.set(self.now() + timedelta(seconds=seconds))


def default_clock() -> Clock:
    """The test clock named by ``PERDURE_TEST_CLOCK`` when it is set, else the wall clock."""
    path = os.environ.get(TEST_CLOCK_VARIABLE)
    if not path:
        return SystemClock()
    clock = FileClock(path)
    clock.now()  # a missing or unreadable file is reported here, once, at start-up
    return clock
