"""``ctx.memory``: a step's view of its tenant's long-term memory (:mod:`perdure.core.memory`).

Reads see the memory committed so far plus what this step (and, until their boundaries are
durable, the earlier steps of the same execution) wrote; writes are kept by the execution and
committed with the step's boundary, in the same transaction as its state. A step that raises,
is retried, or never commits writes nothing; a crash before the boundary leaves memory as it
was, and the step run again writes it once. ``docs/state.md`` tells the whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

from perdure.core.errors import InvalidInputError
from perdure.core.memory import (
    MemoryItem,
    MemoryWrite,
    checked_key,
    checked_namespace,
)
from perdure.core.memory_index import MemoryIndex
from perdure.core.serde import dumps, loads
from perdure.core.values import JSON
from perdure.runtime.step.host import StepHost

MAX_SEARCH = 1000
"""The most items one :meth:`StepMemory.search` returns."""


class StepMemory:
    """The long-term memory of the run's tenant, as ``ctx.memory``: namespaced JSON items
    (``("user", user_id)``, key) shared by every run of the tenant and written with the
    step's boundary."""

    def __init__(self, host: StepHost) -> None:
        self._host = host

    def get(self, namespace: Sequence[str], key: str) -> MemoryItem | None:
        """The item, or None when there is none (or it expired). Sees this step's own writes."""
        return self._host.memory_get(checked_namespace(namespace), checked_key(key))

    def put(
        self,
        namespace: Sequence[str],
        key: str,
        value: JSON,
        *,
        ttl: float | timedelta | None = None,
        index: MemoryIndex | None = None,
        fields: Sequence[str] | None = None,
    ) -> None:
        """Write ``value`` (JSON) under ``(namespace, key)`` at this step's boundary, bumping the
        item's version; with ``ttl`` (seconds) it reads as absent that long after the put.
        With ``index`` (a :class:`~perdure.core.memory_index.MemoryIndex`), the texts at its
        fields (or at ``fields``) are embedded now and their vectors committed with the item,
        for :meth:`search` by ``query``; a put without ``index`` leaves the item unindexed."""
        ns, k = checked_namespace(namespace), checked_key(key)
        copy = loads(dumps(value))  # refused now if not JSON; later changes to value do not leak
        expires_at = None
        if ttl is not None:
            seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
                raise InvalidInputError(
                    f"memory ttl must be a positive number of seconds, not {ttl!r}",
                    fix="pass ttl=None to keep the item, or a number of seconds above 0",
                )
            expires_at = self._host.now() + timedelta(seconds=seconds)
        vectors = _index(index).vectors(copy, fields) if index is not None else ()
        self._host.memory_write(MemoryWrite(ns, k, copy, expires_at, vectors=vectors))

    def delete(self, namespace: Sequence[str], key: str) -> None:
        """Remove the item at this step's boundary (nothing happens when there is none)."""
        ns, k = checked_namespace(namespace), checked_key(key)
        self._host.memory_write(MemoryWrite(ns, k, deleted=True))

    def search(
        self,
        namespace_prefix: Sequence[str] = (),
        *,
        filter: Mapping[str, JSON] | None = None,
        limit: int = 100,
        query: str | None = None,
        index: MemoryIndex | None = None,
    ) -> list[MemoryItem]:
        """The items of ``namespace_prefix`` and every namespace below it, ordered by namespace
        then key, whose value is an object with every field of ``filter`` equal (or compared by
        ``$gt``, ``$ne``... as in :func:`perdure.core.memory.matches`); at most ``limit`` (1 to
        :data:`MAX_SEARCH`). Sees this step's own writes.

        With ``query`` (text) and the ``index`` the items were put with, the query is embedded
        and the items come by semantic similarity instead, best first, each with its ``score``
        (items put without an index come last, without a score)."""
        prefix = checked_namespace(namespace_prefix, prefix=True)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH:
            raise InvalidInputError(
                f"memory search limit must be 1 to {MAX_SEARCH}, not {limit!r}",
                fix="pass a smaller limit and narrow the prefix or filter",
            )
        if filter is not None and (
            not isinstance(filter, Mapping) or not all(isinstance(n, str) for n in filter)
        ):
            raise InvalidInputError(
                "memory search filter must map field names to JSON values",
                fix='pass a dict such as {"kind": "fact"}',
            )
        vector = None
        if query is not None:
            if index is None:
                raise InvalidInputError(
                    "a memory search by query needs the index its items were put with",
                    fix="pass index=MemoryIndex(embed=..., dims=...) with query=",
                )
            vector = _index(index).query(query)
        return self._host.memory_search(prefix, dict(filter) if filter else None, limit, vector)


def _index(index: object) -> MemoryIndex:
    if not isinstance(index, MemoryIndex):
        raise InvalidInputError(
            f"index must be a MemoryIndex, not {type(index).__name__}",
            fix="pass index=MemoryIndex(embed=fn, dims=n, fields=[...])",
        )
    return index
