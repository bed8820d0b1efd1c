"""Long-term memory: reads, search, puts outside a run, erasure and expiry. :class:`MemoryWing`,
the ``memory`` wing of the store; contracts in
:class:`~perdure.store.wings.memory.contract.MemoryStore`. A step's writes ride its boundary's
commit (:func:`perdure.store.engine.memory_writes.write_memory`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from perdure.core.errors import StoreError
from perdure.core.memory import (
    MemoryItem,
    MemoryWrite,
    Namespace,
    matches,
    namespace_of,
    namespace_text,
)
from perdure.core.memory_index import best_score
from perdure.core.values import JSON
from perdure.store.driver import Tx
from perdure.store.engine.base import EngineBase
from perdure.store.engine.memory_writes import unpack, write_memory
from perdure.store.rows import Params, Row, When, from_json, to_json


class MemoryWing(EngineBase):
    """Long-term memory. The ``memory`` wing of the store."""

    def get(
        self,
        tenant_id: str,
        namespace: Namespace,
        key: str,
        now: datetime,
        *,
        refresh_ttl: bool = False,
    ) -> MemoryItem | None:
        """See :meth:`MemoryStore.get`."""
        params = {
            "tenant_id": tenant_id,
            "namespace": namespace_text(namespace),
            "key": key,
            "now": self.driver.stamp(now),
        }
        if not refresh_ttl:
            with self.driver.read() as tx:
                row = tx.one("get_memory", params)
            return None if row is None else memory_item(row, self.driver.when)
        with self.driver.write() as tx:
            row = tx.one("get_memory", params)
            return None if row is None else self._refreshed(tx, tenant_id, row, now)

    def search(
        self,
        tenant_id: str,
        prefix: Namespace,
        now: datetime,
        *,
        filter: Mapping[str, JSON] | None = None,
        limit: int | None = None,
        offset: int = 0,
        query: Sequence[float] | None = None,
        refresh_ttl: bool = False,
    ) -> list[MemoryItem]:
        """See :meth:`MemoryStore.search`."""
        params = {
            "tenant_id": tenant_id,
            "prefix": namespace_text(prefix),
            "now": self.driver.stamp(now),
        }
        if limit is not None and limit <= 0:
            return []
        with self.driver.write() if refresh_ttl else self.driver.read() as tx:  # fmt: skip
            rows = self._searched(tx, params, filter, limit, max(offset, 0), query)
            if not refresh_ttl:
                return [memory_item(row, self.driver.when, score) for row, score in rows]
            return [self._refreshed(tx, tenant_id, row, now, score) for row, score in rows]

    def _searched(
        self,
        tx: Tx,
        params: Params,
        filter: Mapping[str, JSON] | None,
        limit: int | None,
        offset: int,
        query: Sequence[float] | None,
    ) -> list[tuple[Row, float | None]]:
        """The rows of a search with their scores, filtered, ordered and paged."""
        stop = None if limit is None else offset + limit
        if query is None:
            found: list[tuple[Row, float | None]] = []
            for row in tx.all("search_memory", params):
                if not filter or matches(from_json(row["value"]), filter):
                    found.append((row, None))
                    if stop is not None and len(found) >= stop:
                        break
            return found[offset:]
        scored: list[tuple[Row, float | None]] = []
        rows: list[Row] = []
        for row in tx.all("search_memory_vectors", params):  # an item's rows are adjacent
            if rows and (rows[0]["namespace"], rows[0]["key"]) != (row["namespace"], row["key"]):
                self._score(rows, filter, query, scored)
                rows = []
            rows.append(row)
        if rows:
            self._score(rows, filter, query, scored)
        # best first; items without a vector after every scored one, by namespace then key
        scored.sort(key=lambda rs: (rs[1] is None, -(rs[1] or 0.0)))
        return scored[offset:stop]

    @staticmethod
    def _score(
        rows: list[Row],
        filter: Mapping[str, JSON] | None,
        query: Sequence[float],
        scored: list[tuple[Row, float | None]],
    ) -> None:
        """Add one item (its rows, one per vector) with its best score when it matches."""
        row = rows[0]
        if filter and not matches(from_json(row["value"]), filter):
            return
        vectors = [unpack(r["vector"]) for r in rows if r["vector"] is not None]
        scored.append((row, best_score(query, vectors)))

    def _refreshed(
        self, tx: Tx, tenant_id: str, row: Row, now: datetime, score: float | None = None
    ) -> MemoryItem:
        """The item of ``row`` after its time to live starts again at ``now`` (when it has
        one)."""
        item = memory_item(row, self.driver.when, score)
        ttl = row["ttl_seconds"]
        if ttl is None:
            return item
        expires_at = now + timedelta(seconds=float(ttl))
        params = {
            "tenant_id": tenant_id,
            "namespace": row["namespace"],
            "key": row["key"],
            "expires_at": self.driver.stamp(expires_at),
            "now": self.driver.stamp(now),
        }
        tx.run("refresh_memory_expiry", params)
        return replace(item, expires_at=expires_at)

    def put(self, tenant_id: str, writes: Sequence[MemoryWrite], now: datetime) -> None:
        """See :meth:`MemoryStore.put`."""
        if not writes:
            return
        ids = {"tenant_id": tenant_id, "run_id": None}
        with self.driver.write() as tx:
            write_memory(tx, ids, writes, None, self.driver.stamp(now), self.driver.stamp)

    def namespaces(self, tenant_id: str, now: datetime) -> list[Namespace]:
        """See :meth:`MemoryStore.namespaces`."""
        params = {"tenant_id": tenant_id, "now": self.driver.stamp(now)}
        with self.driver.read() as tx:
            return [namespace_of(row["namespace"]) for row in tx.all("memory_namespaces", params)]

    def erase(self, tenant_id: str, prefix: Namespace, *, by: str, now: datetime) -> int:
        """See :meth:`MemoryStore.erase`."""
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

    def expire(self, now: datetime, *, limit: int) -> int:
        """See :meth:`MemoryStore.expire`."""
        with self.driver.write() as tx:
            return tx.run("expire_memory", {"now": self.driver.stamp(now), "limit": limit})


def memory_item(row: Row, when: When, score: float | None = None) -> MemoryItem:
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
        score=score,
    )
