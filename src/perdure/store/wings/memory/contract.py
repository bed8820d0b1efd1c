"""The contract of the ``memory`` wing (long-term memory: reads, search, erasure, expiry), reached
as ``store.memory``.

The rules of :mod:`perdure.store.base` (tenant scoping, "now" as a parameter, one
transaction per method, translated driver errors) hold for every method here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from perdure.core.memory import MemoryItem, MemoryWrite, Namespace
from perdure.core.values import JSON


class MemoryStore(Protocol):
    """Long-term memory of a tenant: read here, written by boundaries, erased on request."""

    def get(
        self,
        tenant_id: str,
        namespace: Namespace,
        key: str,
        now: datetime,
        *,
        refresh_ttl: bool = False,
    ) -> MemoryItem | None:
        """The item, or None when there is none, it expired (``expires_at`` at or before
        ``now``) or it belongs to another tenant. Reads committed items only. With
        ``refresh_ttl``, an item put with a time to live expires that long after ``now``
        (written in the same transaction as the read)."""
        ...

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
        """The live items of namespace ``prefix`` and of every namespace below it (all of the
        tenant's for ``()``), ordered by namespace then key (bytewise on both databases),
        keeping those whose value is an object holding every field of ``filter`` with an equal
        value (:func:`perdure.core.memory.matches`), skipping ``offset`` of them and returning
        at most ``limit``. One read; the filter is applied as the rows are read, so its cost is
        the prefix's size.

        With a ``query`` vector, each item's ``score`` is its best cosine similarity with the
        item's stored vectors (:func:`perdure.core.memory_index.best_score`) and the items come
        best first, ties and items without vectors (``score`` None, last) by namespace then
        key; the prefix's vectors are read and scored in the process (no vector extension is
        needed), so the cost is the prefix's size here too. ``refresh_ttl`` as for
        :meth:`get`, for every item returned."""
        ...

    def put(self, tenant_id: str, writes: Sequence[MemoryWrite], now: datetime) -> None:
        """Apply ``writes`` in order in one transaction, outside any run (``run_id`` and
        ``step_seq`` stay NULL): what a LangGraph store's ``put`` and ``delete`` do. The same
        statements as a boundary's memory writes: a put creates the item or bumps its version
        and replaces its vectors; a delete of an absent item does nothing."""
        ...

    def namespaces(self, tenant_id: str, now: datetime) -> list[Namespace]:
        """Every namespace holding a live item of the tenant, ordered bytewise."""
        ...

    def erase(self, tenant_id: str, prefix: Namespace, *, by: str, now: datetime) -> int:
        """Delete every item of namespace ``prefix`` and below (``()``: every item of the
        tenant), expired or not, and record an ``erasures`` row (who asked, ``{"memory": n}``;
        never the namespace or a value), in one transaction; return how many items went.
        Idempotent but for the record: a second call deletes nothing. Items a step commits
        afterwards are written again."""
        ...

    def expire(self, now: datetime, *, limit: int) -> int:
        """Delete up to ``limit`` items of any tenant whose ``expires_at`` is at or before
        ``now``; return how many (0 when none is left). Each call is one transaction."""
        ...
