"""Child runs in the store: reading a run's children, and waking a parent whose wait for its
children is over — inside the transaction that settles the last awaited child, or inside the
parent's own commit when its children settled first. :class:`ChildrenEngine`, a part of
:class:`~perdure.store.engine.engine.Engine` (the contract is
:class:`~perdure.store.base.Store`), and the helpers that ``commit`` and
``set_status`` call inside their transactions.

The child's transaction locks the parent's row (``lock_run``: ``FOR UPDATE`` on PostgreSQL; on
SQLite the write lock is held) before it counts the children, so two children settling at once
take turns and the second sees the first: a parent is never left waiting for children that have
all settled. The parent's wait commit holds its own row while it counts, so a child that settles
meanwhile waits for it and then finds it waiting."""

from __future__ import annotations

from typing import Any

from perdure.core.children import SETTLED, ChildRecord
from perdure.core.model import RunStatus
from perdure.core.records import ChildrenWait, RunError, waiting_from_json
from perdure.store.driver import Tx
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import event, fetch
from perdure.store.rows import Params, Row, from_json


class ChildrenEngine(EngineBase):
    """A run's child runs. Part of :class:`~perdure.store.engine.engine.Engine`."""

    def child_runs(self, tenant_id: str, parent_run_id: str) -> list[ChildRecord]:
        """See :meth:`ChildrenStore.child_runs`."""
        params = {"tenant_id": tenant_id, "parent_run_id": parent_run_id}
        return [_record(r) for r in fetch(self.driver, "child_runs", params)]


def _record(row: Row) -> ChildRecord:
    status = RunStatus(row["status"])
    return ChildRecord(
        key=row["child_key"],
        run_id=row["run_id"],
        workflow=row["workflow"],
        status=status,
        result=_json(row["result"]),
        error=RunError.from_json(_json(row["error"])),
    )


def _json(value: Any) -> Any:
    return from_json(value) if isinstance(value, str | type(None)) else value


def all_settled(tx: Tx, tenant_id: str, parent_run_id: str, wait: ChildrenWait) -> bool:
    """True when every child ``wait`` names (all, when it names none) is settled. A named key
    with no child counts as not settled (the runtime refuses such a wait before it commits)."""
    params = {"tenant_id": tenant_id, "parent_run_id": parent_run_id}
    statuses = {r["child_key"]: RunStatus(r["status"]) for r in tx.all("child_runs", params)}
    keys = statuses.keys() if wait.keys is None else wait.keys
    return all(statuses.get(k) in SETTLED for k in keys)


def wake_parent(tx: Tx, tenant_id: str, run_id: str, at: Any) -> None:
    """Inside the transaction that settled run ``run_id``: when it is a child and its parent
    waits for children that are now all settled, move the parent to RUNNING at its ``next``."""
    link = tx.one("run_parent", {"tenant_id": tenant_id, "run_id": run_id})
    if link is not None and link["parent_run_id"] is not None:
        wake_parent_run(tx, tenant_id, link["parent_run_id"], at)


def wake_parent_run(tx: Tx, tenant_id: str, parent_run_id: str, at: Any) -> None:
    """:func:`wake_parent` for a settled child whose parent is known."""
    parent = {"tenant_id": tenant_id, "run_id": parent_run_id}
    row = tx.one("lock_run", parent)
    if row is None or row["status"] != str(RunStatus.WAITING_EXTERNAL):
        return
    wait = waiting_from_json(_json(row["waiting"]))
    if not isinstance(wait, ChildrenWait) or not all_settled(tx, tenant_id, parent["run_id"], wait):
        return
    wake_children(tx, parent, wait, None, at)


def wake_children(
    tx: Tx, ids: Params, wait: ChildrenWait, fence: int | None, at: Any
) -> int | None:
    """Move a parent waiting for ``wait`` to RUNNING at ``wait.next``; the new state_version
    (None when the run was not waiting)."""
    params = {**ids, "next_step": wait.next, "expected_status": "WAITING_EXTERNAL", "now": at}
    row = tx.one("wake_run", params)
    if row is None:
        return None
    keys = None if wait.keys is None else list(wait.keys)
    event(tx, ids, "children_settled", wait.next, fence, {"keys": keys}, at)
    change = {"from": "WAITING_EXTERNAL", "to": "RUNNING"}
    event(tx, ids, "status", wait.next, fence, change, at)
    return int(row["state_version"])
