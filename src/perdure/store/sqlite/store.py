"""The embedded store: one SQLite file, WAL, explicit ``BEGIN IMMEDIATE`` transactions.

This module holds runs, leases, step-boundary commits and history; ``sqlite_effects`` the effect
ledger; ``sqlite_conn`` the connections and transactions; ``sqlite_rows`` the row mapping.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime

from perdure.core.errors import LeaseLostError, RunClosedError, RunNotFoundError, StoreError
from perdure.core.model import JSON, Run, RunStatus
from perdure.core.records import SignalWait
from perdure.store import migrate
from perdure.store.base import Boundary, NewRun
from perdure.store.reads import StoreReads
from perdure.store.rows import (
    ERROR_STATUSES,
    LEASED,
    advance_params,
    step_completed,
    step_params,
    to_json,
)
from perdure.store.sqlite.conn import Q, ts
from perdure.store.sqlite.effects import SqliteEffects
from perdure.store.sqlite.fleet import SqliteFleet
from perdure.store.sqlite.rows import (
    event,
    guard_failure,
    run_row,
    write_fields,
    write_messages,
)
from perdure.store.sqlite.versions import SqliteVersions
from perdure.store.sqlite.waits import SqliteWaits, wake


class SqliteStore(StoreReads, SqliteEffects, SqliteWaits, SqliteVersions, SqliteFleet):
    """:class:`~perdure.store.base.Store` on one SQLite database file."""

    dialect = "sqlite"

    # -- migrations ---------------------------------------------------------------------------

    def migrate(self, now: datetime) -> list[str]:
        """See :meth:`Store.migrate`. Runs inside one ``BEGIN IMMEDIATE`` transaction."""
        known = migrate.discover(self.dialect)
        applied_names: list[str] = []
        with self._write() as conn:
            conn.execute(Q["create_migrations_table"])
            rows = conn.execute(Q["applied_migrations"]).fetchall()
            todo = migrate.pending(known, [(r[0], r[1], r[2]) for r in rows])
            for m in todo:
                for statement in _statements(m.sql):
                    conn.execute(statement)
                conn.execute(
                    Q["record_migration"],
                    {
                        "version": m.version,
                        "name": m.name,
                        "checksum": m.checksum,
                        "now": ts(now),
                    },
                )
                applied_names.append(f"{m.version:04d}_{m.name}")
        return applied_names

    def schema_version(self) -> int:
        """See :meth:`Store.schema_version`."""
        conn = self._conn()
        exists = conn.execute(Q["migrations_table_exists"]).fetchone()
        if not exists:
            return 0
        rows = conn.execute(Q["applied_migrations"]).fetchall()
        return int(rows[-1][0]) if rows else 0

    # -- runs -----------------------------------------------------------------------------------

    def create_run(self, new: NewRun, now: datetime) -> tuple[Run, bool]:
        """See :meth:`Store.create_run`."""
        key = {"tenant_id": new.tenant_id, "idempotency_key": new.idempotency_key}
        with self._write() as conn:
            if new.idempotency_key is not None:
                row = conn.execute(Q["run_by_key"], key).fetchone()
                if row is not None:
                    return run_row(row), False
            at = ts(now)
            ids = {"tenant_id": new.tenant_id, "run_id": new.run_id}
            conn.execute(
                Q["insert_run"],
                {
                    **ids,
                    "thread_id": new.thread_id,
                    "workflow": new.workflow,
                    "next_step": new.start_step,
                    "release": to_json(new.release.to_json()),
                    "idempotency_key": new.idempotency_key,
                    "budget": to_json(new.budget),
                    "workflow_version": new.release.workflow_version,
                    "state_schema": new.release.state_schema,
                    "now": at,
                },
            )
            write_fields(conn, ids, new.state)
            write_messages(conn, new.tenant_id, new.thread_id, new.run_id, new.messages, at)
            event(conn, ids, "created", None, None, {"workflow": new.workflow}, at)
            row = conn.execute(Q["get_run"], ids).fetchone()
        return run_row(row), True

    def get_run(self, tenant_id: str, run_id: str) -> Run:
        """See :meth:`Store.get_run`."""
        rows = self._read("get_run", {"tenant_id": tenant_id, "run_id": run_id})
        if not rows:
            raise RunNotFoundError(f"no run {run_id} in tenant {tenant_id}")
        return run_row(rows[0])

    def list_runs(
        self,
        tenant_id: str,
        *,
        statuses: Sequence[RunStatus] = (),
        workflow: str | None = None,
        thread_id: str | None = None,
        limit: int = 100,
    ) -> list[Run]:
        """See :meth:`Store.list_runs`."""
        params = {
            "tenant_id": tenant_id,
            "any_status": not statuses,
            "statuses": to_json([str(s) for s in statuses]),
            "workflow": workflow,
            "thread_id": thread_id,
            "limit": limit,
        }
        return [run_row(r) for r in self._read("list_runs", params)]

    # -- leases ---------------------------------------------------------------------------------

    def claim(
        self,
        owner: str,
        lease_until: datetime,
        now: datetime,
        workflows: Sequence[str],
        *,
        tenant_id: str | None = None,
        run_id: str | None = None,
        dead_owner: str | None = None,
    ) -> Run | None:
        """See :meth:`Store.claim`. The pick and the update share one ``BEGIN IMMEDIATE``."""
        at = ts(now)
        pick = {
            "now": at,
            "workflows": to_json(list(workflows)),
            "tenant_id": tenant_id,
            "run_id": run_id,
            "dead_owner": dead_owner,
        }
        with self._write() as conn:
            found = conn.execute(Q["pick_runnable"], pick).fetchone()
            if found is None:
                return None
            ids = {"tenant_id": found["tenant_id"], "run_id": found["run_id"]}
            before = conn.execute(Q["get_run"], ids).fetchone()
            row = conn.execute(
                Q["claim_run"],
                {
                    **ids,
                    "owner": owner,
                    "lease_until": ts(lease_until),
                    "now": at,
                    "dead_owner": dead_owner,
                },
            ).fetchone()
            run = run_row(row)
            claimed = {"owner": owner, "previous_owner": before["owner"]}
            event(conn, ids, "claimed", None, run.fence, claimed, at)
            if before["status"] != row["status"]:
                change = {"from": before["status"], "to": row["status"]}
                event(conn, ids, "status", None, run.fence, change, at)
        return run

    def heartbeat(
        self, tenant_id: str, run_id: str, owner: str, fence: int, lease_until: datetime
    ) -> None:
        """See :meth:`Store.heartbeat`."""
        params = {
            "tenant_id": tenant_id,
            "run_id": run_id,
            "owner": owner,
            "fence": fence,
            "lease_until": ts(lease_until),
        }
        with self._write() as conn:
            if conn.execute(Q["heartbeat"], params).rowcount == 0:
                raise LeaseLostError(f"run {run_id}: lease with fence {fence} is no longer held")

    def release(self, tenant_id: str, run_id: str, owner: str, fence: int, now: datetime) -> bool:
        """See :meth:`Store.release`."""
        params = {"tenant_id": tenant_id, "run_id": run_id, "owner": owner, "fence": fence}
        with self._write() as conn:
            released = conn.execute(Q["release"], params).rowcount == 1
            if released:
                event(conn, params, "released", None, fence, {"owner": owner}, ts(now))
        return released

    # -- step-boundary commit -------------------------------------------------------------------

    def commit(
        self,
        tenant_id: str,
        run_id: str,
        fence: int,
        expected_version: int,
        boundaries: Sequence[Boundary],
        now: datetime,
    ) -> int:
        """See :meth:`Store.commit`. The guarded run update runs first, so a lost race writes
        nothing else. A commit refused because the run ended or another worker owns it is
        recorded as a ``late_commit`` event."""
        try:
            return self._commit(tenant_id, run_id, fence, expected_version, boundaries, now)
        except (RunClosedError, LeaseLostError) as exc:
            info = {"fence": fence, "steps": [b.step for b in boundaries], "refused": exc.code}
            self.record_event(tenant_id, run_id, "late_commit", info, now)
            raise

    def _commit(
        self,
        tenant_id: str,
        run_id: str,
        fence: int,
        expected_version: int,
        boundaries: Sequence[Boundary],
        now: datetime,
    ) -> int:
        last = boundaries[-1]
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        at = ts(now)
        with self._write() as conn:
            params = advance_params(
                ids, boundaries, fence=fence, expected_version=expected_version, at=at, stamp=ts
            )
            row = conn.execute(Q["advance_run"], params).fetchone()
            if row is None:
                raise guard_failure(conn, ids, fence, expected_version)
            seq = row["steps_done"] - len(boundaries)
            for b in boundaries:
                seq += 1
                conn.execute(Q["insert_step"], step_params(ids, seq, b, fence, ts))
                write_fields(conn, ids, b.state)
                fin = ts(b.finished_at)
                write_messages(conn, tenant_id, row["thread_id"], run_id, b.messages, fin)
                event(conn, ids, "step_completed", b.step, fence, step_completed(seq, b), at)
            version = int(row["state_version"])
            if last.status is not RunStatus.RUNNING:
                change = {"from": "RUNNING", "to": str(last.status)}
                event(conn, ids, "status", last.step, fence, change, at)
                version = self._begin_wait(conn, ids, last, fence, at) or version
        return version

    def _begin_wait(
        self,
        conn: sqlite3.Connection,
        ids: dict[str, str],
        last: Boundary,
        fence: int,
        at: str | None,
    ) -> int | None:
        """Inside a commit: record a pending approval, or take a signal already in the inbox
        (the run then does not wait). Returns the new state_version if the run was woken."""
        waiting = last.waiting
        if last.approval is not None:
            a = last.approval
            conn.execute(
                Q["insert_approval"],
                {
                    **ids,
                    "step": last.step,
                    "role": a.wait.role,
                    "request": to_json(a.request) or "null",
                    "on_approve": a.wait.on_approve,
                    "on_reject": a.wait.on_reject,
                    "now": at,
                },
            )
            return None
        if not isinstance(waiting, SignalWait):
            return None
        found = conn.execute(Q["first_unconsumed_signal"], {**ids, "name": waiting.name}).fetchone()
        if found is None:
            return None
        return wake(conn, ids, found, waiting.next, fence, at)

    def set_status(
        self,
        tenant_id: str,
        run_id: str,
        *,
        expected_status: RunStatus,
        expected_version: int,
        status: RunStatus,
        fence: int | None,
        now: datetime,
        data: JSON = None,
        release_lease: bool = False,
    ) -> Run:
        """See :meth:`Store.set_status`."""
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        at = ts(now)
        keeps_error = status in ERROR_STATUSES
        with self._write() as conn:
            row = conn.execute(
                Q["set_status"],
                {
                    **ids,
                    "status": str(status),
                    "error": to_json(data) if keeps_error and data is not None else None,
                    "keep_lease": not release_lease and status in LEASED,
                    "now": at,
                    "expected_status": str(expected_status),
                    "expected_version": expected_version,
                    "fence": fence,
                },
            ).fetchone()
            if row is None:
                raise guard_failure(conn, ids, fence, expected_version)
            change = {"from": str(expected_status), "to": str(status), "data": data}
            event(conn, ids, "status", None, fence, change, at)
        return run_row(row)

    def defer(
        self,
        tenant_id: str,
        run_id: str,
        *,
        fence: int,
        expected_version: int,
        wake_at: datetime,
        step_attempts: int,
        now: datetime,
        data: JSON = None,
    ) -> Run:
        """See :meth:`Store.defer`."""
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        at = ts(now)
        with self._write() as conn:
            row = conn.execute(
                Q["defer_run"],
                {
                    **ids,
                    "wake_at": ts(wake_at),
                    "step_attempts": step_attempts,
                    "now": at,
                    "fence": fence,
                    "expected_version": expected_version,
                },
            ).fetchone()
            if row is None:
                raise guard_failure(conn, ids, fence, expected_version)
            info = {"wake_at": ts(wake_at), "attempts": step_attempts, "error": data}
            event(conn, ids, "retry_scheduled", row["next_step"], fence, info, at)
        return run_row(row)

    # -- history --------------------------------------------------------------------------------


def _statements(script: str) -> Iterator[str]:
    """Split a migration into statements with SQLite's own tokenizer (never on bare ';')."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer
            buffer = ""
    if buffer.strip() and not all(
        ln.strip().startswith("--") or not ln.strip() for ln in buffer.splitlines()
    ):
        raise StoreError("a migration ends with an incomplete statement")
