"""PerdureStore, LangGraph's BaseStore on perdure's memory, side by side with LangGraph's own
InMemoryStore (the package ships no store conformance suite): the same operations give the
same results, on SQLite and PostgreSQL; TTL through the runtime's clock; a graph's node reads
and writes it; a workflow's ctx.memory and the store share items."""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from perdure import Context, FakeClock, Runtime, Workflow, done, step
from perdure.core.errors import InvalidInputError
from perdure.langgraph import PerdureStore
from tests.embeddings import DIMS, embed, embed_one

LABELS = st.sampled_from(["a", "b", "c"])
KEYS = st.sampled_from(["k1", "k2", "k3"])
VALUES = st.fixed_dictionaries(
    {"n": st.integers(0, 3), "kind": st.sampled_from(["fact", "pref"])},
    optional={"text": st.sampled_from(["python and rust", "tea", "red cat", "blue dog tea"])},
)
NAMESPACES = st.lists(LABELS, min_size=1, max_size=3).map(tuple)
FILTERS = st.one_of(
    st.none(),
    st.fixed_dictionaries({"kind": st.sampled_from(["fact", "pref"])}),
    st.fixed_dictionaries({"n": st.sampled_from([{"$gte": 2}, {"$lt": 1}, {"$ne": 3}, 1])}),
)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), NAMESPACES, KEYS, VALUES),
        st.tuples(st.just("delete"), NAMESPACES, KEYS),
        st.tuples(st.just("get"), NAMESPACES, KEYS),
        st.tuples(st.just("search"), st.lists(LABELS, max_size=2).map(tuple), FILTERS),
        st.tuples(st.just("page"), st.integers(0, 4), st.integers(1, 3)),
        st.tuples(
            st.just("namespaces"),
            st.one_of(st.none(), st.lists(LABELS | st.just("*"), max_size=2).map(tuple)),
            st.one_of(st.none(), st.integers(1, 3)),
        ),
    ),
    max_size=25,
)


def index() -> Any:
    return {"embed": embed, "dims": DIMS, "fields": ["text"]}


def found(items: list[Any]) -> list[tuple[Any, ...]]:
    return sorted((i.namespace, i.key, tuple(sorted(i.value.items()))) for i in items)


@pytest.fixture
def store(graph_runtime: Runtime) -> PerdureStore:
    return PerdureStore(graph_runtime, index=index())


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_the_same_operations_give_the_same_results_as_langgraphs_in_memory_store(
    store: PerdureStore, ops: list[tuple[Any, ...]]
) -> None:
    root = "t" + uuid.uuid4().hex[:8]  # each example in a namespace of its own
    ours = store
    theirs = InMemoryStore(index=index())

    def both(call: str, *args: Any, **kw: Any) -> tuple[Any, Any]:
        return getattr(ours, call)(*args, **kw), getattr(theirs, call)(*args, **kw)

    for op in ops:
        if op[0] == "put":
            both("put", (root, *op[1]), op[2], op[3])
        elif op[0] == "delete":
            both("delete", (root, *op[1]), op[2])
        elif op[0] == "get":
            a, b = both("get", (root, *op[1]), op[2])
            assert (a and (a.namespace, a.key, a.value)) == (b and (b.namespace, b.key, b.value))
        elif op[0] == "search":
            a, b = both("search", (root, *op[1]), filter=op[2], limit=100)
            assert found(a) == found(b)
        elif op[0] == "page":
            a, b = both("search", (root,), offset=op[1], limit=op[2])
            assert len(a) == len(b)
            every = ours.search((root,), limit=100)
            assert [(i.namespace, i.key) for i in a] == [
                (i.namespace, i.key) for i in every[op[1] : op[1] + op[2]]
            ]
        else:
            prefix = None if op[1] is None else (root, *op[1])
            # InMemoryStore keeps a namespace whose items were all deleted (or only read); ours,
            # like LangGraph's PostgresStore, lists the namespaces holding an item
            for empty in [ns for ns, items in theirs._data.items() if not items]:
                del theirs._data[empty]
            a, b = both("list_namespaces", prefix=prefix, max_depth=op[2], limit=1000)
            mine = [ns for ns in b if ns[0] == root]
            assert [ns for ns in a if ns[0] == root] == mine
    a, b = both("search", (root,), query="tea and a cat", limit=100)
    scores = {(i.namespace, i.key): i.score for i in a}
    assert scores.keys() == {(i.namespace, i.key) for i in b}
    for i in b:
        if i.score is None:
            assert scores[(i.namespace, i.key)] is None
        else:
            assert scores[(i.namespace, i.key)] == pytest.approx(i.score, abs=1e-6)
    assert list(scores.values()) == sorted(
        scores.values(), key=lambda s: (s is None, -(s or 0.0))
    ), "best first, unscored last"


def test_a_semantic_search_finds_the_closest_item_first(store: PerdureStore) -> None:
    store.put(("docs",), "1", {"text": "python and rust"})
    store.put(("docs",), "2", {"text": "tea with a cat"})
    store.put(("docs",), "3", {"text": "red"}, index=False)
    store.put(("docs",), "4", {"title": "no text field"})
    hits = store.search(("docs",), query="my cat")
    assert [h.key for h in hits] == ["2", "1", "3", "4"]
    assert hits[0].score is not None and hits[0].score > 0.5 and hits[-1].score is None
    assert [h.key for h in store.search(("docs",), query="python", limit=1, offset=1)] == ["2"]


def test_an_async_graph_api_reads_the_same_items(store: PerdureStore) -> None:
    import asyncio

    async def go() -> Any:
        await store.aput(("a",), "k", {"x": 1})
        item = await store.aget(("a",), "k")
        return item and item.value, await store.alist_namespaces()

    value, namespaces = asyncio.run(go())
    assert value == {"x": 1} and ("a",) in namespaces


def test_ttl_expires_items_by_the_runtimes_clock_and_reads_refresh_it(
    graph_runtime: Runtime, clock: FakeClock
) -> None:
    store = PerdureStore(graph_runtime, ttl={"default_ttl": 1.0, "refresh_on_read": True})
    store.put(("s",), "short", {"v": 1})
    store.put(("s",), "kept", {"v": 2}, ttl=None)
    clock.advance(50)
    assert store.get(("s",), "short") is not None  # refreshed: a minute from now again
    clock.advance(50)
    assert store.get(("s",), "short", refresh_ttl=False) is not None
    clock.advance(11)
    assert store.get(("s",), "short") is None
    assert [i.key for i in store.search(("s",))] == ["kept"]
    assert graph_runtime.store.memory.expire(clock.now(), limit=10) == 1  # what gc deletes


def test_hostile_namespaces_keys_and_values_are_refused_as_invalid_input(
    store: PerdureStore,
) -> None:
    for ns, key, value in (
        (("a/b",), "k", {}),
        (("a",), "k/2", {}),
        (("a",), "x" * 300, {}),
        (("a",), "k", {"bad": object()}),
    ):
        with pytest.raises((InvalidInputError, ValueError)):
            store.put(ns, key, value)
    with pytest.raises(InvalidInputError):
        store.search(("a",), limit=-1)


def test_a_graph_node_and_a_workflow_share_the_tenants_memory(graph_runtime: Runtime) -> None:
    store = PerdureStore(graph_runtime)

    class S(TypedDict):
        user: str
        seen: int

    def remember(state: S, *, store: BaseStore) -> dict[str, Any]:
        old = store.get(("user", state["user"]), "visits")
        seen = (old.value["n"] if old else 0) + 1
        store.put(("user", state["user"]), "visits", {"n": seen})
        return {"seen": seen}

    builder = StateGraph(S)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    graph = builder.compile(store=store)
    assert graph.invoke({"user": "u1", "seen": 0})["seen"] == 1
    assert graph.invoke({"user": "u1", "seen": 0})["seen"] == 2

    @step
    def read(ctx: Context, s: dict[str, Any]) -> Any:
        item = ctx.memory.get(("user", "u1"), "visits")
        ctx.memory.put(("user", "u1"), "visits", {"n": 10})
        return done({"n": item and item.value, "version": item and item.version})

    run = graph_runtime.start(Workflow("reader", state=dict, steps=[read]))
    graph_runtime.run_until_idle()
    assert graph_runtime.get(run.run_id).result == {"n": {"n": 2}, "version": 2}
    assert graph.invoke({"user": "u1", "seen": 0})["seen"] == 11
    assert store.get(("user", "u1"), "visits").value == {"n": 11}  # type: ignore[union-attr]
    other = PerdureStore(graph_runtime, tenant="other")
    assert other.get(("user", "u1"), "visits") is None, "tenant-scoped"


def test_the_local_embedding_is_deterministic() -> None:
    assert embed(["tea tea cat"]) == [embed_one("tea tea cat")] and len(embed_one("")) == DIMS
