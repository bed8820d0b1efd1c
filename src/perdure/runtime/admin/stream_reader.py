"""Reading a message's durable token stream: every entry after a sequence number, once, and
optionally following it live until the message is finished.

This is the reader every surface calls (the CLI's ``perdure stream``, a server's SSE
endpoint): a client that reconnects passes the last sequence number it saw and gets each later
entry exactly once, ``superseded`` markers included. Following waits on PostgreSQL's
LISTEN/NOTIFY (channel ``perdure_stream``) and, on SQLite, polls every ``poll`` seconds; either
way the store is re-read, a notification only wakes the reader.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from perdure.core.streams import StreamEntry, StreamEventKind
from perdure.runtime.admin.parts import RuntimeParts

PAGE = 500
"""Entries read per query."""

SAFETY_WAIT = 1.0
"""On PostgreSQL, the longest a follower waits for a notification before it re-reads anyway."""


class StreamReader(Iterator[StreamEntry]):
    """An iterator over one message's stream entries with ``seq > after``, in order.

    Without ``follow`` it ends when it has read what is stored now. With ``follow`` it waits
    for more and ends after the ``finished`` entry, when the stream's run ended without
    finishing it (no more entries can come), when the runtime shuts down, or when
    :meth:`close` is called (from any thread). ``last_seq`` is the number of the last entry
    returned: the ``after`` to reconnect with.
    """

    def __init__(
        self,
        parts: RuntimeParts,
        tenant_id: str,
        message_id: str,
        after: int,
        follow: bool,
        poll: float,
        shutdown: threading.Event,
    ) -> None:
        self.message_id = message_id
        self.last_seq = after
        self._parts = parts
        self._tenant = tenant_id
        self._follow = follow
        self._poll = poll
        self._stop = threading.Event()
        self._shutdown = shutdown
        self._entries = self._read()

    def __next__(self) -> StreamEntry:
        return next(self._entries)

    def close(self) -> None:
        """Stop following: the iterator ends at its next wait."""
        self._stop.set()

    def _stopped(self) -> bool:
        return self._stop.is_set() or self._shutdown.is_set()

    def _read(self) -> Iterator[StreamEntry]:
        store = self._parts.store
        watch = store.watch_streams() if self._follow else None
        key = f"{self._tenant}/{self.message_id}"
        try:
            if watch is not None:
                watch.wait(0.0)  # listen before the first read, so no write is missed
            while True:
                page = store.stream_entries(
                    self._tenant, self.message_id, after=self.last_seq, limit=PAGE
                )
                for entry in page:
                    self.last_seq = entry.seq
                    yield entry
                    if entry.kind is StreamEventKind.FINISHED:
                        return
                if len(page) == PAGE:
                    continue
                if watch is None or self._stopped():
                    return
                info = store.stream_info(self._tenant, self.message_id)
                if info is not None and info.last_seq > self.last_seq:
                    continue  # written since the read
                if info is not None and (info.finished or info.run_ended):
                    return  # nothing more can come
                if watch.notifies:
                    watch.wait(max(self._poll, SAFETY_WAIT), key)
                else:
                    self._stop.wait(self._poll)
        finally:
            if watch is not None:
                watch.close()
