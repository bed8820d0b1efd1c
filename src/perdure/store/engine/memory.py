"""Long-term memory: reads, erasure and expiry, :class:`Memory`, a part of
:class:`~perdure.store.engine.Engine` (contracts in :class:`~perdure.store.memory.MemoryStore`);
and :func:`write_memory`, which the commit calls inside a boundary's transaction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from perdure.core.errors import StoreError
from perdure.core.memory import (
    MemoryItem,
    MemoryWrite,
    Namespace,
    matches,
    namespace_of,
    namespace_text,
)
from perdure.core.values import JSON
from perdure.store.driver import Tx
from perdure.store.engine.base import EngineBase
from perdure.store.rows import Params, Row, Stamp, When, from_json, to_json


class Memory(EngineBase):
    """Long-term memory. Part of :class:`~perdure.store.engine.Engine`."""

    def get_memory(
        self, tenant_id: str, namespace: Namespace, key: str, now: datetime
    ) -> MemoryItem | None:
        """See :meth:`MemoryStore.get_memory`."""
        params = {
            "tenant_id": tenant_id,
            "namespace": namespace_text(namespace),
            "key": key,
            "now": self.driver.stamp(now),
        }
        with self.driver.read() as tx:
            row = tx.one("get_memory", params)
        return None if row is None else memory_item(row, self.driver.when)

    def search_memory(
        self,
        tenant_id: str,
        prefix: Namespace,
        now: datetime,
        *,
        filter: Mapping[str, JSON] | None = None,
        limit: int | None = None,
    ) -> list[MemoryItem]:
        """See :meth:`MemoryStore.search_memory`."""
        params = {
            "tenant_id": tenant_id,
            "prefix": namespace_text(prefix),
            "now": self.driver.stamp(now),
        }
        found: list[MemoryItem] = []
        if limit is not None and limit <= 0:
            return found
        with self.driver.read() as tx:
            for row in tx.all("search_memory", params):
                item = memory_item(row, self.driver.when)
                if matches(item.value, filter):
                    found.append(item)
                    if limit is not None and len(found) >= limit:
                        break
        return found

    def erase_memory(self, tenant_id: str, prefix: Namespace, *, by: str, now: datetime) -> int:
        """See :meth:`MemoryStore.erase_memory`."""
        with self.driver.write() as tx:
            erased = tx.run(
                "erase_memory", {"tenant_id": tenant_id, "prefix": namespace_text(prefix)}
            )
            record = {
                "tenant_id": tenant_id,
                "thread_id": None,
                "run_id": None,
                "counts": to_json({"memory": erased}),
                "by": by,
                "now": self.driver.stamp(now),
            }
            tx.run("insert_erasure", record)
        return erased

    def expire_memory(self, now: datetime, *, limit: int) -> int:
        """See :meth:`MemoryStore.expire_memory`."""
        with self.driver.write() as tx:
            return tx.run("expire_memory", {"now": self.driver.stamp(now), "limit": limit})


def write_memory(
    tx: Tx,
    ids: Params,
    writes: Sequence[MemoryWrite],
    step_seq: int,
    at: Any,
    stamp: Stamp,
) -> None:
    """Inside a boundary's transaction: each of the step's memory writes, in order (a put
    creates the item or bumps its version; a delete removes it), as statements whose results
    are not read."""
    for w in writes:
        where = {"tenant_id": ids["tenant_id"], "namespace": namespace_text(w.namespace)}
        if w.deleted:
            tx.run("delete_memory", {**where, "key": w.key})
            continue
        put = {
            **where,
            "key": w.key,
            "value": to_json(w.value) or "null",
            "run_id": ids["run_id"],
            "step_seq": step_seq,
            "now": at,
            "expires_at": stamp(w.expires_at),
        }
        tx.run("upsert_memory", put)


def memory_item(row: Row, when: When) -> MemoryItem:
    """A :class:`~perdure.core.memory.MemoryItem` from a row of ``memory``."""
    created, updated = when(row["created_at"]), when(row["updated_at"])
    if created is None or updated is None:
        raise StoreError("a memory row has no created_at or updated_at")
    return MemoryItem(
        namespace=namespace_of(row["namespace"]),
        key=row["key"],
        value=from_json(row["value"]),
        version=int(row["version"]),
        created_at=created,
        updated_at=updated,
        expires_at=when(row["expires_at"]),
        run_id=row["run_id"],
    )
