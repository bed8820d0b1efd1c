"""Server-sent event streams of a run's events, and of every run of a tenant.

Each event goes out as ``id: <seq>`` and ``data: <JSON>``, where ``seq`` is the event's
sequence number in the store. A client that reconnects with ``Last-Event-ID: <seq>`` (browsers
do it by themselves) gets every event after it exactly once: the stream reads the store from
that position, so nothing that committed is skipped and nothing is sent twice. A comment line
goes out every ``heartbeat`` seconds of silence so proxies keep the connection. A run's stream
ends (``event: end``) once the run is finished and its last events are sent.

A stream is a loop over a :class:`Source`: ``read(after)`` returns the items past a position.
The run's events are one source; a message's token deltas, numbered the same way, would be
another, served with the same resume rule.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import orjson

from perdure.core.errors import InvalidInputError
from perdure.core.model import TERMINAL, Event
from perdure.core.shapes import event_json
from perdure.runtime.runtime import Runtime
from perdure.server.hub import Hub

PAGE = 500
POSITION = re.compile(r"^[0-9]{1,18}$")
TERMINAL_NAMES = frozenset(str(s) for s in TERMINAL)


@dataclass(frozen=True, slots=True)
class Batch:
    """What a source read: items with their positions, and whether the stream is over (the
    run ended and nothing is left to send)."""

    items: Sequence[tuple[int, bytes]]
    finished: bool = False


class Source(Protocol):
    """Something a stream follows, numbered by increasing positions."""

    @property
    def tenant(self) -> str:
        """The tenant whose store the source reads."""
        ...

    @property
    def run_id(self) -> str | None:
        """The run it follows (None: every run of the tenant)."""
        ...

    def read(self, after: int) -> Batch:
        """Items after position ``after``, oldest first (at most a page)."""
        ...

    def __hash__(self) -> int:
        """Sources that read the same items are equal (streams at one position share one
        read)."""
        ...


def _payload(event: Event, run_id: str | None) -> bytes:
    body = event_json(event)
    body["run_id"] = event.run_id
    return orjson.dumps(body)


@dataclass(frozen=True, slots=True)
class RunEvents:
    """The events of one run; finished once the run ended and its events are sent."""

    runtime: Runtime
    tenant: str
    run_id: str

    def read(self, after: int) -> Batch:
        """See :meth:`Source.read`: one query while events flow. The stream is finished at
        the status event that ends the run, or, when nothing is new, once the run (read
        before its events, so nothing it committed is missed) has ended."""
        found = self._events(after)
        if not found:
            run = self.runtime.get(self.run_id, tenant=self.tenant)
            found = self._events(after)
            if not found:
                return Batch((), finished=run.status.terminal)
        last = found[-1]
        data = last.data if isinstance(last.data, dict) else {}
        ended = last.type == "status" and data.get("to") in TERMINAL_NAMES
        return Batch([(e.seq, _payload(e, self.run_id)) for e in found], finished=ended)

    def _events(self, after: int) -> list[Event]:
        return self.runtime.activity.events(
            self.run_id, tenant=self.tenant, after=after, limit=PAGE
        )


@dataclass(frozen=True, slots=True)
class TenantEvents:
    """Events of every run of one tenant, filtered by type and workflow; never finished."""

    runtime: Runtime
    tenant: str
    types: tuple[str, ...] = ()
    workflow: str | None = None
    run_id: str | None = None

    def read(self, after: int) -> Batch:
        """See :meth:`Source.read`."""
        found = self.runtime.activity.feed(
            tenant=self.tenant, after=after, types=self.types, workflow=self.workflow, limit=PAGE
        )
        return Batch([(e.seq, _payload(e, None)) for e in found])


def resume_position(last_event_id: str | None, after: str | None) -> int:
    """Where a stream starts: after ``Last-Event-ID`` (a reconnect), else after ``?after=``,
    else from the beginning. A position is a whole number written in digits only."""
    given = last_event_id if last_event_id not in (None, "") else after
    if given in (None, ""):
        return 0
    text = str(given)
    if not POSITION.match(text):
        raise InvalidInputError(
            f"stream position {text[:40]!r} is not a whole number of at most 18 digits",
            fix="send the last event's id",
        )
    return int(text)


OPENING = b": open\n\n"
"""A stream's first bytes: a comment (every client skips it; proxies see the stream begin)."""
RETRY = 1000
"""How long, in milliseconds, a client waits before it reconnects."""


def framed(
    data: bytes, *, position: int | None = None, event: str | None = None, first: bool = False
) -> bytes:
    """One SSE frame: ``id:`` (the position a reconnect resumes after), ``event:`` (absent for
    ``message``), and one ``data:`` line of JSON. The first frame of a stream also carries
    ``retry:``; it never goes out alone, since a frame without ``data`` is dispatched as an
    empty event by some clients."""
    lines = [b"retry: %d" % RETRY] if first else []
    if event is not None:
        lines.append(b"event: " + event.encode())
    if position is not None:
        lines.append(b"id: %d" % position)
    lines.append(b"data: " + data)
    return b"\n".join(lines) + b"\n\n"


async def stream(
    source: Source, hub: Hub, after: int, *, heartbeat: float = 15.0
) -> AsyncIterator[bytes]:
    """The text/event-stream body for ``source`` from position ``after`` (see
    :func:`framed` for how its frames look)."""
    yield OPENING
    cursor = after
    first = True
    with hub.subscribe(source.tenant, source.run_id) as wake:
        while True:
            wake.clear()
            batch = await hub.shared(source, cursor)
            for position, data in batch.items:
                yield framed(data, position=position, first=first)
                first = False
                cursor = position
            if batch.finished:
                yield framed(b"{}", event="end", first=first)
                return
            if len(batch.items) >= PAGE:
                continue
            try:
                await asyncio.wait_for(wake.wait(), heartbeat)
            except TimeoutError:
                yield b": heartbeat\n\n"
