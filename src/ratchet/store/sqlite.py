"""The embedded store: one SQLite file, WAL, explicit ``BEGIN IMMEDIATE`` transactions.

Each thread gets its own connection (autocommit mode, so every transaction is explicit). The
pragmas: ``journal_mode=WAL`` (readers never block the writer), ``synchronous=FULL`` (a commit is
on disk when it returns), ``busy_timeout`` (writers queue instead of failing), ``foreign_keys``.
Write transactions start with ``BEGIN IMMEDIATE`` so two claimers serialise on the write lock
instead of deadlocking on a read-to-write upgrade.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ratchet.effects import EffectRecord, EffectStatus, NewEffect
from ratchet.errors import (
    EffectNotFoundError,
    EffectStateError,
    LeaseLostError,
    RunClosedError,
    RunNotFoundError,
    StaleStateError,
    StoreError,
)
from ratchet.model import (
    JSON,
    Event,
    Message,
    Release,
    Run,
    RunStatus,
    StepRecord,
    ToolCall,
)
from ratchet.store import migrate
from ratchet.store.base import Boundary, NewRun
from ratchet.store.queries import queries

_Q = queries("sqlite")
Params = Mapping[str, Any]


def _ts(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="microseconds")


def _dt(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _json(value: JSON) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def _unjson(value: str | None) -> JSON:
    return None if value is None else orjson.loads(value)


class SqliteStore:
    """:class:`~ratchet.store.base.Store` on one SQLite database file."""

    dialect = "sqlite"

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        self.path = Path(path)
        self.url = f"sqlite:///{self.path}"
        self._busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._all: list[tuple[weakref.ref[threading.Thread], sqlite3.Connection]] = []
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the folder for {self.path}: {exc.strerror}",
                fix="choose a writable location with --db or RATCHET_DB",
            ) from exc

    # -- connections and transactions ---------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(
                    self.path, isolation_level=None, check_same_thread=False, timeout=0
                )
                conn.row_factory = sqlite3.Row
                conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = FULL")
                conn.execute("PRAGMA foreign_keys = ON")
            except sqlite3.Error as exc:
                raise StoreError(
                    f"cannot open SQLite database {self.path}: {exc}",
                    fix="check the path given with --db or RATCHET_DB and its permissions",
                ) from exc
            self._local.conn = conn
            with self._lock:
                self._close_orphans()
                self._all.append((weakref.ref(threading.current_thread()), conn))
        return conn

    def _close_orphans(self) -> None:
        """Close connections whose thread has ended (short-lived writer threads)."""
        keep = []
        for ref, conn in self._all:
            thread = ref()
            if thread is not None and thread.is_alive():
                keep.append((ref, conn))
            else:
                conn.close()
        self._all = keep

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot start a write transaction on {self.path}: {exc}") from exc
        try:
            yield conn
        except sqlite3.IntegrityError as exc:
            conn.execute("ROLLBACK")
            if str(exc) == "run_closed":
                raise RunClosedError("the run is finished and cannot change") from exc
            raise StoreError(f"a constraint refused the write: {exc}") from exc
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK")
            raise StoreError(f"commit failed on {self.path}: {exc}") from exc

    def _read(self, name: str, params: Params) -> list[sqlite3.Row]:
        try:
            return self._conn().execute(_Q[name], params).fetchall()
        except sqlite3.OperationalError as exc:
            raise StoreError(
                f"reading {self.path} failed: {exc}",
                fix="run `ratchet migrate` if the database is new, else check the file",
            ) from exc

    def close(self) -> None:
        """Close every connection this store opened, from any thread."""
        with self._lock:
            for _, conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()

    # -- migrations ---------------------------------------------------------------------------

    def migrate(self, now: datetime) -> list[str]:
        """See :meth:`Store.migrate`. Runs inside one ``BEGIN IMMEDIATE`` transaction."""
        known = migrate.discover(self.dialect)
        applied_names: list[str] = []
        with self._write() as conn:
            conn.execute(_Q["create_migrations_table"])
            rows = conn.execute(_Q["applied_migrations"]).fetchall()
            todo = migrate.pending(known, [(r[0], r[1], r[2]) for r in rows])
            for m in todo:
                for statement in _statements(m.sql):
                    conn.execute(statement)
                conn.execute(
                    _Q["record_migration"],
                    {
                        "version": m.version,
                        "name": m.name,
                        "checksum": m.checksum,
                        "now": _ts(now),
                    },
                )
                applied_names.append(f"{m.version:04d}_{m.name}")
        return applied_names

    def schema_version(self) -> int:
        """See :meth:`Store.schema_version`."""
        conn = self._conn()
        exists = conn.execute(_Q["migrations_table_exists"]).fetchone()
        if not exists:
            return 0
        rows = conn.execute(_Q["applied_migrations"]).fetchall()
        return int(rows[-1][0]) if rows else 0

    # -- runs -----------------------------------------------------------------------------------

    def create_run(self, new: NewRun, now: datetime) -> tuple[Run, bool]:
        """See :meth:`Store.create_run`."""
        key = {"tenant_id": new.tenant_id, "idempotency_key": new.idempotency_key}
        with self._write() as conn:
            if new.idempotency_key is not None:
                row = conn.execute(_Q["run_by_key"], key).fetchone()
                if row is not None:
                    return _run(row), False
            at = _ts(now)
            ids = {"tenant_id": new.tenant_id, "run_id": new.run_id}
            conn.execute(
                _Q["insert_run"],
                {
                    **ids,
                    "thread_id": new.thread_id,
                    "workflow": new.workflow,
                    "next_step": new.start_step,
                    "release": _json(new.release.to_json()),
                    "idempotency_key": new.idempotency_key,
                    "now": at,
                },
            )
            _write_fields(conn, ids, new.state)
            _write_messages(conn, new.tenant_id, new.thread_id, new.run_id, new.messages, at)
            _event(conn, ids, "created", None, None, {"workflow": new.workflow}, at)
            row = conn.execute(_Q["get_run"], ids).fetchone()
        return _run(row), True

    def get_run(self, tenant_id: str, run_id: str) -> Run:
        """See :meth:`Store.get_run`."""
        rows = self._read("get_run", {"tenant_id": tenant_id, "run_id": run_id})
        if not rows:
            raise RunNotFoundError(f"no run {run_id} in tenant {tenant_id}")
        return _run(rows[0])

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
            "statuses": _json([str(s) for s in statuses]),
            "workflow": workflow,
            "thread_id": thread_id,
            "limit": limit,
        }
        return [_run(r) for r in self._read("list_runs", params)]

    def load_state(self, tenant_id: str, run_id: str) -> dict[str, bytes]:
        """See :meth:`Store.load_state`."""
        rows = self._read("load_state", {"tenant_id": tenant_id, "run_id": run_id})
        return {r["field"]: r["value"].encode() for r in rows}

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
        at = _ts(now)
        pick = {
            "now": at,
            "workflows": _json(list(workflows)),
            "tenant_id": tenant_id,
            "run_id": run_id,
            "dead_owner": dead_owner,
        }
        with self._write() as conn:
            found = conn.execute(_Q["pick_runnable"], pick).fetchone()
            if found is None:
                return None
            ids = {"tenant_id": found["tenant_id"], "run_id": found["run_id"]}
            before = conn.execute(_Q["get_run"], ids).fetchone()
            row = conn.execute(
                _Q["claim_run"],
                {
                    **ids,
                    "owner": owner,
                    "lease_until": _ts(lease_until),
                    "now": at,
                    "dead_owner": dead_owner,
                },
            ).fetchone()
            run = _run(row)
            claimed = {"owner": owner, "previous_owner": before["owner"]}
            _event(conn, ids, "claimed", None, run.fence, claimed, at)
            if before["status"] != row["status"]:
                change = {"from": before["status"], "to": row["status"]}
                _event(conn, ids, "status", None, run.fence, change, at)
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
            "lease_until": _ts(lease_until),
        }
        with self._write() as conn:
            if conn.execute(_Q["heartbeat"], params).rowcount == 0:
                raise LeaseLostError(f"run {run_id}: lease with fence {fence} is no longer held")

    def release(self, tenant_id: str, run_id: str, owner: str, fence: int, now: datetime) -> bool:
        """See :meth:`Store.release`."""
        params = {"tenant_id": tenant_id, "run_id": run_id, "owner": owner, "fence": fence}
        with self._write() as conn:
            released = conn.execute(_Q["release"], params).rowcount == 1
            if released:
                _event(conn, params, "released", None, fence, {"owner": owner}, _ts(now))
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
        nothing else."""
        last = boundaries[-1]
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        at = _ts(now)
        with self._write() as conn:
            row = conn.execute(
                _Q["advance_run"],
                {
                    **ids,
                    "status": str(last.status),
                    "next_step": last.next_step,
                    "steps": len(boundaries),
                    "result": _json(last.result),
                    "error": _json(last.error),
                    "keep_lease": last.status is RunStatus.RUNNING,
                    "now": at,
                    "fence": fence,
                    "expected_version": expected_version,
                },
            ).fetchone()
            if row is None:
                raise _guard_failure(conn, ids, fence, expected_version)
            seq = row["steps_done"] - len(boundaries)
            thread_id: str | None = None
            for b in boundaries:
                seq += 1
                conn.execute(
                    _Q["insert_step"],
                    {
                        **ids,
                        "seq": seq,
                        "name": b.step,
                        "fence": fence,
                        "outcome": b.outcome,
                        "next_step": b.next_step,
                        "started_at": _ts(b.started_at),
                        "finished_at": _ts(b.finished_at),
                    },
                )
                _write_fields(conn, ids, b.state)
                if b.messages:
                    if thread_id is None:
                        thread_id = conn.execute(_Q["get_run"], ids).fetchone()["thread_id"]
                    fin = _ts(b.finished_at)
                    _write_messages(conn, tenant_id, thread_id, run_id, b.messages, fin)
                data = {"seq": seq, "outcome": b.outcome, "next": b.next_step}
                _event(conn, ids, "step_completed", b.step, fence, data, at)
            if last.status is not RunStatus.RUNNING:
                change = {"from": "RUNNING", "to": str(last.status)}
                _event(conn, ids, "status", last.step, fence, change, at)
        return int(row["state_version"])

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
        at = _ts(now)
        keeps_error = status in _ERROR_STATUSES
        with self._write() as conn:
            row = conn.execute(
                _Q["set_status"],
                {
                    **ids,
                    "status": str(status),
                    "error": _json(data) if keeps_error and data is not None else None,
                    "keep_lease": not (release_lease or status.terminal),
                    "now": at,
                    "expected_status": str(expected_status),
                    "expected_version": expected_version,
                    "fence": fence,
                },
            ).fetchone()
            if row is None:
                raise _guard_failure(conn, ids, fence, expected_version)
            change = {"from": str(expected_status), "to": str(status), "data": data}
            _event(conn, ids, "status", None, fence, change, at)
        return _run(row)

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
        at = _ts(now)
        with self._write() as conn:
            row = conn.execute(
                _Q["defer_run"],
                {
                    **ids,
                    "wake_at": _ts(wake_at),
                    "step_attempts": step_attempts,
                    "now": at,
                    "fence": fence,
                    "expected_version": expected_version,
                },
            ).fetchone()
            if row is None:
                raise _guard_failure(conn, ids, fence, expected_version)
            info = {"wake_at": _ts(wake_at), "attempts": step_attempts, "error": data}
            _event(conn, ids, "retry_scheduled", row["next_step"], fence, info, at)
        return _run(row)

    # -- effects --------------------------------------------------------------------------------

    def plan_effect(
        self, tenant_id: str, run_id: str, fence: int, new: NewEffect, now: datetime
    ) -> EffectRecord:
        """See :meth:`Store.plan_effect`."""
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        at = _ts(now)
        with self._write() as conn:
            inserted = conn.execute(
                _Q["insert_effect"],
                {
                    **ids,
                    "key": new.key,
                    "step": new.step,
                    "step_seq": new.step_seq,
                    "name": new.name,
                    "target": new.target,
                    "operation": new.operation,
                    "request_hash": new.request_hash,
                    "request": _json(new.request) or "null",
                    "compensator": new.compensator,
                    "fence": fence,
                    "now": at,
                },
            ).rowcount
            row = conn.execute(_Q["get_effect"], {"tenant_id": tenant_id, "key": new.key})
            found = row.fetchone()
            if found is None:
                raise _guard_failure(conn, ids, fence, -1)
            if inserted:
                info = {"key": new.key, "to": "planned"}
                _event(conn, ids, "effect", new.step, fence, info, at)
        return _effect(found)

    def get_effect(self, tenant_id: str, key: str) -> EffectRecord | None:
        """See :meth:`Store.get_effect`."""
        rows = self._read("get_effect", {"tenant_id": tenant_id, "key": key})
        return _effect(rows[0]) if rows else None

    def update_effect(
        self,
        tenant_id: str,
        key: str,
        *,
        expected_status: EffectStatus,
        status: EffectStatus,
        fence: int | None,
        now: datetime,
        attempts_delta: int = 0,
        result: JSON = None,
        receipt: str | None = None,
        error: JSON = None,
        resolution: JSON = None,
    ) -> EffectRecord:
        """See :meth:`Store.update_effect`."""
        at = _ts(now)
        with self._write() as conn:
            row = conn.execute(
                _Q["update_effect"],
                {
                    "tenant_id": tenant_id,
                    "key": key,
                    "status": str(status),
                    "expected_status": str(expected_status),
                    "attempts_delta": attempts_delta,
                    "result": _json(result),
                    "receipt": receipt,
                    "error": _json(error),
                    "resolution": _json(resolution),
                    "fence": fence,
                    "now": at,
                },
            ).fetchone()
            if row is None:
                raise _effect_guard_failure(conn, tenant_id, key, fence, expected_status)
            ids = {"tenant_id": tenant_id, "run_id": row["run_id"]}
            info = {"key": key, "from": str(expected_status), "to": str(status)}
            if resolution is not None:
                info["resolution"] = resolution
            _event(conn, ids, "effect", row["step"], fence, info, at)
        return _effect(row)

    def list_effects(
        self,
        tenant_id: str,
        *,
        run_id: str | None = None,
        statuses: Sequence[EffectStatus] = (),
        limit: int = 1000,
    ) -> list[EffectRecord]:
        """See :meth:`Store.list_effects`."""
        params = {
            "tenant_id": tenant_id,
            "run_id": run_id,
            "any_status": not statuses,
            "statuses": _json([str(s) for s in statuses]),
            "limit": limit,
        }
        return [_effect(r) for r in self._read("list_effects", params)]

    # -- history --------------------------------------------------------------------------------

    def steps(self, tenant_id: str, run_id: str) -> list[StepRecord]:
        """See :meth:`Store.steps`."""
        rows = self._read("list_steps", {"tenant_id": tenant_id, "run_id": run_id})
        return [
            StepRecord(
                run_id=r["run_id"],
                seq=r["seq"],
                name=r["name"],
                fence=r["fence"],
                outcome=r["outcome"],
                next_step=r["next_step"],
                started_at=_dt(r["started_at"]),  # type: ignore[arg-type]
                finished_at=_dt(r["finished_at"]),  # type: ignore[arg-type]
            )
            for r in rows
        ]

    def events(
        self, tenant_id: str, run_id: str, *, after: int = 0, limit: int = 1000
    ) -> list[Event]:
        """See :meth:`Store.events`."""
        params = {"tenant_id": tenant_id, "run_id": run_id, "after": after, "limit": limit}
        return [
            Event(
                run_id=r["run_id"],
                seq=r["seq"],
                type=r["type"],
                step=r["step"],
                fence=r["fence"],
                data=_unjson(r["data"]),
                at=_dt(r["at"]),  # type: ignore[arg-type]
            )
            for r in self._read("list_events", params)
        ]

    def messages(self, tenant_id: str, thread_id: str) -> list[Message]:
        """See :meth:`Store.messages`."""
        rows = self._read("list_messages", {"tenant_id": tenant_id, "thread_id": thread_id})
        return [
            Message(
                role=r["role"],
                content=r["content"],
                tool_calls=tuple(
                    ToolCall(c["id"], c["name"], c.get("arguments"))
                    for c in (_unjson(r["tool_calls"]) or ())
                ),
                tool_call_id=r["tool_call_id"],
                seq=r["seq"],
                run_id=r["run_id"],
                at=_dt(r["at"]),
            )
            for r in rows
        ]


_ERROR_STATUSES = frozenset(
    {RunStatus.FAILED, RunStatus.QUARANTINED, RunStatus.NEEDS_ATTENTION, RunStatus.CANCELLED}
)


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


def _run(row: sqlite3.Row) -> Run:
    return Run(
        run_id=row["run_id"],
        tenant_id=row["tenant_id"],
        thread_id=row["thread_id"],
        workflow=row["workflow"],
        status=RunStatus(row["status"]),
        next_step=row["next_step"],
        state_version=row["state_version"],
        fence=row["fence"],
        owner=row["owner"],
        lease_until=_dt(row["lease_until"]),
        release=Release.from_json(orjson.loads(row["release"])),
        idempotency_key=row["idempotency_key"],
        result=_unjson(row["result"]),
        error=_unjson(row["error"]),
        steps_done=row["steps_done"],
        created_at=_dt(row["created_at"]),  # type: ignore[arg-type]
        updated_at=_dt(row["updated_at"]),  # type: ignore[arg-type]
        wake_at=_dt(row["wake_at"]),
        step_attempts=row["step_attempts"],
        retry_since=_dt(row["retry_since"]),
    )


def _effect(row: sqlite3.Row) -> EffectRecord:
    return EffectRecord(
        key=row["effect_key"],
        tenant_id=row["tenant_id"],
        run_id=row["run_id"],
        step=row["step"],
        step_seq=row["step_seq"],
        name=row["name"],
        target=row["target"],
        operation=row["operation"],
        request_hash=row["request_hash"],
        request=_unjson(row["request"]),
        status=EffectStatus(row["status"]),
        attempts=row["attempts"],
        result=_unjson(row["result"]),
        receipt=row["receipt"],
        last_error=_unjson(row["last_error"]),
        compensator=row["compensator"],
        resolution=_unjson(row["resolution"]),
        created_at=_dt(row["created_at"]),  # type: ignore[arg-type]
        updated_at=_dt(row["updated_at"]),  # type: ignore[arg-type]
    )


def _write_fields(conn: sqlite3.Connection, ids: Params, fields: dict[str, bytes]) -> None:
    for name, value in fields.items():
        conn.execute(_Q["upsert_field"], {**ids, "field": name, "value": value.decode()})


def _write_messages(
    conn: sqlite3.Connection,
    tenant_id: str,
    thread_id: str,
    run_id: str,
    messages: Sequence[Message],
    at: str | None,
) -> None:
    for m in messages:
        conn.execute(
            _Q["insert_message"],
            {
                "tenant_id": tenant_id,
                "thread_id": thread_id,
                "run_id": run_id,
                "role": m.role,
                "content": m.content,
                "tool_calls": _json([c.to_json() for c in m.tool_calls]) if m.tool_calls else None,
                "tool_call_id": m.tool_call_id,
                "at": at,
            },
        )


def _event(
    conn: sqlite3.Connection,
    ids: Params,
    type_: str,
    step: str | None,
    fence: int | None,
    data: JSON,
    at: str | None,
) -> None:
    conn.execute(
        _Q["insert_event"],
        {**ids, "type": type_, "step": step, "fence": fence, "data": _json(data), "at": at},
    )


def _effect_guard_failure(
    conn: sqlite3.Connection,
    tenant_id: str,
    key: str,
    fence: int | None,
    expected: EffectStatus,
) -> Exception:
    """Explain why a guarded effect update matched no row."""
    row = conn.execute(_Q["get_effect"], {"tenant_id": tenant_id, "key": key}).fetchone()
    if row is None:
        return EffectNotFoundError(f"no effect {key} in tenant {tenant_id}")
    if row["status"] != str(expected):
        return EffectStateError(f"effect {key} is {row['status']}, not {expected}")
    ids = {"tenant_id": tenant_id, "run_id": row["run_id"]}
    return _guard_failure(conn, ids, fence, -1)


def _guard_failure(
    conn: sqlite3.Connection, ids: Params, fence: int | None, expected_version: int
) -> Exception:
    """Explain why a guarded update matched no row (read inside the same transaction)."""
    row = conn.execute(_Q["get_run"], ids).fetchone()
    run_id = ids["run_id"]
    if row is None:
        return RunNotFoundError(f"no run {run_id} in tenant {ids['tenant_id']}")
    status = RunStatus(row["status"])
    if fence is not None and row["fence"] != fence:
        return LeaseLostError(
            f"run {run_id}: fence {fence} was superseded by fence {row['fence']}; "
            "another worker owns the run"
        )
    if status.terminal:
        return RunClosedError(f"run {run_id} is already {status}")
    return StaleStateError(
        f"run {run_id} moved on (status {status}, version {row['state_version']}, "
        f"expected version {expected_version})"
    )
