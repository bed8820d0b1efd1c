"""What a database contributes to the store: a driver and its transactions.

The store logic (guards, batching, events, the effect ledger, waits, versions) is written once,
in :mod:`perdure.store.engine`; it speaks to the database only through the two protocols here.
A driver owns its connections, opens transactions, says how times and lists travel as query
parameters and how stored times come back, takes the locks its database needs, and translates
every driver exception into a :class:`~perdure.core.errors.PerdureError` inside
:meth:`Driver.write` and :meth:`Driver.read`, so no driver exception reaches a caller.

Queries are named: a :class:`Tx` runs the query of that name from the dialect's
``sql/queries.sql``. Both dialects define the same names, but for the few only one of them
runs (a dialect's own settings, locks and notifications, and what PostgreSQL writes in one
statement where SQLite takes several), which :data:`perdure.store.queries.DIALECT_ONLY` declares;
a shared query one dialect has nothing to do for is a no-op there (``create_schema`` on
SQLite). Rows are read by column name (:class:`~perdure.store.rows.Row`), or as tuples where a
read returns many (:meth:`Tx.values`), or as tuples of bytes where the values are large and
wanted as bytes (:meth:`Tx.binary`).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from perdure.core.errors import InvalidInputError, StoreError, StoreUnavailableError
from perdure.store.rows import Params, Row
from perdure.store.watch import Watch

NO_PARAMS: Params = {}
"""The parameters of a query that takes none."""


def not_text(exc: UnicodeEncodeError) -> InvalidInputError:
    """What a driver raises when a parameter is not valid UTF-8 text (a lone surrogate, as
    from undecodable bytes on a command line): bad input, never a traceback."""
    bad = exc.object[exc.start : exc.end].encode("utf-8", "backslashreplace").decode()
    return InvalidInputError(
        f"a value given to the store is not valid UTF-8 text (it holds {bad!r})",
        fix="pass ids and text as UTF-8",
    )


class LockTimeoutError(StoreUnavailableError):
    """A lock was not granted within its timeout (PostgreSQL ``lock_not_available``): the
    operation changed nothing and may be tried again."""

    code = "lock_timeout"
    fix = "try again"


class NumberingConflictError(StoreError):
    """A one-statement commit (:meth:`Driver.statement`) numbered a thread's messages from a
    view older than the thread's lock: another writer added messages while it waited, the
    numbers collided on the thread's unique key and the statement wrote nothing. The engine
    then commits the boundary as a transaction, which numbers under the lock it holds; a user
    never sees this error."""

    code = "numbering_conflict"


class Tx(Protocol):
    """One open transaction (or, for reads, one connection) of a driver.

    Every method runs a named query of the dialect with named parameters.
    """

    def one(self, query: str, params: Params = NO_PARAMS) -> Row | None:
        """The first row the query returns, or None."""
        ...

    def all(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        """Every row the query returns."""
        ...

    def values(self, query: str, params: Params = NO_PARAMS) -> list[tuple[Any, ...]]:
        """Every row the query returns as a tuple of its columns, in the query's order: for a
        read of many rows, where reading each column by name costs more than the column (a
        thread's messages)."""
        ...

    def binary(self, query: str, params: Params = NO_PARAMS) -> list[tuple[Any, ...]]:
        """Every row the query returns as a tuple of its columns, each ``text`` column as its
        UTF-8 bytes, never decoded into a ``str`` (PostgreSQL sends the rows in its binary
        format, where text is those bytes). For a read whose values are large and wanted as
        bytes (a run's state fields, decoded from their UTF-8 bytes): a ``str`` would cost a
        decode, then an encode, each a copy of the whole value."""
        ...

    def many(self, statements: Sequence[tuple[str, Params]]) -> list[Row | None]:
        """Each named query with its parameters, all sent together (one round trip on
        PostgreSQL); the first row each returned, or None, in the same order."""
        ...

    def run(self, query: str, params: Params = NO_PARAMS) -> int:
        """Run a statement; return how many rows it changed (unknown inside :meth:`batch`)."""
        ...

    def batch(self, *, last: bool = False) -> AbstractContextManager[None]:
        """Statements whose results are not read, sent together (PostgreSQL's pipeline; one at
        a time on SQLite). Rows changed are not counted inside. ``last``: they are the write
        transaction's last statements, and PostgreSQL sends its ``COMMIT`` with them; nothing
        may run in the transaction after the block."""
        ...

    def lock_thread(self, tenant_id: str, thread_id: str) -> None:
        """Hold the right to number a thread's messages until the transaction ends."""
        ...

    def script(self, sql: str) -> None:
        """Run a migration file: several statements, never split on a bare ``;``."""
        ...


class Driver(Protocol):
    """Connections to one database and the dialect's conventions."""

    url: str
    """The database URL the store was opened with."""
    dialect: str
    """``sqlite`` or ``postgres``: the folder of the dialect's ``.sql`` files."""
    notifies: bool
    """True when :meth:`wait_for_work` really waits for notifications."""
    parallel_writes: bool
    """True when write transactions on different connections run side by side (PostgreSQL's
    row locks); False when they take turns (SQLite's write lock)."""
    one_statement_writes: bool
    """True when one statement may write several tables (PostgreSQL: a data-modifying
    ``WITH``, one round trip), run by :meth:`statement`: a plain step boundary (the named
    queries ``commit_step`` and ``commit_steps``) and the worker's claim (``claim_next``).
    SQLite's statements write one table each, so it commits every boundary in :meth:`write`, a
    plain one with ``advance_plain`` (an update naming no indexed column), and claims with
    ``pick_next`` and ``claim_run`` there."""

    def when(self, value: Any) -> datetime | None:
        """A stored time as a timezone-aware datetime (None stays None): a
        :data:`~perdure.store.rows.When`."""
        ...

    def stamp(self, value: datetime | None) -> Any:
        """A time as a query parameter (None stays None)."""
        ...

    def array(self, values: Sequence[str]) -> Any:
        """A list of strings as a query parameter."""
        ...

    def write(self) -> AbstractContextManager[Tx]:
        """One write transaction: committed when the block ends, rolled back on any error."""
        ...

    def read(self) -> AbstractContextManager[Tx]:
        """A connection for reads outside any write transaction."""
        ...

    def feed(self) -> AbstractContextManager[Tx]:
        """A read of the event feed that never skips an event: every event numbered up to the
        newest one it sees is committed (none with a lower number can appear later). SQLite's
        writers take turns, so a plain read is that; PostgreSQL numbers events before commit,
        so the read first waits for the transactions writing events to end (briefly: it gives
        up with :class:`LockTimeoutError` rather than hold writers back)."""
        ...

    def statement(self) -> AbstractContextManager[Tx]:
        """A connection outside any transaction: each statement run on it is a transaction of
        its own, committed (and durable) when it returns."""
        ...

    def migration(self) -> AbstractContextManager[Tx]:
        """A write transaction that only one migrator at a time may hold."""
        ...

    def wait_for_work(self, timeout: float) -> bool:
        """See :meth:`perdure.store.base.Store.wait_for_work`."""
        ...

    def watch(self, listen: str) -> Watch:
        """A :class:`Watch` on the channel the named query ``listen`` listens to."""

    def wait_for_events(self, timeout: float) -> list[tuple[str, str]] | None:
        """See :meth:`perdure.store.wings.activity.contract.ActivityStore.wait_for_events`."""
        ...

    def close(self) -> None:
        """Close every connection the driver opened."""
        ...
