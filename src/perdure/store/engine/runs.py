"""Runs and leases: create, read, claim, heartbeat, release, change status, defer a retry, and
the history reads (steps, events, messages). :class:`RunsEngine`, a part of
:class:`~perdure.store.engine.engine.Engine`; contracts in :class:`~perdure.store.base.Store`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from perdure.core.children import SETTLED
from perdure.core.errors import LeaseLostError, RunNotFoundError, StoreUnavailableError
from perdure.core.listing import END_OF_TIME, RunCursor
from perdure.core.logs import StoredFields, joined
from perdure.core.model import JSON, Event, Message, Run, RunStatus, StepRecord
from perdure.core.threads import ThreadPolicy
from perdure.store.base import NewRun
from perdure.store.driver import Driver
from perdure.store.engine import children, threads
from perdure.store.engine.base import EngineBase
from perdure.store.engine.lineage import record_fork, record_inherited
from perdure.store.engine.tx import event, fetch, guard_failure, need, write_fields, write_messages
from perdure.store.rows import (
    ERROR_STATUSES,
    LEASED,
    Params,
    event_from_row,
    iso,
    message_from_values,
    run_from_row,
    step_from_row,
    to_json,
)

ADMIT_TRIES = 20
"""How often a creator tries the next place in its thread's queue when concurrent creators keep
taking it (PostgreSQL; SQLite admits one creator at a time)."""


class RunsEngine(EngineBase):
    """Runs, leases, status changes, retries, history reads. Part of
    :class:`~perdure.store.engine.engine.Engine`."""

    def create_run(self, new: NewRun, now: datetime) -> tuple[Run, bool]:
        """See :meth:`Store.create_run`. The insert skips a run whose idempotency key exists, even
        one committed by a concurrent creator a moment ago. The run takes the next place in its
        thread's queue under the thread's policy (:mod:`perdure.store.engine.threads`): behind an
        unfinished run its messages wait in the inbox until it is claimed."""
        d = self.driver
        at = d.stamp(now)
        ids = {"tenant_id": new.tenant_id, "run_id": new.run_id}
        thread = {"tenant_id": new.tenant_id, "thread_id": new.thread_id}
        key = {"tenant_id": new.tenant_id, "idempotency_key": new.idempotency_key}
        with d.write() as tx:
            for _ in range(ADMIT_TRIES):
                if new.idempotency_key is not None and (found := tx.one("run_by_key", key)):
                    return run_from_row(found, d.when), False
                inserted = tx.one(
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
                        "state_seal": new.state_seal,
                        "parent_run_id": new.parent_run_id,
                        "child_key": new.child_key,
                        "now": at,
                    },
                )
                if inserted is not None:
                    break
            else:
                raise StoreUnavailableError(
                    f"thread {new.thread_id} kept taking new runs while this one was created",
                    fix="retry",
                )
            # Read after the insert: every run with a lower place is committed and visible now (a
            # place is taken only once the one below it is), so the policy sees the true queue.
            ahead = [r for r in tx.all("thread_runs", thread) if r["run_id"] != new.run_id]
            policy = threads.policy_of(tx, new.tenant_id, new.thread_id, new.policy)
            if ahead and policy is ThreadPolicy.REJECT:
                raise threads.busy_error(new.tenant_id, new.thread_id, ahead)  # rolls it all back
            write_fields(tx, ids, new.state, step_seq=0, version=0, tailless=True)
            created: dict[str, JSON] = {"workflow": new.workflow}
            if new.parent_run_id is not None:
                created["parent_run_id"] = new.parent_run_id
            if ahead:
                created["queued_behind"] = ahead[0]["run_id"]
                if policy is ThreadPolicy.INTERRUPT:
                    asked = threads.interrupt(tx, new.tenant_id, ahead, new.run_id, at)
                    created["interrupted"] = list(asked)
                threads.queue_messages(
                    tx, new.tenant_id, new.thread_id, new.run_id, new.messages, at
                )
            else:
                write_messages(tx, new.tenant_id, new.thread_id, new.run_id, new.messages, at)
            if new.trace:
                created["trace"] = dict(new.trace)
            if new.lineage is not None:
                created["forked_from"] = new.lineage.to_json()
                record_fork(tx, ids, new.lineage, at)
            for ref in new.artifacts:
                record_inherited(tx, ids, ref, at)
            event(tx, ids, "created", None, None, created, at)
            if new.parent_run_id is not None:  # the parent's history names the child it started
                parent = {"tenant_id": new.tenant_id, "run_id": new.parent_run_id}
                info = {"key": new.child_key, "run_id": new.run_id, "workflow": new.workflow}
                event(tx, parent, "child_spawned", None, None, info, at)
            row = need(tx, "get_run", ids)
        return run_from_row(row, d.when), True

    def get_run(self, tenant_id: str, run_id: str) -> Run:
        """See :meth:`Store.get_run`."""
        found = fetch(self.driver, "get_run", {"tenant_id": tenant_id, "run_id": run_id})
        if not found:
            raise RunNotFoundError(f"no run {run_id} in tenant {tenant_id}")
        return run_from_row(found[0], self.driver.when)

    def list_runs(
        self,
        tenant_id: str,
        *,
        statuses: Sequence[RunStatus] = (),
        workflow: str | None = None,
        thread_id: str | None = None,
        limit: int = 100,
        since: datetime | None = None,
        until: datetime | None = None,
        search: str | None = None,
        after: RunCursor | None = None,
    ) -> list[Run]:
        """See :meth:`Store.list_runs`."""
        d = self.driver
        params = {
            "tenant_id": tenant_id,
            "any_status": not statuses,
            "statuses": d.array([str(s) for s in statuses]),
            "workflow": workflow,
            "thread_id": thread_id,
            "limit": limit,
            "since": d.stamp(None if since is None else since.astimezone(UTC)),
            "until": d.stamp(None if until is None else until.astimezone(UTC)),
            "search": search or None,
            "after_at": d.stamp(END_OF_TIME if after is None else after.created_at.astimezone(UTC)),
            "after_run": None if after is None else after.run_id,
        }
        return [run_from_row(r, self.driver.when) for r in fetch(self.driver, "list_runs", params)]

    def load_state(self, tenant_id: str, run_id: str) -> StoredFields:
        """See :meth:`Store.load_state`: each field's row, and the tails of those kept as logs
        joined to their base (one query). The rows are read as bytes
        (:meth:`~perdure.store.driver.Tx.binary`), so a large field is copied once from the
        driver into ``bytes``, and once more only when a log's tails are joined to it. They are
        ordered here, not by the query, whose sort would copy every value it passes."""
        with self.driver.read() as tx:
            found = tx.binary("load_state", {"tenant_id": tenant_id, "run_id": run_id})
        fields: dict[str, bytes] = {}
        tails: dict[str, list[bytes]] = {}
        found.sort(key=lambda row: (row[0], row[3]))  # by field, then base before tails in order
        for field, value, log, step_seq in found:
            name = field.decode()
            if step_seq == 0:
                fields[name] = value
                if log:
                    tails[name] = []
            elif name in tails:
                tails[name].append(value)
        for name, parts in tails.items():
            if parts:
                fields[name] = joined(fields[name], parts)
        return StoredFields(
            fields,
            {name: len(parts) for name, parts in tails.items()},
            {name: sum(map(len, parts)) for name, parts in tails.items()},
        )

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
        dead_owners: Sequence[str] = (),
    ) -> Run | None:
        """See :meth:`Store.claim`. Where the driver can, the worker's scan is one statement
        (``claim_next``: the pick, the update and the events; PostgreSQL skips rows other
        transactions hold, ``FOR UPDATE SKIP LOCKED``). Otherwise, and for one named run, the pick
        (``pick_next`` or ``pick_run``, which waits for the run's row) and the update share one
        transaction (on SQLite the write lock admits one claimer at a time). The update says
        whether input waits for the run; it is delivered before the claim returns, so the run's
        first step sees it."""
        d = self.driver
        at = d.stamp(now)
        params = {
            "owner": owner,
            "lease_until": d.stamp(lease_until),
            "now": at,
            "workflows": d.array(workflows),
            "tenant_id": tenant_id,
            "run_id": run_id,
            "dead_owners": d.array([*dead_owners, *([dead_owner] if dead_owner else [])]),
        }
        if run_id is None and d.one_statement_writes:
            return _claim_next(d, params, at)
        with d.write() as tx:
            picked = tx.one("pick_next" if run_id is None else "pick_run", params)
            if picked is None:
                return None
            ids = {"tenant_id": picked["tenant_id"], "run_id": picked["run_id"]}
            row = need(tx, "claim_run", {**params, **ids})
            run = replace(run_from_row(row, d.when), previous_owner=picked["owner"])
            with tx.batch():  # nothing below is read back: one round trip on PostgreSQL
                if row["pending"]:  # input waiting for the run joins its thread first
                    threads.deliver_unread(tx, run.tenant_id, run.thread_id, run.run_id, at)
                claimed = {"owner": owner, "previous_owner": picked["owner"]}
                event(tx, ids, "claimed", None, run.fence, claimed, at)
                if picked["status"] != row["status"]:
                    change = {"from": picked["status"], "to": row["status"]}
                    event(tx, ids, "status", None, run.fence, change, at)
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
            "lease_until": self.driver.stamp(lease_until),
        }
        with self.driver.write() as tx:
            if tx.run("heartbeat", params) == 0:
                raise LeaseLostError(f"run {run_id}: lease with fence {fence} is no longer held")

    def renew_leases(
        self, owner: str, leases: Sequence[tuple[str, str, int]], lease_until: datetime
    ) -> list[tuple[str, str, int]]:
        """See :meth:`Store.renew_leases`."""
        lost: list[tuple[str, str, int]] = []
        if not leases:
            return lost
        until = self.driver.stamp(lease_until)
        with self.driver.write() as tx:
            for tenant_id, run_id, fence in sorted(leases):  # the order every writer locks runs in
                params = {
                    "tenant_id": tenant_id,
                    "run_id": run_id,
                    "owner": owner,
                    "fence": fence,
                    "lease_until": until,
                }
                if tx.run("heartbeat", params) == 0:
                    lost.append((tenant_id, run_id, fence))
        return lost

    def release(self, tenant_id: str, run_id: str, owner: str, fence: int, now: datetime) -> bool:
        """See :meth:`Store.release`."""
        params = {"tenant_id": tenant_id, "run_id": run_id, "owner": owner, "fence": fence}
        with self.driver.write() as tx:
            released = tx.run("release", params) == 1
            if released:
                event(tx, params, "released", None, fence, {"owner": owner}, self.driver.stamp(now))
        return released

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
        d = self.driver
        at = d.stamp(now)
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        keeps_error = status in ERROR_STATUSES
        with d.write() as tx:
            row = tx.one(
                "set_status",
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
            )
            if row is None:
                raise guard_failure(tx, ids, fence, expected_version)
            change = {"from": str(expected_status), "to": str(status), "data": data}
            event(tx, ids, "status", None, fence, change, at)
            if status.terminal:  # messages that waited for this run's end join the thread now
                threads.deliver(tx, tenant_id, row["thread_id"], None, at)
            if status in SETTLED:  # a parent waiting for this child may go on
                children.wake_parent(tx, tenant_id, run_id, at)
        return run_from_row(row, d.when)

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
        d = self.driver
        at = d.stamp(now)
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        with d.write() as tx:
            row = tx.one(
                "defer_run",
                {
                    **ids,
                    "wake_at": d.stamp(wake_at),
                    "step_attempts": step_attempts,
                    "now": at,
                    "fence": fence,
                    "expected_version": expected_version,
                },
            )
            if row is None:
                raise guard_failure(tx, ids, fence, expected_version)
            info = {"wake_at": iso(wake_at), "attempts": step_attempts, "error": data}
            event(tx, ids, "retry_scheduled", row["next_step"], fence, info, at)
        return run_from_row(row, d.when)

    def steps(self, tenant_id: str, run_id: str) -> list[StepRecord]:
        """See :meth:`Store.steps`."""
        found = fetch(self.driver, "list_steps", {"tenant_id": tenant_id, "run_id": run_id})
        return [step_from_row(r, self.driver.when) for r in found]

    def events(
        self,
        tenant_id: str,
        run_id: str,
        *,
        after: int = 0,
        limit: int = 1000,
        latest: bool = False,
    ) -> list[Event]:
        """See :meth:`Store.events`."""
        params = {"tenant_id": tenant_id, "run_id": run_id, "after": after, "limit": limit}
        found = fetch(self.driver, "latest_events" if latest else "list_events", params)
        return [event_from_row(r, self.driver.when) for r in found]

    def messages(self, tenant_id: str, thread_id: str, *, after: int = 0) -> list[Message]:
        """See :meth:`Store.messages`."""
        params = {"tenant_id": tenant_id, "thread_id": thread_id, "after": after}
        with self.driver.read() as tx:
            found = tx.values("list_messages", params)
        return [message_from_values(r, self.driver.when) for r in found]


def _claim_next(d: Driver, params: Params, at: Any) -> Run | None:
    """The worker's claim in one statement, then, only when input waits for the run, its
    delivery in a transaction of its own. If that delivery fails, the claim fails: the run is
    not handed over without its input, and once the lease runs out, the next claim delivers
    it."""
    with d.statement() as tx:
        row = tx.one("claim_next", params)
    if row is None:
        return None
    run = replace(run_from_row(row, d.when), previous_owner=row["previous_owner"])
    if row["pending"]:
        with d.write() as tx, tx.batch(last=True):
            threads.deliver_unread(tx, run.tenant_id, run.thread_id, run.run_id, at)
    return run
