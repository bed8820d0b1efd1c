"""One writer per thread: admitting a new run under the thread's policy, the thread inbox, and
the thread's policy and view. :class:`ThreadsEngine`, a part of the kernel's
:class:`~perdure.store.engine.engine.Engine`
(contracts in :class:`~perdure.store.base.Store`), and the helpers that
``create_run``, ``claim``, ``commit`` and ``set_status`` call inside their transactions.

The rule itself lives in the claim queries: only the oldest unfinished run of a thread (by
``thread_seq``, given out when the run is created) can be claimed. Places are given out as
``MAX + 1``; on PostgreSQL two creators racing for one place are told apart by the unique index
``runs_thread_queue`` (the loser inserts nothing and tries the next place), on SQLite the write
lock admits one creator at a time. Locks are always taken in the same order as the boundary
commit takes them (run rows first, then the thread's advisory lock for numbering messages), so
a start, a message and a commit on one thread never deadlock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from perdure.core.errors import ThreadBusyError
from perdure.core.model import Message, RunStatus
from perdure.core.threads import DEFAULT_POLICY, Delivery, ThreadInfo, ThreadPolicy
from perdure.store.driver import Tx
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import event, write_messages
from perdure.store.rows import Row, tool_calls_json


def policy_of(tx: Tx, tenant_id: str, thread_id: str, given: ThreadPolicy | None) -> ThreadPolicy:
    """The policy that decides: the caller's, else the thread's own, else the default."""
    if given is not None:
        return given
    row = tx.one("thread_policy", {"tenant_id": tenant_id, "thread_id": thread_id})
    return DEFAULT_POLICY if row is None else ThreadPolicy(row["policy"])


def busy_error(tenant_id: str, thread_id: str, ahead: Sequence[Row]) -> ThreadBusyError:
    """The refusal of the ``reject`` policy, naming the run that holds the thread."""
    head = ahead[0]
    return ThreadBusyError(
        f"thread {thread_id} of tenant {tenant_id} is busy: run {head['run_id']} is "
        f"{head['status']}"
        + (f" and {len(ahead) - 1} more wait behind it" if len(ahead) > 1 else "")
    )


def interrupt(tx: Tx, tenant_id: str, ahead: Sequence[Row], by: str, at: Any) -> list[str]:
    """Ask every unfinished run in ``ahead`` to stop at its next boundary; return their ids."""
    asked: list[str] = []
    for row in ahead:
        ids = {"tenant_id": tenant_id, "run_id": row["run_id"]}
        status = row["status"]
        for _ in range(5):  # PostgreSQL: the run may move on between the read and the update
            if status in ("CANCEL_REQUESTED", "SUCCEEDED", "FAILED", "CANCELLED"):
                break
            params = {**ids, "expected_status": status, "now": at}
            if tx.one("interrupt_run", params) is not None:
                change = {
                    "from": status,
                    "to": str(RunStatus.CANCEL_REQUESTED),
                    "data": {"reason": "interrupted", "by": by},
                }
                event(tx, ids, "status", None, None, change, at)
                asked.append(row["run_id"])
                break
            current = tx.one("get_run", ids)
            status = "CANCELLED" if current is None else current["status"]
    return asked


def queue_messages(
    tx: Tx, tenant_id: str, thread_id: str, run_id: str | None, messages: Sequence[Message], at: Any
) -> None:
    """Keep messages in the thread's inbox (for the run ``run_id`` when it starts, or for the
    active run's next boundary when ``run_id`` is None)."""
    for m in messages:
        tx.run(
            "insert_inbox",
            {
                "tenant_id": tenant_id,
                "thread_id": thread_id,
                "run_id": run_id,
                "role": m.role,
                "content": m.content,
                "tool_calls": tool_calls_json(m),
                "tool_call_id": m.tool_call_id,
                "now": at,
            },
        )


def deliver(tx: Tx, tenant_id: str, thread_id: str, run_id: str | None, at: Any) -> None:
    """Move the waiting input of this moment into the thread's messages, in arrival order:
    messages from outside any run, and those ``run_id`` was started with (first asking whether
    any waits: one cheap read, then nothing more when none does)."""
    params = {"tenant_id": tenant_id, "thread_id": thread_id, "run_id": run_id, "now": at}
    found = tx.one("inbox_pending", params)
    if found is not None and found["pending"]:
        deliver_unread(tx, tenant_id, thread_id, run_id, at)


def deliver_unread(tx: Tx, tenant_id: str, thread_id: str, run_id: str | None, at: Any) -> None:
    """:func:`deliver` without the question: statements whose results are not read, for a
    :meth:`Tx.batch` (the boundary commit sends them in its one round trip)."""
    params = {"tenant_id": tenant_id, "thread_id": thread_id, "run_id": run_id, "now": at}
    tx.lock_thread(tenant_id, thread_id)
    tx.run("deliver_inbox", params)
    tx.run("mark_inbox_delivered", params)


class ThreadsEngine(EngineBase):
    """Thread policies, thread views, messages posted to a thread. Part of the kernel's
    :class:`~perdure.store.engine.engine.Engine`."""

    def set_thread_policy(
        self, tenant_id: str, thread_id: str, policy: ThreadPolicy, now: datetime
    ) -> None:
        """See :meth:`ThreadsStore.set_thread_policy`."""
        params = {
            "tenant_id": tenant_id,
            "thread_id": thread_id,
            "policy": str(policy),
            "now": self.driver.stamp(now),
        }
        with self.driver.write() as tx:
            tx.run("set_thread_policy", params)

    def thread(self, tenant_id: str, thread_id: str) -> ThreadInfo:
        """See :meth:`ThreadsStore.thread`."""
        params = {"tenant_id": tenant_id, "thread_id": thread_id}
        with self.driver.read() as tx:
            policy = policy_of(tx, tenant_id, thread_id, None)
            runs = tx.all("thread_runs", params)
            waiting = tx.one("count_inbox", params)
        ids = [r["run_id"] for r in runs]
        return ThreadInfo(
            tenant_id,
            thread_id,
            policy,
            ids[0] if ids else None,
            tuple(ids[1:]),
            int(waiting["waiting"]) if waiting else 0,
        )

    def post_message(
        self,
        tenant_id: str,
        thread_id: str,
        message: Message,
        policy: ThreadPolicy | None,
        now: datetime,
    ) -> Delivery:
        """See :meth:`ThreadsStore.post_message`. The thread's unfinished runs are locked first
        (on PostgreSQL), so the active run's boundary either comes before (and the message finds
        the thread as that boundary left it) or after (and the boundary takes the message)."""
        at = self.driver.stamp(now)
        params = {"tenant_id": tenant_id, "thread_id": thread_id}
        with self.driver.write() as tx:
            ahead = tx.all("lock_thread_runs", params)
            if not ahead:
                deliver(tx, tenant_id, thread_id, None, at)  # anything left waiting goes first
                write_messages(tx, tenant_id, thread_id, None, [message], at)
                return Delivery.APPENDED
            chosen = policy_of(tx, tenant_id, thread_id, policy)
            if chosen is ThreadPolicy.REJECT:
                raise busy_error(tenant_id, thread_id, ahead)
            queue_messages(tx, tenant_id, thread_id, None, [message], at)
            if chosen is ThreadPolicy.INTERRUPT:
                interrupt(tx, tenant_id, ahead, f"message to thread {thread_id}", at)
        return Delivery.QUEUED
