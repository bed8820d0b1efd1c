"""What the engine does inside one transaction: events, state fields, thread messages, why a
guarded write failed, waking a waiting run. Every function takes the open
:class:`~perdure.store.driver.Tx` and times already in the driver's form (``at``), but
:func:`fetch` and :func:`write_event`, which take the :class:`~perdure.store.driver.Driver`
and open a transaction of their own."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from perdure.core.effects import EffectStatus
from perdure.core.errors import LeaseLostError, PerdureError, RunClosedError, StoreError
from perdure.core.model import JSON, Message
from perdure.store import rows
from perdure.store.base import CommitRequest
from perdure.store.driver import Driver, Tx
from perdure.store.rows import Params, Row


def fetch(driver: Driver, query: str, params: Params) -> list[Row]:
    """Every row of a named read query, outside any write transaction."""
    with driver.read() as tx:
        return tx.all(query, params)


def write_event(driver: Driver, ids: Params, type_: str, data: JSON, now: datetime) -> None:
    """One event of a run (no step, no fence), in a write transaction of its own. The run's row
    is locked first, as by every other writer of a run's events, so a run's events commit in
    the order of their numbers (a live stream that resumes after the last number it saw misses
    none)."""
    with driver.write() as tx:
        tx.one("lock_run", ids)
        event(tx, ids, type_, None, None, data, driver.stamp(now))


def need(tx: Tx, query: str, params: Params) -> Row:
    """The row a named query must find (it runs inside the transaction that made it)."""
    row = tx.one(query, params)
    if row is None:
        raise StoreError(f"query {query} found no row inside its own transaction")
    return row


def event(
    tx: Tx,
    ids: Params,
    type_: str,
    step: str | None,
    fence: int | None,
    data: JSON,
    at: Any,
) -> None:
    """Append an event to the run ``ids`` names."""
    params = {"type": type_, "step": step, "fence": fence, "data": rows.to_json(data), "at": at}
    tx.run("insert_event", {"tenant_id": ids["tenant_id"], "run_id": ids["run_id"], **params})


def write_fields(
    tx: Tx,
    ids: Params,
    fields: dict[str, bytes],
    *,
    step_seq: int,
    version: int,
    drop: Sequence[str] = (),
    logs: Collection[str] = (),
    appends: Mapping[str, bytes] | None = None,
    tailless: bool = False,
) -> None:
    """Insert or rewrite state fields (canonical JSON, stored as text byte for byte), delete
    the ``drop`` ones, and append each change to the run's history at ``step_seq`` (a removed
    field as NULL): only what changed is written, so the cost does not grow with history.

    Fields named in ``logs`` are written as the base of a field log (their earlier tails go);
    ``appends`` maps fields kept as logs to the tail this step appended (see
    :mod:`perdure.core.logs`): one small row, never the whole value. Any other field written or
    dropped loses the tails it may have, unless the caller knows it has none (``tailless``:
    the commit, whose runtime knows which fields are logs, and a new run)."""
    at = {"step_seq": step_seq, "version": version}
    for name, value in fields.items():
        text = value.decode()
        log = name in logs
        tx.run("upsert_field", {**ids, "field": name, "value": text, "log": log})
        tx.run("insert_history", {**ids, **at, "field": name, "value": text, "appended": False})
        if log or not tailless:
            tx.run("delete_tails", {**ids, "field": name})
    for name, tail in (appends or {}).items():
        text = tail.decode()
        tx.run("insert_tail", {**ids, "field": name, "step_seq": step_seq, "value": text})
        tx.run("insert_history", {**ids, **at, "field": name, "value": text, "appended": True})
    for name in drop:
        tx.run("delete_field", {**ids, "field": name})
        tx.run("delete_tails", {**ids, "field": name})
        tx.run("insert_history", {**ids, **at, "field": name, "value": None, "appended": False})


def write_messages(
    tx: Tx,
    tenant_id: str,
    thread_id: str,
    run_id: str | None,
    messages: Sequence[Message],
    at: Any,
    step_seq: int = 0,
) -> None:
    """Append messages to a thread, numbered while the transaction holds the thread, each
    with the step that appended it (0: with the run's start) and, for content kept in the
    artifact store, its reference."""
    if not messages:
        return
    thread = {"tenant_id": tenant_id, "thread_id": thread_id}
    tx.lock_thread(tenant_id, thread_id)
    for m in messages:
        tx.run(
            "insert_message",
            {
                **thread,
                "run_id": run_id,
                "role": m.role,
                "content": m.content,
                "tool_calls": rows.tool_calls_json(m),
                "tool_call_id": m.tool_call_id,
                "at": at,
                "step_seq": step_seq,
                "content_artifact": rows.to_json(m.artifact.to_json()) if m.artifact else None,
            },
        )


def guard_failure(tx: Tx, ids: Params, fence: int | None, expected_version: int) -> Exception:
    """Explain why a guarded update matched no row (read inside the same transaction)."""
    return rows.guard_failure(tx.one("get_run", ids), ids, fence, expected_version)


def effect_guard_failure(
    tx: Tx, tenant_id: str, key: str, fence: int | None, expected: EffectStatus
) -> Exception:
    """Explain why a guarded effect update matched no row."""
    effect = tx.one("get_effect", {"tenant_id": tenant_id, "key": key})
    run = None
    if effect is not None:
        run = tx.one("get_run", {"tenant_id": tenant_id, "run_id": effect["run_id"]})
    return rows.effect_guard_failure(effect, run, tenant_id, key, fence, expected)


def wake(
    tx: Tx, ids: Params, signal: Row, next_step: str, fence: int | None, at: Any
) -> int | None:
    """Consume ``signal`` and move a WAITING_EXTERNAL run to RUNNING at ``next_step``; return
    the new state_version (None when the run was not waiting)."""
    params = {**ids, "next_step": next_step, "expected_status": "WAITING_EXTERNAL", "now": at}
    row = tx.one("wake_run", params)
    if row is None:
        return None
    tx.run("consume_signal", {"id": signal["id"], "now": at})
    info = {"signal_id": signal["signal_id"], "name": signal["name"]}
    event(tx, ids, "signal_consumed", next_step, fence, info, at)
    event(tx, ids, "status", next_step, fence, {"from": "WAITING_EXTERNAL", "to": "RUNNING"}, at)
    return int(row["state_version"])


def refused(tx: Tx, request: CommitRequest, at: Any) -> PerdureError:
    """Why a commit request's guard matched nothing (read in the transaction ``tx``); a commit
    refused by the fence or a finished run is recorded as a ``late_commit`` event."""
    ids = {"tenant_id": request.tenant_id, "run_id": request.run_id}
    exc = guard_failure(tx, ids, request.fence, request.expected_version)
    if isinstance(exc, RunClosedError | LeaseLostError):
        tx.one("lock_run", ids)
        event(tx, ids, "late_commit", None, None, late(request, exc), at)
    return exc if isinstance(exc, PerdureError) else PerdureError(str(exc))


def late(request: CommitRequest, exc: PerdureError) -> dict[str, Any]:
    """The data of a ``late_commit`` event: who tried, which steps, why it was refused."""
    return {
        "fence": request.fence,
        "steps": [b.step for b in request.boundaries],
        "refused": exc.code,
    }


def still_used(tx: Tx, tenant_id: str, digest: str) -> bool:
    """True while a reference or a message of the tenant points to ``digest``."""
    params = {"tenant_id": tenant_id, "digest": digest, "pattern": f'%"{digest}"%'}
    return tx.one("digest_in_use", params) is not None


def unreferenced(tx: Tx, pairs: set[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Those ``(tenant_id, digest)`` pairs nothing points to any more."""
    return tuple(sorted(p for p in pairs if not still_used(tx, *p)))
