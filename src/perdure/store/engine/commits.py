"""The step-boundary commit: one transaction for one or more boundaries of a run, guarded by
the fence, the expected version and status RUNNING; and the group commit, one transaction for
the commits of several runs, each under its own guard. :class:`CommitsEngine`, a part of
:class:`~perdure.store.engine.engine.Engine`; the contracts are
:meth:`perdure.store.base.Store.commit` and :meth:`~perdure.store.base.Store.commit_many`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from perdure.core.children import SETTLED
from perdure.core.errors import LeaseLostError, PerdureError, RunClosedError, StoreUnavailableError
from perdure.core.model import RunStatus
from perdure.core.records import ChildrenWait, SignalWait
from perdure.store.base import Boundary, CommitRequest
from perdure.store.driver import Driver, NumberingConflictError, Tx
from perdure.store.engine import children, threads
from perdure.store.engine.base import EngineBase
from perdure.store.engine.lineage import commit_marks
from perdure.store.engine.memory_writes import write_memory
from perdure.store.engine.plain_steps import commit_plain, plain
from perdure.store.engine.tx import (
    event,
    guard_failure,
    late,
    refused,
    wake,
    write_event,
    write_fields,
    write_messages,
)
from perdure.store.rows import (
    Params,
    Row,
    Stamp,
    advance_params,
    step_completed,
    step_params,
    to_json,
)


class CommitsEngine(EngineBase):
    """The step-boundary commit, of one run or of a group of runs. Part of
    :class:`~perdure.store.engine.engine.Engine`."""

    def commit(
        self,
        tenant_id: str,
        run_id: str,
        fence: int,
        expected_version: int,
        boundaries: Sequence[Boundary],
        now: datetime,
    ) -> int:
        """See :meth:`Store.commit`. A plain boundary goes in one statement where the driver can
        (:mod:`~perdure.store.engine.plain_steps`). Otherwise the guarded run update runs first (on
        PostgreSQL it locks the run's row), so a lost race writes nothing else; the rows of every
        boundary then go in one batch (one round trip on PostgreSQL). A commit refused because the
        run ended or another worker owns it is recorded as a ``late_commit`` event."""
        request = CommitRequest(tenant_id, run_id, fence, expected_version, tuple(boundaries))
        d = self.driver
        at = d.stamp(now)
        if d.one_statement_writes and plain(request):
            try:
                (answer,) = commit_plain(d, [request], at)
            except NumberingConflictError:
                pass  # it wrote nothing: the transaction below numbers under the thread's lock
            else:
                if isinstance(answer, PerdureError):
                    raise answer
                return answer
        try:
            with d.write() as tx:
                (row,) = _advance(tx, d, [request], at)
                if row is None:
                    raise guard_failure(tx, _ids(request), fence, expected_version)
                with tx.batch(last=not _reads_after(request, row)):
                    _rows(tx, d.stamp, request, row, at)
                    _leave_running(tx, request, at)
                return _settle(tx, request, row, at)
        except (RunClosedError, LeaseLostError) as exc:
            write_event(d, _ids(request), "late_commit", late(request, exc), now)
            raise

    def commit_many(
        self, requests: Sequence[CommitRequest], now: datetime
    ) -> list[int | PerdureError]:
        """See :meth:`Store.commit_many`. Where the driver can, every plain boundary of the group
        goes in one statement (:mod:`~perdure.store.engine.plain_steps`); the others in one
        transaction: every guarded run update sent at once, then the rows of every run whose guard
        passed in one batch, so on PostgreSQL the same round trips for the whole group as for one
        run (plus a read for each run that ends or waits). Runs are taken in (tenant, run) order,
        so two processes committing overlapping groups lock rows in one order. A refused guard
        wrote nothing, so the others go on; a write that fails after its guard passed rolls its
        statement or transaction back, and each of its requests is then committed alone, so that
        one fails by itself."""
        d = self.driver
        at = d.stamp(now)
        one = [i for i, r in enumerate(requests) if d.one_statement_writes and plain(r)]
        rest = sorted(
            set(range(len(requests))).difference(one),
            key=lambda i: (requests[i].tenant_id, requests[i].run_id),
        )
        answers: dict[int, int | PerdureError] = {}
        for part, write in ((one, commit_plain), (rest, _transaction_part)):
            if not part:
                continue
            try:
                answers.update(zip(part, write(d, [requests[i] for i in part], at), strict=True))
            except StoreUnavailableError:
                raise  # the outcome is unknown: each committer checks whether its run landed
            except PerdureError:
                answers.update((i, self._commit_alone(requests[i], now)) for i in part)
        return [answers[i] for i in range(len(requests))]

    def _commit_alone(self, r: CommitRequest, now: datetime) -> int | PerdureError:
        """One request of a failed group, committed by itself."""
        try:
            return self.commit(
                r.tenant_id, r.run_id, r.fence, r.expected_version, r.boundaries, now
            )
        except PerdureError as exc:
            return exc


def _transaction_part(
    d: Driver, requests: Sequence[CommitRequest], at: Any
) -> list[int | PerdureError]:
    """Requests in (tenant, run) order committed in one transaction, each under its guard."""
    answers: list[int | PerdureError | None] = [None] * len(requests)
    with d.write() as tx:
        guards = _advance(tx, d, requests, at)
        passed = [(i, row) for i, row in enumerate(guards) if row is not None]
        with tx.batch():
            for i, row in passed:
                _rows(tx, d.stamp, requests[i], row, at)
                _leave_running(tx, requests[i], at)
        for i, row in passed:
            answers[i] = _settle(tx, requests[i], row, at)
        for i, r in enumerate(requests):
            if answers[i] is None:
                answers[i] = refused(tx, r, at)
    return [a for a in answers if a is not None]


def _advance(tx: Tx, d: Driver, requests: Sequence[CommitRequest], at: Any) -> list[Row | None]:
    """Every request's guarded run update, sent at once; for each, the run after it, or None
    when its guard failed. On a driver without one-statement steps (SQLite) a plain boundary
    takes ``advance_plain``, which names no indexed column, and ``advance_run`` only if that
    matched nothing (a run with a wake-up time, or a failed guard, which fails again)."""
    lean = not d.one_statement_writes
    updates = [
        ("advance_plain" if lean and plain(r) else "advance_run", advance_params(r, at, d.stamp))
        for r in requests
    ]
    return [
        tx.one("advance_run", params) if row is None and query == "advance_plain" else row
        for row, (query, params) in zip(tx.many(updates), updates, strict=True)
    ]


def _ids(request: CommitRequest) -> Params:
    return {"tenant_id": request.tenant_id, "run_id": request.run_id}


def _rows(tx: Tx, stamp: Stamp, request: CommitRequest, row: Row, at: Any) -> None:
    """The rows of one request whose guard passed (``row``: the run after it), as statements
    whose results are not read: steps, fields, messages, artifacts and savepoints, memory, events,
    then the thread's waiting input."""
    tenant_id, run_id, fence = request.tenant_id, request.run_id, request.fence
    ids = _ids(request)
    seq = row["steps_done"] - len(request.boundaries)
    version = int(row["state_version"])
    thread = row["thread_id"]
    for b in request.boundaries:
        seq += 1
        step = step_params(ids, seq, b, fence, stamp)
        tx.run("insert_step", step)
        write_fields(
            tx,
            ids,
            b.state,
            step_seq=seq,
            version=version,
            logs=b.logs,
            appends=b.appends,
            tailless=True,
        )
        finished = step["finished_at"]  # stamped once per boundary
        write_messages(tx, tenant_id, thread, run_id, b.messages, finished, seq)
        commit_marks(tx, ids, b, seq, fence, at, stamp)
        write_memory(tx, ids, b.memory, seq, at, stamp)
        event(tx, ids, "step_completed", b.step, fence, step_completed(seq, b), at)
    # messages added from outside while the step ran join the thread after its own (the guard
    # says whether any may wait: on SQLite it knows, on PostgreSQL it always says yes)
    if row["inbox"]:
        threads.deliver_unread(tx, tenant_id, thread, None, at)


def _leave_running(tx: Tx, request: CommitRequest, at: Any) -> None:
    """The rows of a run that leaves RUNNING, whose results are not read (in the boundary's
    batch): its status event, and the approval a person must decide."""
    last = request.boundaries[-1]
    if last.status is RunStatus.RUNNING:
        return
    change = {"from": "RUNNING", "to": str(last.status)}
    event(tx, _ids(request), "status", last.step, request.fence, change, at)
    if last.approval is not None:
        a = last.approval
        approval = {
            "step": last.step,
            "role": a.wait.role,
            "request": to_json(a.request) or "null",
            "on_approve": a.wait.on_approve,
            "on_reject": a.wait.on_reject,
            "now": at,
        }
        tx.run("insert_approval", {**_ids(request), **approval})


def _reads_after(request: CommitRequest, row: Row) -> bool:
    """Whether :func:`_settle` has anything to read after the boundary's rows: the run begins
    to wait for a signal or for children (either may be there already), or it is a child that
    settles (its parent may wake). Otherwise the rows are the transaction's last statements."""
    last = request.boundaries[-1]
    if last.status is RunStatus.RUNNING:
        return False
    if last.approval is None and isinstance(last.waiting, ChildrenWait | SignalWait):
        return True
    return last.status in SETTLED and row["parent_run_id"] is not None


def _settle(tx: Tx, request: CommitRequest, row: Row, at: Any) -> int:
    """After the rows, when :func:`_reads_after` says so: the wait the run begins that is over
    already (a signal in the inbox, every awaited child settled), and the parent it wakes
    (``row`` says which). Returns the run's new state_version."""
    last = request.boundaries[-1]
    version = int(row["state_version"])
    if not _reads_after(request, row):
        return version
    version = _begin_wait(tx, _ids(request), last, request.fence, at) or version
    if last.status in SETTLED and row["parent_run_id"] is not None:
        children.wake_parent_run(tx, request.tenant_id, row["parent_run_id"], at)
    return version


def _begin_wait(tx: Tx, ids: Params, last: Boundary, fence: int, at: Any) -> int | None:
    """Inside a commit: take a signal already in the inbox, or find every awaited child settled
    already (the run then does not wait). Returns the new state_version if the run was woken
    (a pending approval was recorded with the boundary's rows)."""
    waiting = last.waiting
    if last.approval is not None:
        return None
    if isinstance(waiting, ChildrenWait):
        if not children.all_settled(tx, ids["tenant_id"], ids["run_id"], waiting):
            return None
        return children.wake_children(tx, ids, waiting, fence, at)
    if not isinstance(waiting, SignalWait):
        return None
    found = tx.one("first_unconsumed_signal", {**ids, "name": waiting.name})
    if found is None:
        return None
    return wake(tx, ids, found, waiting.next, fence, at)
