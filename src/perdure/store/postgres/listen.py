"""One LISTEN connection per store for every reader that follows something (token streams):
a :class:`ListenHub` thread receives the notifications and wakes the :class:`PostgresWatch` handles
waiting for them, so a thousand followers cost one connection, not a thousand.

A notification only wakes a reader, who always re-reads the store. When the hub (re)connects it
wakes every handle, since notifications sent while it was not listening are lost.
"""

from __future__ import annotations

import threading

import psycopg


class PostgresWatch:
    """A :class:`~perdure.store.watch.Watch` served by a :class:`ListenHub`."""

    notifies = True

    def __init__(self, hub: ListenHub) -> None:
        self._hub = hub
        self._event = threading.Event()
        self._want: str | None = None
        self._registered = False

    def wait(self, timeout: float, payload: str | None = None) -> bool:
        """See :meth:`Watch.wait`. The first call starts listening (and may return False while
        the hub connects; the caller re-reads either way)."""
        self._want = payload
        if not self._registered:
            self._registered = True
            self._hub.register(self)
        if self._event.wait(timeout):
            self._event.clear()
            return True
        return False

    def notify(self, payload: str | None) -> None:
        """From the hub: a notification arrived (None: the hub reconnected, wake anyway)."""
        if payload is None or self._want is None or payload == self._want:
            self._event.set()

    def close(self) -> None:
        """See :meth:`Watch.close`."""
        if self._registered:
            self._hub.unregister(self)
            self._registered = False


class ListenHub:
    """A daemon thread holding one connection that LISTENs with ``listen`` (a query), started
    when the first handle registers."""

    def __init__(self, url: str, listen: bytes) -> None:
        self._url = url
        self._listen = listen
        self._lock = threading.Lock()
        self._handles: set[PostgresWatch] = set()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def watch(self) -> PostgresWatch:
        """A new handle on this hub."""
        return PostgresWatch(self)

    def register(self, handle: PostgresWatch) -> None:
        with self._lock:
            self._handles.add(handle)
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(
                    target=self._run, name="perdure-listen", daemon=True
                )
                self._thread.start()

    def unregister(self, handle: PostgresWatch) -> None:
        with self._lock:
            self._handles.discard(handle)

    def close(self) -> None:
        """Stop the thread (within about a second) and its connection."""
        self._stop.set()
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout=5)

    def _wake(self, payload: str | None) -> None:
        with self._lock:
            handles = list(self._handles)
        for handle in handles:
            handle.notify(payload)

    def _run(self) -> None:
        conn: psycopg.Connection[tuple[object, ...]] | None = None
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = psycopg.connect(self._url, autocommit=True, connect_timeout=5)
                    conn.execute(self._listen)
                    self._wake(None)  # anything sent before this LISTEN was missed: re-read
                for note in conn.notifies(timeout=1.0):
                    self._wake(note.payload)
            except psycopg.Error:
                if conn is not None:
                    conn.close()
                conn = None
                self._stop.wait(0.5)
        if conn is not None:
            conn.close()
