"""The hottest statements, prepared on the server and sent straight through libpq.

A plain step boundary is one statement (``commit_step``) with five parameters and one short row
back. Sent through a psycopg cursor, the client spends most of its time in psycopg's Python
layer (a cursor, its query conversion, dumpers, the result's loaders and row factory): about
four times what libpq's own ``PQexecPrepared`` costs for the same statement. So the statements
named in :data:`HOT` are prepared once per connection under a name of their own
(``perdure_<query>``) and executed with ``exec_prepared`` (which lets other threads run while
it waits for the server), their parameters sent as text and their rows read as text.

Only values whose text form is plain go this way (text without NUL, integers, booleans, JSON
text); anything else takes the cursor, as every other statement does, so errors stay the
same: a failed statement raises the psycopg error of its SQLSTATE
(:func:`psycopg.errors.error_from_result`), a broken connection ``OperationalError``, both
translated by the driver as before.

The first use on a connection prepares the statement in the same pipeline as its run (libpq's
pipeline mode: Parse, Bind, Execute, Sync sent together), so it costs no round trip more.

The bookkeeping of what a connection has prepared can go stale while the connection lives on:
psycopg sends ``DEALLOCATE ALL`` after a ``ROLLBACK`` (or a ``COMMIT`` that rolled back) on a
connection where it prepared statements of its own, which drops ours too; so does a
``DISCARD ALL`` or a ``DEALLOCATE`` by anyone on the session. A run of a statement the server no
longer has (SQLSTATE 26000, ``invalid_sql_statement_name``) changed nothing (it ran in
autocommit, alone): the statement is prepared again and run once more, in one pipeline.
"""

from __future__ import annotations

import re
import select
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import psycopg
from psycopg import errors, pq

HOT = frozenset({"commit_step"})
"""The queries executed here when their parameters allow it (see the module docstring)."""

MISSING_STATEMENT = b"26000"
"""SQLSTATE ``invalid_sql_statement_name``: the server has no prepared statement of that name."""

_PLACEHOLDER = re.compile(rb"%\((\w+)\)s|%%")

_FROM_TEXT: dict[int, Callable[[bytes], Any]] = {
    16: lambda v: v == b"t",  # bool
    20: int,  # int8
    21: int,  # int2
    23: int,  # int4
    25: bytes.decode,  # text
    1043: bytes.decode,  # varchar
}
"""How a column of each type OID is read from its text form."""

_DONE = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK)

_prepared: weakref.WeakKeyDictionary[psycopg.Connection[Any], set[str]] = (
    weakref.WeakKeyDictionary()
)
"""The queries prepared on each open connection."""


def dollar_form(sql: bytes) -> tuple[bytes, tuple[str, ...]]:
    """``sql`` without its comment lines, psycopg's ``%(name)s`` placeholders numbered ``$1``,
    ``$2``... (one number per name) and ``%%`` as ``%``; and the names in number order."""
    names: list[str] = []
    sql = b"\n".join(ln for ln in sql.splitlines() if not ln.lstrip().startswith(b"--"))

    def number(m: re.Match[bytes]) -> bytes:
        if m.group(1) is None:
            return b"%"
        name = m.group(1).decode()
        if name not in names:
            names.append(name)
        return b"$%d" % (names.index(name) + 1)

    return _PLACEHOLDER.sub(number, sql), tuple(names)


def text_params(names: tuple[str, ...], params: Mapping[str, Any]) -> list[bytes | None] | None:
    """The parameters as text, in number order; None when one has no plain text form here."""
    out: list[bytes | None] = []
    for name in names:
        value = params[name]
        kind = type(value)
        if value is None:
            out.append(None)
        elif kind is str:
            if "\x00" in value:
                return None  # psycopg refuses it with its own error: keep that error
            out.append(value.encode())
        elif kind is int:
            out.append(b"%d" % value)
        elif kind is bool:
            out.append(b"t" if value else b"f")
        else:
            return None
    return out


def one(
    conn: psycopg.Connection[Any], query: str, sql: bytes, values: list[bytes | None]
) -> dict[str, Any] | None:
    """The first row (by column name) of the prepared ``query`` run with ``values`` on
    ``conn`` (in autocommit), or None. On a connection that lacks it, the statement is
    prepared in the same pipeline as its first run: no round trip more than the statement."""
    pgconn = conn.pgconn
    name = b"perdure_" + query.encode()
    done = _prepared.get(conn)
    if done is None:
        done = _prepared.setdefault(conn, set())
    if query in done:
        result = pgconn.exec_prepared(name, values)  # type: ignore[arg-type]  # None: NULL
        if _missing(pgconn, result):  # deallocated under us: prepare it again, run it once more
            done.discard(query)
            result = _prepare_and_run(pgconn, name, sql, values, done, query)
        else:
            _check(pgconn, result)
    else:
        result = _prepare_and_run(pgconn, name, sql, values, done, query)
    if result.ntuples == 0:
        return None
    row: dict[str, Any] = {}
    for col in range(result.nfields):
        raw = result.get_value(0, col)
        key = (result.fname(col) or b"").decode()
        row[key] = None if raw is None else _FROM_TEXT[result.ftype(col)](raw)
    return row


def _prepare_and_run(
    pgconn: pq.abc.PGconn,
    name: bytes,
    sql: bytes,
    values: list[bytes | None],
    done: set[str],
    query: str,
) -> pq.abc.PGresult:
    """Prepare ``sql`` as ``name`` and run it with ``values``: Parse, Bind, Execute and Sync
    sent together in libpq's pipeline mode, every result read before it is left. Once the
    prepare succeeded, ``query`` joins ``done`` (whether the run then fails or not)."""
    pgconn.enter_pipeline_mode()
    try:
        pgconn.send_prepare(name, sql)
        pgconn.send_query_prepared(name, values)
        pgconn.pipeline_sync()
        while pgconn.flush():  # a large value may not fit the socket's buffer at once
            select.select([], [pgconn.socket], [])
        results: list[pq.abc.PGresult] = []
        while True:
            got = pgconn.get_result()
            if got is None:
                if pgconn.status != pq.ConnStatus.OK:
                    break
                continue  # the end of one command's results
            if got.status == pq.ExecStatus.PIPELINE_SYNC:
                break
            results.append(got)
            if pgconn.status != pq.ConnStatus.OK:
                break
    finally:
        if pgconn.status == pq.ConnStatus.OK:
            pgconn.exit_pipeline_mode()
    if results and results[0].status == pq.ExecStatus.COMMAND_OK:
        done.add(query)
    for got in results:  # the prepare's failure first, else the run's
        _check(pgconn, got)
    if len(results) != 2:
        raise psycopg.OperationalError("the server did not answer the prepared statement")
    return results[1]


def _missing(pgconn: pq.abc.PGconn, result: pq.abc.PGresult) -> bool:
    """True when the server does not know the prepared statement run (SQLSTATE 26000)."""
    return (
        pgconn.status == pq.ConnStatus.OK
        and result.status == pq.ExecStatus.FATAL_ERROR
        and result.error_field(pq.DiagnosticField.SQLSTATE) == MISSING_STATEMENT
    )


def _check(pgconn: pq.abc.PGconn, result: pq.abc.PGresult) -> None:
    """Raise what psycopg would for a failed statement or a connection that broke."""
    if pgconn.status != pq.ConnStatus.OK:
        message = pgconn.error_message.decode("utf-8", "replace").strip()
        raise psycopg.OperationalError(message or "the connection to the server was lost")
    if result.status not in _DONE:
        raise errors.error_from_result(result, encoding="utf-8")
