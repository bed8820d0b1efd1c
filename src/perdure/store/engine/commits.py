"""The step-boundary commit: one transaction for one or more boundaries of a run, guarded by
the fence, the expected version and status RUNNING; and the group commit, one transaction for
the commits of several runs, each under its own guard. Methods of
:class:`~perdure.store.engine.Engine`; the contracts are :meth:`perdure.store.base.Store.commit`
and :meth:`~perdure.store.base.Store.commit_many`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from perdure.core.children import SETTLED
from perdure.core.errors import LeaseLostError, PerdureError, RunClosedError, StoreUnavailableError
from perdure.core.model import RunStatus
from perdure.core.records import ChildrenWait, SignalWait
from perdure.store.base import Boundary, CommitRequest
from perdure.store.driver import Tx
from perdure.store.engine import children, threads
from perdure.store.engine.history import commit_marks
from perdure.store.engine.tx import event, guard_failure, wake, write_fields, write_messages
from perdure.store.rows import (
    Params,
    Row,
    Stamp,
    advance_params,
    step_completed,
    step_completion,
    step_params,
    to_json,
)

if TYPE_CHECKING:
    from perdure.store.engine import Engine


def commit(
    self: Engine,
    tenant_id: str,
    run_id: str,
    fence: int,
    expected_version: int,
    boundaries: Sequence[Boundary],
    now: datetime,
) -> int:
    """See :meth:`Store.commit`. The guarded run update runs first (on PostgreSQL it locks the
    run's row), so a lost race writes nothing else; the rows of every boundary then go in one
    batch (one round trip on PostgreSQL). A commit refused because the run ended or another
    worker owns it is recorded as a ``late_commit`` event."""
    request = CommitRequest(tenant_id, run_id, fence, expected_version, tuple(boundaries))
    d = self.driver
    at = d.stamp(now)
    try:
        if d.one_statement_steps and _plain(request):
            return _commit_step(self, request, at)
        with d.write() as tx:
            row = tx.one("advance_run", _guard_params(d.stamp, request, at))
            if row is None:
                raise guard_failure(tx, _ids(request), fence, expected_version)
            with tx.batch():
                _rows(tx, d.stamp, request, row, at)
            return _settle(tx, request, row, at)
    except (RunClosedError, LeaseLostError) as exc:
        self.record_event(tenant_id, run_id, "late_commit", _late(request, exc), now)
        raise


def _plain(request: CommitRequest) -> bool:
    """Whether a request is one boundary that ``commit_step`` writes whole: the run goes on,
    and the boundary carries nothing but its step and changed fields."""
    if len(request.boundaries) != 1:
        return False
    b = request.boundaries[0]
    return (
        b.status is RunStatus.RUNNING
        and not b.messages
        and not b.artifacts
        and not b.savepoints
        and not b.logs
        and not b.appends
    )


def _commit_step(self: Engine, request: CommitRequest, at: Any) -> int:
    """A plain boundary in one statement (see the ``commit_step`` query). Input that waited
    for the thread is then delivered in a transaction of its own, as the boundary would have:
    a crash in between leaves it waiting for the next boundary, which the run still has."""
    d = self.driver
    with d.statement() as tx:
        row = tx.one("commit_step", _step_statement(d.stamp, request, at))
        if row is None:
            raise guard_failure(tx, _ids(request), request.fence, request.expected_version)
    if row["inbox"]:
        with d.write() as tx:
            threads.deliver_unread(tx, request.tenant_id, row["thread_id"], None, at)
    return int(row["state_version"])


def _step_statement(stamp: Stamp, request: CommitRequest, at: Any) -> dict[str, Any]:
    """Parameters of ``commit_step`` for a plain request."""
    b = request.boundaries[0]
    return {
        **_guard_params(stamp, request, at),
        **step_params(_ids(request), 0, b, request.fence, stamp),
        "completed": to_json(step_completion(b)),
        "fields": list(b.state),
        "values": [v.decode() for v in b.state.values()],
    }


def commit_many(
    self: Engine, requests: Sequence[CommitRequest], now: datetime
) -> list[int | PerdureError]:
    """See :meth:`Store.commit_many`. Every guarded run update is sent at once, then the rows
    of every run whose guard passed in one batch: on PostgreSQL the same round trips for the
    whole group as for one run (plus a read for each run that ends or waits), and a plain
    boundary's guard is its whole ``commit_step`` statement, with no rows after. Runs are taken in
    (tenant, run) order, so two processes committing overlapping groups lock rows in one order.
    A refused guard wrote nothing (it is its run's only statement so far), so the transaction
    goes on with the others; a write that fails after its guard passed rolls the group back, and
    every request is then committed alone, so that one fails by itself."""
    d = self.driver
    at = d.stamp(now)
    order = sorted(range(len(requests)), key=lambda i: (requests[i].tenant_id, requests[i].run_id))
    plain = {i for i in order if d.one_statement_steps and _plain(requests[i])}
    answers: dict[int, int | PerdureError] = {}
    try:
        with d.write() as tx:
            guards = tx.many(
                [
                    ("commit_step", _step_statement(d.stamp, requests[i], at))
                    if i in plain
                    else ("advance_run", _guard_params(d.stamp, requests[i], at))
                    for i in order
                ]
            )
            passed = [(i, row) for i, row in zip(order, guards, strict=True) if row is not None]
            with tx.batch():
                for i, row in passed:
                    if i not in plain:
                        _rows(tx, d.stamp, requests[i], row, at)
                    elif row["inbox"]:  # a plain boundary's statement wrote all but this
                        r = requests[i]
                        threads.deliver_unread(tx, r.tenant_id, row["thread_id"], None, at)
            for i, row in passed:
                answers[i] = _settle(tx, requests[i], row, at)
            for i in order:
                if i not in answers:
                    answers[i] = _refused(tx, requests[i], at)
    except StoreUnavailableError:
        raise  # the group's outcome is unknown: each committer checks whether its run landed
    except PerdureError:
        return [_alone(self, r, now) for r in requests]
    return [answers[i] for i in range(len(requests))]


def _alone(self: Engine, r: CommitRequest, now: datetime) -> int | PerdureError:
    """One request of a failed group, committed by itself."""
    try:
        return commit(self, r.tenant_id, r.run_id, r.fence, r.expected_version, r.boundaries, now)
    except PerdureError as exc:
        return exc


def _refused(tx: Tx, request: CommitRequest, at: Any) -> PerdureError:
    """Why a request's guard matched nothing (read in the group's transaction); a commit
    refused by the fence or a finished run is recorded as a ``late_commit`` event."""
    ids = _ids(request)
    exc = guard_failure(tx, ids, request.fence, request.expected_version)
    if isinstance(exc, RunClosedError | LeaseLostError):
        tx.one("lock_run", ids)
        event(tx, ids, "late_commit", None, None, _late(request, exc), at)
    return exc if isinstance(exc, PerdureError) else PerdureError(str(exc))


def _late(request: CommitRequest, exc: PerdureError) -> dict[str, Any]:
    """The data of a ``late_commit`` event: who tried, which steps, why it was refused."""
    return {
        "fence": request.fence,
        "steps": [b.step for b in request.boundaries],
        "refused": exc.code,
    }


def _ids(request: CommitRequest) -> Params:
    return {"tenant_id": request.tenant_id, "run_id": request.run_id}


def _guard_params(stamp: Stamp, request: CommitRequest, at: Any) -> dict[str, Any]:
    """Parameters of the guarded run update: the run row after the request's last boundary."""
    return advance_params(
        _ids(request),
        request.boundaries,
        fence=request.fence,
        expected_version=request.expected_version,
        at=at,
        stamp=stamp,
    )


def _rows(tx: Tx, stamp: Stamp, request: CommitRequest, row: Row, at: Any) -> None:
    """The rows of one request whose guard passed (``row``: the run after it), as statements
    whose results are not read: steps, fields, messages, artifacts and savepoints, events,
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
        event(tx, ids, "step_completed", b.step, fence, step_completed(seq, b), at)
    # messages added from outside while the step ran join the thread after its own (the guard
    # says whether any may wait: on SQLite it knows, on PostgreSQL it always says yes)
    if row["inbox"]:
        threads.deliver_unread(tx, tenant_id, thread, None, at)


def _settle(tx: Tx, request: CommitRequest, row: Row, at: Any) -> int:
    """After the rows: when the run leaves RUNNING, its status event, the wait it begins and
    the parent it wakes. Returns the run's new state_version."""
    last = request.boundaries[-1]
    version = int(row["state_version"])
    if last.status is RunStatus.RUNNING:
        return version
    ids = _ids(request)
    change = {"from": "RUNNING", "to": str(last.status)}
    event(tx, ids, "status", last.step, request.fence, change, at)
    version = _begin_wait(tx, ids, last, request.fence, at) or version
    if last.status in SETTLED:
        children.wake_parent(tx, request.tenant_id, request.run_id, at)
    return version


def _begin_wait(tx: Tx, ids: Params, last: Boundary, fence: int, at: Any) -> int | None:
    """Inside a commit: record a pending approval, or take a signal already in the inbox, or
    find every awaited child settled already (the run then does not wait). Returns the new
    state_version if the run was woken."""
    waiting = last.waiting
    if last.approval is not None:
        a = last.approval
        tx.run(
            "insert_approval",
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
