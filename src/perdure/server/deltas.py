"""Server-sent streams of a message's token deltas, with the same resume rule as run events.

Each entry of the message's durable stream (``rt.threads.stream``, the same reader) goes
out as ``id: <seq>`` and ``data: {"seq", "attempt", "kind", "text"}``. A client that reconnects
with ``Last-Event-ID`` (or ``?after=``) gets every later entry exactly once, ``superseded``
markers included (drop the draft shown so far: a new attempt follows). The stream ends
(``event: end``) once the message is finished, or when its run ended without finishing it.

The store is read by a reader that follows the stream (PostgreSQL: woken by LISTEN/NOTIFY;
SQLite: a short poll) in a thread of its own, so the event loop never waits on the database;
a client that goes away closes the reader.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator
from typing import cast

import orjson

from perdure.core.streams import StreamEntry
from perdure.runtime.runtime import Runtime
from perdure.server.sse import OPENING, framed

_END = object()


def _frame(entry: StreamEntry, *, first: bool) -> bytes:
    body = {"seq": entry.seq, "attempt": entry.attempt, "kind": str(entry.kind), "text": entry.text}
    return framed(orjson.dumps(body), position=entry.seq, first=first)


async def message_stream(
    runtime: Runtime, tenant: str, message_id: str, after: int, *, heartbeat: float = 15.0
) -> AsyncIterator[bytes]:
    """The text/event-stream body of ``message_id``'s deltas after sequence number ``after``."""
    reader = runtime.threads.stream(message_id, tenant=tenant, after=after, follow=True)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[object] = asyncio.Queue()

    def hand(item: object) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed: the server stopped
            loop.call_soon_threadsafe(queue.put_nowait, item)

    def pump() -> None:
        try:
            for entry in reader:
                hand(entry)
        except Exception as exc:  # handed to the stream, which ends
            hand(exc)
        finally:
            hand(_END)

    threading.Thread(target=pump, name=f"perdure-deltas-{message_id}", daemon=True).start()
    try:
        yield OPENING
        first = True
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), heartbeat)
            except TimeoutError:
                yield b": heartbeat\n\n"
                continue
            if item is _END or isinstance(item, Exception):
                yield framed(b"{}", event="end", first=first)
                return
            yield _frame(cast(StreamEntry, item), first=first)
            first = False
    finally:
        reader.close()
