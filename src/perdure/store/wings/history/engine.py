"""State history, savepoints, fork lineage: the reads that rebuild a run's past (the commit and
``create_run`` write them, :mod:`perdure.store.engine.lineage`). :class:`HistoryWing`, the
``history`` wing of the store; contracts in
:class:`~perdure.store.wings.history.contract.HistoryStore`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from perdure.core.errors import InvalidInputError, RunNotFoundError, StoreError
from perdure.core.history import FieldChange, Lineage, Savepoint
from perdure.core.logs import joined
from perdure.core.model import Message
from perdure.store.engine.base import EngineBase
from perdure.store.engine.lineage import mark
from perdure.store.engine.tx import fetch, need
from perdure.store.rows import Row, When, from_json, message_from_values


class HistoryWing(EngineBase):
    """State history, savepoints, fork lineage. The ``history`` wing of the store."""

    def state_changes(self, tenant_id: str, run_id: str) -> list[FieldChange]:
        """See :meth:`HistoryStore.state_changes`."""
        found = fetch(self.driver, "state_changes", {"tenant_id": tenant_id, "run_id": run_id})
        return [
            FieldChange(
                int(r["step_seq"]),
                int(r["version"]),
                r["field"],
                None if r["size"] is None else int(r["size"]),
                bool(r["offloaded"]),
                bool(r["appended"]),
            )
            for r in found
        ]

    def state_at(self, tenant_id: str, run_id: str, step_seq: int) -> dict[str, bytes]:
        """See :meth:`HistoryStore.state_at`."""
        params = {"tenant_id": tenant_id, "run_id": run_id, "step_seq": step_seq}
        found = fetch(self.driver, "state_at", params)
        parts: dict[str, list[bytes]] = {}
        for r in found:  # per field: its last whole value, then the tails appended after it
            name, value = r["field"], r["value"]
            if not r["appended"]:
                parts[name] = [] if value is None else [value.encode()]
            elif parts.get(name):  # a tail without its base (history pruned) is not a value
                parts[name].append(value.encode())
        return {name: joined(p[0], p[1:]) if len(p) > 1 else p[0] for name, p in parts.items() if p}

    def add_savepoint(
        self,
        tenant_id: str,
        run_id: str,
        label: str,
        step_seq: int,
        *,
        by: str,
        expires_at: datetime | None,
        now: datetime,
    ) -> Savepoint:
        """See :meth:`HistoryStore.add_savepoint`."""
        d = self.driver
        ids = {"tenant_id": tenant_id, "run_id": run_id}
        with d.write() as tx:
            run = tx.one("get_run", ids)
            if run is None:
                raise RunNotFoundError(f"no run {run_id} in tenant {tenant_id}")
            if not 0 <= step_seq <= int(run["steps_done"]):
                raise InvalidInputError(
                    f"run {run_id} has committed {run['steps_done']} steps; there is no step "
                    f"{step_seq} to mark",
                    fix="pick a step shown by `perdure history RUN`",
                )
            mark(tx, ids, label, step_seq, by, d.stamp(expires_at), d.stamp(now))
            row = need(tx, "get_savepoint", {**ids, "label": label})
        return savepoint_from_row(row, d.when)

    def savepoints(self, tenant_id: str, run_id: str) -> list[Savepoint]:
        """See :meth:`HistoryStore.savepoints`."""
        found = fetch(self.driver, "list_savepoints", {"tenant_id": tenant_id, "run_id": run_id})
        return [savepoint_from_row(r, self.driver.when) for r in found]

    def lineage(self, tenant_id: str, run_id: str) -> Lineage | None:
        """See :meth:`HistoryStore.lineage`."""
        found = fetch(self.driver, "get_fork", {"tenant_id": tenant_id, "run_id": run_id})
        if not found:
            return None
        r = found[0]
        return Lineage(
            r["run_id"],
            r["source_run_id"],
            int(r["step_seq"]),
            r["savepoint"],
            tuple(from_json(r["patched"]) or ()),
            r["created_by"],
            _at(self.driver.when, r["created_at"]),
        )

    def messages_until(
        self, tenant_id: str, thread_id: str, run_id: str, step_seq: int
    ) -> list[Message]:
        """See :meth:`HistoryStore.messages_until`."""
        d = self.driver
        params = {"tenant_id": tenant_id, "thread_id": thread_id, "run_id": run_id}
        with d.read() as tx:
            bounds = tx.one("run_message_bounds", {**params, "step_seq": step_seq})
            rows = tx.values("list_messages", {**params, "after": 0})
        cut = None
        if bounds is not None and bounds["kept"] is not None:
            cut = int(bounds["kept"])
        elif bounds is not None and bounds["first"] is not None:
            cut = int(bounds["first"]) - 1
        messages = [message_from_values(r, d.when) for r in rows]
        return [m for m in messages if cut is None or (m.seq or 0) <= cut]


def savepoint_from_row(row: Row, when: When) -> Savepoint:
    """A :class:`~perdure.core.history.Savepoint` from a row of ``savepoints``."""
    return Savepoint(
        row["run_id"],
        row["label"],
        int(row["step_seq"]),
        row["created_by"],
        _at(when, row["created_at"]),
        when(row["expires_at"]),
    )


def _at(when: When, value: Any) -> datetime:
    found = when(value)
    if found is None:
        raise StoreError("a NOT NULL time column came back empty")
    return found
