"""The store calls a LangGraph saver has in flight, so that closing it waits for them.

LangGraph calls a saver from threads it does not join: an async graph's ``aput`` runs the
write in a worker thread (``asyncio.to_thread``), and cancelling the graph cancels the await,
not the thread, whose write goes on. Closing the database under that write would close a
connection another thread is writing on (on SQLite, a crash of the process). So every call
into the store is counted here, :meth:`Calls.close` refuses new calls and waits for the
counted ones to end, and only then may the saver close its runtime.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from perdure.langgraph.closed import SaverClosedError


class Calls:
    """A count of calls in flight and whether new ones are refused (thread-safe)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running = 0
        self._closed = False
        self._depth = threading.local()

    @contextmanager
    def one(self) -> Iterator[None]:
        """Count one call for the block; :class:`SaverClosedError` once closed. A call made
        from inside a counted one (a method that calls another) is part of it: it is let
        through after closing began, so that the outer call can finish."""
        depth: int = getattr(self._depth, "n", 0)
        with self._changed:
            if self._closed and depth == 0:
                raise SaverClosedError("the LangGraph saver is closed")
            self._running += 1
        self._depth.n = depth + 1
        try:
            yield
        finally:
            self._depth.n = depth
            with self._changed:
                self._running -= 1
                if self._running == 0:
                    self._changed.notify_all()

    @property
    def running(self) -> int:
        """How many calls are in flight now."""
        with self._changed:
            return self._running

    @property
    def closed(self) -> bool:
        """Whether new calls are refused (closing began)."""
        with self._changed:
            return self._closed

    def close(self) -> None:
        """Refuse new calls and return once every call in flight has ended (idempotent)."""
        with self._changed:
            self._closed = True
            self._changed.wait_for(lambda: self._running == 0)
