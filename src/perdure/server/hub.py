"""Wake-ups for live streams: one thread per server learns which runs moved and wakes the
streams that follow them. On PostgreSQL it LISTENs (a trigger notifies ``tenant/run`` when
events commit: no polling); on SQLite it polls the event table every ``poll`` seconds. A
wake-up carries no data: each stream then reads its events from the store by sequence number,
so a lost or duplicated wake-up never loses or repeats an event."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from starlette.concurrency import run_in_threadpool

from perdure.core.errors import PerdureError
from perdure.runtime.runtime import Runtime

log = logging.getLogger("perdure.server")


class Shareable(Protocol):
    """A source of stream items (see :class:`perdure.server.sse.Source`), hashable."""

    def read(self, after: int) -> Any:
        """Items after ``after``."""
        ...

    def __hash__(self) -> int:
        """Equal sources read the same items."""
        ...


Topic = tuple[str, str | None]
"""What a stream follows: ``(tenant, run_id)``, or ``(tenant, None)`` for every run."""


class Hub:
    """Wakes the streams of this process when their runs move (see the module docstring)."""

    def __init__(self, runtime: Runtime, *, poll: float = 0.1, listen: float = 0.1) -> None:
        self.runtime = runtime
        self.poll = poll
        self.listen = listen
        self._waiters: dict[Topic, set[asyncio.Event]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reads: dict[tuple[Shareable, int], asyncio.Future[Any]] = {}

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the wake-up thread for streams served on ``loop``."""
        self._loop = loop
        self._thread = threading.Thread(target=self._run, name="perdure-hub", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the wake-up thread (it notices within ``listen`` seconds: a tenth of a second
        by default, so a server stops promptly; waiting on the connection costs no query)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @contextmanager
    def subscribe(self, tenant: str, run_id: str | None) -> Iterator[asyncio.Event]:
        """An event set whenever ``run_id`` (or, with None, any run of ``tenant``) moves."""
        event = asyncio.Event()
        topic = (tenant, run_id)
        with self._lock:
            self._waiters.setdefault(topic, set()).add(event)
        try:
            yield event
        finally:
            with self._lock:
                found = self._waiters.get(topic)
                if found is not None:
                    found.discard(event)
                    if not found:
                        del self._waiters[topic]

    async def shared(self, source: Shareable, after: int) -> Any:
        """``source.read(after)`` off the event loop, once for all the streams that ask for the
        same source at the same position at the same time (a wake-up of a run followed by
        many streams costs one read, not one per stream)."""
        key = (source, after)
        running = self._reads.get(key)
        if running is None:
            running = asyncio.ensure_future(run_in_threadpool(source.read, after))
            self._reads[key] = running
            running.add_done_callback(lambda _: self._reads.pop(key, None))
        return await asyncio.shield(running)

    @property
    def subscribers(self) -> int:
        """How many streams are following runs now."""
        with self._lock:
            return sum(len(v) for v in self._waiters.values())

    def _run(self) -> None:
        cursor: int | None = None
        while not self._stop.is_set():
            try:
                woken = self.runtime.activity.wait_for_events(self.listen)
                if woken is None:  # no notifications: poll the event table
                    if cursor is None:
                        cursor = self.runtime.activity.last_event_seq()
                    if self._stop.wait(self.poll):
                        return
                    moved = self.runtime.activity.moved_since(cursor)
                    if moved:
                        cursor = moved[-1][0]
                    woken = [(tenant, run) for _, tenant, run in moved]
            except PerdureError as exc:
                log.warning("stream wake-ups failed: %s", exc.one_line())
                if self._stop.wait(1.0):
                    return
                continue
            if woken:
                self._wake(set(woken))

    def _wake(self, moved: set[tuple[str, str]]) -> None:
        with self._lock:
            topics = {(t, r) for t, r in moved} | {(t, None) for t, _ in moved}
            events = [e for topic in topics for e in self._waiters.get(topic, ())]
        if events and self._loop is not None:
            for event in events:
                self._loop.call_soon_threadsafe(event.set)
