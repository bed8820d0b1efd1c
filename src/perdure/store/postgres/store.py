"""The shared store: PostgreSQL through psycopg 3 and a connection pool, schema ``perdure``.

This module holds runs, leases, step-boundary commits and history; ``postgres_effects`` the
effect ledger; ``postgres_waits`` approvals and signals; ``postgres_versions`` upgrades of
stored runs; ``postgres_conn`` the pool, transactions and error translation; ``rows`` (shared
with SQLite) the row mapping.

The worker's claim picks with ``FOR UPDATE SKIP LOCKED``, so concurrent claimers take different
runs without waiting on each other; the pick, the fence increment and the events are one
transaction. Every guarded write starts with the conditional ``UPDATE`` of the run, which locks
its row for the rest of the transaction. A thread's messages are numbered under a
transaction-scoped advisory lock on the thread. Migrations run in one transaction under
``pg_advisory_xact_lock`` (DDL is transactional in PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from perdure.core.errors import LeaseLostError, RunClosedError, RunNotFoundError
from perdure.core.model import JSON, Run, RunStatus
from perdure.core.records import SignalWait
from perdure.store import migrate
from perdure.store.base import Boundary, NewRun
from perdure.store.postgres.conn import (
    Conn,
    Params,
    Q,
    event,
    guard_failure,
    maybe,
    one,
    when,
    write_fields,
    write_messages,
)
from perdure.store.postgres.effects import PostgresEffects
from perdure.store.postgres.fleet import PostgresFleet
from perdure.store.postgres.versions import PostgresVersions
from perdure.store.postgres.waits import PostgresWaits, wake
from perdure.store.reads import StoreReads
from perdure.store.rows import (
    ERROR_STATUSES,
    LEASED,
    advance_params,
    iso,
    run_from_row,
    same,
    step_completed,
    step_params,
    to_json,
)


class PostgresStore(StoreReads, PostgresEffects, PostgresWaits, PostgresVersions, PostgresFleet):
    """:class:`~perdure.store.base.Store` on a PostgreSQL database, schema ``perdure``.

    ``PostgresStore(url, max_connections=8, timeout=30.0)``: see
    :class:`~perdure.store.postgres.conn.PostgresConnections`.
    """

    # -- migrations ---------------------------------------------------------------------------

    def migrate(self, now: datetime) -> list[str]:
        """See :meth:`Store.migrate`. One transaction under ``pg_advisory_xact_lock``: two
        processes migrating at once apply each file once."""
        known = migrate.discover(self.dialect)
        applied_names: list[str] = []
        with self._write() as conn:
            conn.execute(Q["lock_migrations"])
            if not one(conn, "migrations_table_exists", {})["present"]:
                conn.execute(Q["create_schema"])
                conn.execute(Q["create_migrations_table"])
            rows = conn.execute(Q["applied_migrations"]).fetchall()
            todo = migrate.pending(known, [(r["version"], r["name"], r["checksum"]) for r in rows])
            for m in todo:
                conn.execute(m.sql.encode())  # the whole file at once: never split on ';'
                conn.execute(
                    Q["record_migration"],
                    {"version": m.version, "name": m.name, "checksum": m.checksum, "now": now},
                )
                applied_names.append(f"{m.version:04d}_{m.name}")
        return applied_names

    def schema_version(self) -> int:
        """See :meth:`Store.schema_version`."""
        with self._connection() as conn:
            if not one(conn, "migrations_table_exists", {})["present"]:
                return 0
            rows = conn.execute(Q["applied_migrations"]).fetchall()
        return int(rows[-1]["version"]) if rows else 0

    # -- runs -----------------------------------------------------------------------------------

    def create_run(self, new: NewRun, now: datetime) -> tuple[Run, bool]:
        """See :meth:`Store.create_run`. The insert skips a run whose idempotency key exists,
        even one committed by a concurrent creator a moment ago."""
        ids = {"tenant_id": new.tenant_id, "run_id": new.run_id}
        with self._write() as conn:
            inserted = maybe(
                conn,
                "insert_run",
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
                    "now": now,
                },
            )
            if inserted is None:
                key = {"tenant_id": new.tenant_id, "idempotency_key": new.idempotency_key}
                return run_from_row(one(conn, "run_by_key", key), when), False
            write_fields(conn, ids, new.state)
            write_messages(conn, new.tenant_id, new.thread_id, new.run_id, new.messages, now)
            event(conn, ids, "created", None, None, {"workflow": new.workflow}, now)
            row = one(conn, "get_run", ids)
        return run_from_row(row, when), True

    def get_run(self, tenant_id: str, run_id: str) -> Run:
        """See :meth:`Store.get_run`."""
        found = self._read("get_run", {"tenant_id": tenant_id, "run_id": run_id})
        if not found:
            raise RunNotFoundError(f"no run {run_id} in tenant {tenant_id}")
        return run_from_row(found[0], when)

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
            "statuses": [str(s) for s in statuses],
            "workflow": workflow,
            "thread_id": thread_id,
            "limit": limit,
        }
        return [run_from_row(r, when) for r in self._read("list_runs", params)]

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
        """See :meth:`Store.claim`. The scan skips rows other transactions hold
        (``FOR UPDATE SKIP LOCKED``); a claim of one named run waits for its row instead."""
        params = {
            "owner": owner,
            "lease_until": lease_until,
            "now": now,
            "workflows": list(workflows),
            "tenant_id": tenant_id,
            "run_id": run_id,
            "dead_owner": dead_owner,
        }
        with self._write() as conn:
            row = maybe(conn, "claim_next" if run_id is None else "claim_run", params)
            if row is None:
                return None
            run = run_from_row(row, when)
            ids = {"tenant_id": run.tenant_id, "run_id": run.run_id}
            claimed = {"owner": owner, "previous_owner": row["previous_owner"]}
            event(conn, ids, "claimed", None, run.fence, claimed, now)
            if row["previous_status"] != row["status"]:
                change = {"from": row["previous_status"], "to": row["status"]}
                event(conn, ids, "status", None, run.fence, change, now)
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
            "lease_until": lease_until,
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
                event(conn, params, "released", None, fence, {"owner": owner}, now)
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
        """See :meth:`Store.commit`. The guarded run update runs first and locks the run's row,
        so a lost race writes nothing else. A commit refused because the run ended or another
        worker owns it is recorded as a ``late_commit`` event."""
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
        with self._write() as conn:
            params = advance_params(
                ids,
                boundaries,
                fence=fence,
                expected_version=expected_version,
                at=now,
                stamp=same,
            )
            row = maybe(conn, "advance_run", params)
            if row is None:
                raise guard_failure(conn, ids, fence, expected_version)
            seq = row["steps_done"] - len(boundaries)
            thread = row["thread_id"]
            with conn.pipeline():  # one round trip for the rows of every boundary
                for b in boundaries:
                    seq += 1
                    conn.execute(Q["insert_step"], step_params(ids, seq, b, fence, same))
                    write_fields(conn, ids, b.state)
                    write_messages(conn, tenant_id, thread, run_id, b.messages, b.finished_at)
                    event(conn, ids, "step_completed", b.step, fence, step_completed(seq, b), now)
            version = int(row["state_version"])
            if last.status is not RunStatus.RUNNING:
                change = {"from": "RUNNING", "to": str(last.status)}
                event(conn, ids, "status", last.step, fence, change, now)
                version = _begin_wait(conn, ids, last, fence, now) or version
        return version

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
        keeps_error = status in ERROR_STATUSES
        with self._write() as conn:
            row = maybe(
                conn,
                "set_status",
                {
                    **ids,
                    "status": str(status),
                    "error": to_json(data) if keeps_error and data is not None else None,
                    "keep_lease": not release_lease and status in LEASED,
                    "now": now,
                    "expected_status": str(expected_status),
                    "expected_version": expected_version,
                    "fence": fence,
                },
            )
            if row is None:
                raise guard_failure(conn, ids, fence, expected_version)
            change = {"from": str(expected_status), "to": str(status), "data": data}
            event(conn, ids, "status", None, fence, change, now)
        return run_from_row(row, when)

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
        with self._write() as conn:
            row = maybe(
                conn,
                "defer_run",
                {
                    **ids,
                    "wake_at": wake_at,
                    "step_attempts": step_attempts,
                    "now": now,
                    "fence": fence,
                    "expected_version": expected_version,
                },
            )
            if row is None:
                raise guard_failure(conn, ids, fence, expected_version)
            info = {"wake_at": iso(wake_at), "attempts": step_attempts, "error": data}
            event(conn, ids, "retry_scheduled", row["next_step"], fence, info, now)
        return run_from_row(row, when)

    # -- history --------------------------------------------------------------------------------


def _begin_wait(conn: Conn, ids: Params, last: Boundary, fence: int, at: datetime) -> int | None:
    """Inside a commit: record a pending approval, or take a signal already in the inbox (the
    run then does not wait). Returns the new state_version if the run was woken."""
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
    found = maybe(conn, "first_unconsumed_signal", {**ids, "name": waiting.name})
    if found is None:
        return None
    return wake(conn, ids, found, waiting.next, fence, at)
