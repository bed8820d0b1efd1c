"""Long-term memory: reads, erasure and expiry, :class:`Memory`, a part of
:class:`~perdure.store.engine.Engine` (contracts in :class:`~perdure.store.memory.MemoryStore`);
and :func:`write_memory`, which the commit calls inside a boundary's transaction."""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from perdure.core.errors import InvalidInputError, StoreError
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
from perdure.store.rows import Params, Row, Stamp, When, from_json, to_json


class Memory(EngineBase):
    """Long-term memory. Part of :class:`~perdure.store.engine.Engine`."""

    def get_memory(
        self,
        tenant_id: str,
        namespace: Namespace,
        key: str,
        now: datetime,
        *,
        refresh_ttl: bool = False,
    ) -> MemoryItem | None:
        """See :meth:`MemoryStore.get_memory`."""
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

    def search_memory(
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
        """See :meth:`MemoryStore.search_memory`."""
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

    def put_memory(self, tenant_id: str, writes: Sequence[MemoryWrite], now: datetime) -> None:
        """See :meth:`MemoryStore.put_memory`."""
        if not writes:
            return
        ids = {"tenant_id": tenant_id, "run_id": None}
        with self.driver.write() as tx:
            write_memory(tx, ids, writes, None, self.driver.stamp(now), self.driver.stamp)

    def memory_namespaces(self, tenant_id: str, now: datetime) -> list[Namespace]:
        """See :meth:`MemoryStore.memory_namespaces`."""
        params = {"tenant_id": tenant_id, "now": self.driver.stamp(now)}
        with self.driver.read() as tx:
            return [namespace_of(row["namespace"]) for row in tx.all("memory_namespaces", params)]

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
    step_seq: int | None,
    at: Any,
    stamp: Stamp,
) -> None:
    """Inside a boundary's transaction (or :meth:`Memory.put_memory`'s): each memory write, in
    order (a put creates the item or bumps its version and replaces its vectors; a delete
    removes it, and its vectors with it), as statements whose results are not read."""
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
            "ttl_seconds": w.ttl_seconds,
        }
        tx.run("upsert_memory", put)
        tx.run("delete_memory_vectors", {**where, "key": w.key})
        for v in w.vectors:
            vector = {**where, "key": w.key, "path": v.path, "dims": len(v.vector)}
            tx.run("insert_memory_vector", {**vector, "vector": pack(v.vector)})


def pack(vector: Sequence[float]) -> bytes:
    """A vector as stored: float32 numbers, little-endian; :class:`InvalidInputError` for
    one that is empty or holds what float32 cannot (text, a number beyond 3.4e38)."""
    try:
        if not vector:
            raise struct.error("no numbers")
        return struct.pack(f"<{len(vector)}f", *vector)
    except (struct.error, OverflowError) as exc:
        raise InvalidInputError(
            f"a memory vector cannot be stored as float32 numbers: {exc}",
            fix="embed to finite numbers within float32's range",
        ) from exc


def unpack(stored: bytes | memoryview) -> tuple[float, ...]:
    """The vector :func:`pack` stored."""
    data = bytes(stored)
    return struct.unpack(f"<{len(data) // 4}f", data)


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
