"""The step-boundary commit: one transaction for one or more boundaries of a run, guarded by
the fence, the expected version and status RUNNING. A method of
:class:`~perdure.store.engine.Engine`; the contract is :meth:`perdure.store.base.Store.commit`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from perdure.core.children import SETTLED
from perdure.core.errors import LeaseLostError, RunClosedError
from perdure.core.model import RunStatus
from perdure.core.records import ChildrenWait, SignalWait
from perdure.store.base import Boundary
from perdure.store.driver import Tx
from perdure.store.engine import children, threads
from perdure.store.engine.history import commit_marks
from perdure.store.engine.tx import event, guard_failure, wake, write_fields, write_messages
from perdure.store.rows import Params, advance_params, step_completed, step_params, to_json

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
    d = self.driver
    at = d.stamp(now)
    last = boundaries[-1]
    ids = {"tenant_id": tenant_id, "run_id": run_id}
    try:
        with d.write() as tx:
            params = advance_params(
                ids,
                boundaries,
                fence=fence,
                expected_version=expected_version,
                at=at,
                stamp=d.stamp,
            )
            row = tx.one("advance_run", params)
            if row is None:
                raise guard_failure(tx, ids, fence, expected_version)
            seq = row["steps_done"] - len(boundaries)
            with tx.batch():
                for b in boundaries:
                    seq += 1
                    step = step_params(ids, seq, b, fence, d.stamp)
                    tx.run("insert_step", step)
                    version = int(row["state_version"])
                    write_fields(tx, ids, b.state, step_seq=seq, version=version)
                    finished = step["finished_at"]  # stamped once per boundary
                    thread = row["thread_id"]
                    write_messages(tx, tenant_id, thread, run_id, b.messages, finished, seq)
                    commit_marks(tx, ids, b, seq, fence, at, d.stamp)
                    event(tx, ids, "step_completed", b.step, fence, step_completed(seq, b), at)
                # messages added from outside while the step ran join the thread after its own
                threads.deliver_unread(tx, tenant_id, row["thread_id"], None, at)
            version = int(row["state_version"])
            if last.status is not RunStatus.RUNNING:
                change = {"from": "RUNNING", "to": str(last.status)}
                event(tx, ids, "status", last.step, fence, change, at)
                version = _begin_wait(tx, ids, last, fence, at) or version
            if last.status in SETTLED:
                children.wake_parent(tx, tenant_id, run_id, at)
    except (RunClosedError, LeaseLostError) as exc:
        info = {"fence": fence, "steps": [b.step for b in boundaries], "refused": exc.code}
        self.record_event(tenant_id, run_id, "late_commit", info, now)
        raise
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
