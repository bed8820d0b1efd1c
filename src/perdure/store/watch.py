"""Following something as it grows: the :class:`Watch` a store hands a reader
(:meth:`~perdure.store.base.Store.watch_streams`) and a driver opens
(:meth:`~perdure.store.driver.Driver.watch`), and :class:`NoWatch` for a database without
notifications."""

from __future__ import annotations

from typing import Protocol


class Watch(Protocol):
    """A wait for notifications on one channel (PostgreSQL LISTEN), for a reader that follows
    something as it grows. It only wakes the reader, who always re-reads the store."""

    notifies: bool
    """False when :meth:`wait` never waits (SQLite): the caller sleeps between reads itself."""

    def wait(self, timeout: float, payload: str | None = None) -> bool:
        """Block up to ``timeout`` seconds for a notification (with ``payload``, when given);
        True when one came. A lost connection is opened again on the next call."""
        ...

    def close(self) -> None:
        """Stop listening and close the connection."""
        ...


class NoWatch:
    """The :class:`Watch` of a database without notifications: :meth:`wait` returns at once."""

    notifies = False

    def wait(self, timeout: float, payload: str | None = None) -> bool:
        """See :meth:`Watch.wait`: never waits."""
        return False

    def close(self) -> None:
        """See :meth:`Watch.close`."""
