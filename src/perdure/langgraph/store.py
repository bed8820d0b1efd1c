"""LangGraph's long-term memory (``BaseStore``) on perdure's memory store: the same tables,
tenant scoping, versions, expiry and semantic search as ``ctx.memory``, so a graph and a
perdure workflow of one tenant read each other's items.

    store = PerdureStore(runtime, index={"embed": embed, "dims": 384, "fields": ["text"]})
    graph = builder.compile(checkpointer=saver, store=store)

A graph's ``store.put`` commits at once, in its own transaction (as with LangGraph's own
stores): it is not part of the graph's checkpoint, and a node run again after a crash writes
again (the same value, one version more). ``docs/langgraph.md`` tells the whole.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from perdure.core.errors import InvalidInputError
from perdure.core.memory import (
    MemoryItem,
    MemoryVector,
    MemoryWrite,
    Namespace,
    checked_key,
    checked_namespace,
)
from perdure.core.memory_index import checked_vector
from perdure.core.serde import dumps, loads
from perdure.runtime.admin.parts import DEFAULT_TENANT, Tenant, tenant_of
from perdure.runtime.runtime import Runtime


class PerdureStore(BaseStore):
    """A LangGraph ``BaseStore`` on perdure's memory (SQLite or PostgreSQL).

    ``runtime`` gives the store and the clock; ``tenant`` scopes every item (a workflow's
    ``ctx.memory`` of the same tenant sees them). ``index`` is LangGraph's index config
    (``{"embed": fn or Embeddings, "dims": n, "fields": [...]}``; a synchronous function or
    a LangChain ``Embeddings``) and turns on ``search(query=...)``; ``ttl`` is LangGraph's TTL
    config (``default_ttl`` and ``refresh_on_read``, in minutes; expired items are deleted by
    ``perdure gc``, so ``sweep_interval_minutes`` is not used).

    Namespace labels and keys are perdure's ids: 1 to 255 characters without NUL or ``/``;
    anything else is refused with ``invalid_input``. Values are JSON objects."""

    supports_ttl = True

    def __init__(
        self,
        runtime: Runtime,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self.runtime = runtime
        self.tenant = tenant_of(tenant)
        self.ttl_config = ttl
        self.index_config = index
        self._embeddings = None
        self._dims = 0
        self._fields: list[str] = ["$"]
        if index is not None:
            dims = index.get("dims")
            if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
                raise InvalidInputError(
                    f"index dims must be a positive number, not {dims!r}",
                    fix="pass the length of the vectors the embedding returns",
                )
            self._embeddings = ensure_embeddings(index.get("embed"))
            self._dims = dims
            self._fields = list(index.get("fields") or ["$"])

    # -- LangGraph's interface --------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order: reads see the items as they were before the batch; the
        batch's puts and deletes (the last one of each item) then commit together, in one
        transaction, with their embeddings."""
        results: list[Result] = []
        puts: dict[tuple[Namespace, str], PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._namespaces(op))
            elif isinstance(op, PutOp):
                ns = checked_namespace(op.namespace)
                puts.pop((ns, op.key), None)
                puts[(ns, checked_key(op.key))] = op
                results.append(None)
            else:
                raise InvalidInputError(
                    f"unknown store operation {type(op).__name__}",
                    fix="pass GetOp, PutOp, SearchOp or ListNamespacesOp",
                )
        if puts:
            writes = [self._write(ns, op) for (ns, _), op in puts.items()]
            self.runtime.store.memory.put(self.tenant, writes, self.runtime.clock.now())
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (one implementation for both APIs)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- the operations ---------------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        ns, key = checked_namespace(op.namespace), checked_key(op.key)
        now = self.runtime.clock.now()
        found = self.runtime.store.memory.get(
            self.tenant, ns, key, now, refresh_ttl=bool(op.refresh_ttl)
        )
        return None if found is None else _item(found)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = checked_namespace(op.namespace_prefix, prefix=True)
        if op.limit < 0 or op.offset < 0:
            raise InvalidInputError(
                f"limit and offset must not be negative (got {op.limit}, {op.offset})",
                fix="pass limit >= 0 and offset >= 0",
            )
        query = None
        if op.query and self._embeddings is not None:
            query = checked_vector(self._embeddings.embed_query(op.query), self._dims)
        found = self.runtime.store.memory.search(
            self.tenant,
            prefix,
            self.runtime.clock.now(),
            filter=dict(op.filter) if op.filter else None,
            limit=op.limit,
            offset=op.offset,
            query=query,
            refresh_ttl=bool(op.refresh_ttl),
        )
        return [_search_item(i) for i in found]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        known = self.runtime.store.memory.namespaces(self.tenant, self.runtime.clock.now())
        kept = [ns for ns in known if all(_matches(c, ns) for c in (op.match_conditions or ()))]
        if op.max_depth is not None:
            kept = sorted({ns[: op.max_depth] for ns in kept})
        return kept[op.offset : op.offset + op.limit]

    def _write(self, ns: Namespace, op: PutOp) -> MemoryWrite:
        if op.value is None:
            return MemoryWrite(ns, op.key, deleted=True)
        if not isinstance(op.value, dict):
            raise InvalidInputError(
                f"a store value must be a dict, not {type(op.value).__name__}",
                fix="wrap the value: {'value': ...}",
            )
        value: Any = loads(dumps(dict(op.value)))  # refused now if not JSON (NaN, a set...)
        now = self.runtime.clock.now()
        ttl_seconds = None if op.ttl is None else float(op.ttl) * 60
        if ttl_seconds is not None and not ttl_seconds > 0:
            raise InvalidInputError(
                f"ttl must be a positive number of minutes, not {op.ttl!r}",
                fix="pass ttl=None to keep the item",
            )
        expires_at = None if ttl_seconds is None else now + timedelta(seconds=ttl_seconds)
        vectors = self._vectors(value, op.index)
        return MemoryWrite(ns, op.key, value, expires_at, vectors=vectors, ttl_seconds=ttl_seconds)

    def _vectors(self, value: dict[str, Any], index: Any) -> tuple[MemoryVector, ...]:
        """The embeddings of ``value``'s texts at the index's fields (``index`` None), at the
        fields ``index`` lists, or none (``index`` False or no index config)."""
        if self._embeddings is None or index is False:
            return ()
        fields: Sequence[str] = self._fields if index is None else list(index)
        found: list[tuple[str, str]] = []
        for path in fields:
            texts = get_text_at_path(value, path if path == "$" else tokenize_path(path))
            if len(texts) == 1:
                found.append((path, texts[0]))
            else:
                found.extend((f"{path}.{i}", t) for i, t in enumerate(texts))
        if not found:
            return ()
        vectors = self._embeddings.embed_documents([t for _, t in found])
        if len(vectors) != len(found):
            raise InvalidInputError(
                f"the embedding returned {len(vectors)} vectors for {len(found)} texts",
                fix="return one vector per text, in the order given",
            )
        return tuple(
            MemoryVector(path, checked_vector(v, self._dims))
            for (path, _), v in zip(found, vectors, strict=True)
        )


def _item(found: MemoryItem) -> Item:
    return Item(
        value=found.value,
        key=found.key,
        namespace=found.namespace,
        created_at=found.created_at,
        updated_at=found.updated_at,
    )


def _search_item(found: MemoryItem) -> SearchItem:
    return SearchItem(
        namespace=found.namespace,
        key=found.key,
        value=found.value,
        created_at=found.created_at,
        updated_at=found.updated_at,
        score=found.score,
    )


def _matches(condition: MatchCondition, namespace: Namespace) -> bool:
    """LangGraph's namespace match: the namespace starts (``prefix``) or ends (``suffix``)
    with the condition's path, ``*`` matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "suffix":
        namespace, path = namespace[::-1], path[::-1]
    elif condition.match_type != "prefix":
        raise InvalidInputError(
            f"unknown namespace match type {condition.match_type!r}",
            fix="use 'prefix' or 'suffix'",
        )
    return all(p in {"*", n} for n, p in zip(namespace, path, strict=False))
