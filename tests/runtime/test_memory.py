"""ctx.memory on each backend: written with the step's boundary, read by later runs of the
tenant, read-your-writes inside a step and an execution, TTL through the clock, search by
prefix and filter, hostile namespaces refused."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from perdure import (
    AsyncRuntime,
    Context,
    FakeClock,
    MemoryItem,
    RetryPolicy,
    RunStatus,
    Runtime,
    Workflow,
    done,
    goto,
    step,
)
from perdure.core.errors import InvalidInputError, MemoryNotFoundError

Body = Callable[[Context], Any]


@dataclass
class Notes:
    seen: list[Any] = field(default_factory=list)


def one_step(name: str, body: Body, retry: RetryPolicy | None = None) -> Workflow[Notes]:
    @step(retry=retry)
    def work(ctx: Context, s: Notes):  # type: ignore[no-untyped-def]
        return done(body(ctx))

    return Workflow(name, state=Notes, steps=[work])


def result_of(rt: Runtime, wf: Workflow[Notes], tenant: str = "default") -> Any:
    run = rt.start(wf, tenant=tenant)
    rt.run_until_idle()
    after = rt.get(run.run_id, tenant=tenant)
    assert after.status is RunStatus.SUCCEEDED, after
    return after.result


def value(item: MemoryItem | None) -> Any:
    return None if item is None else item.value


def test_a_steps_puts_reach_a_later_run_only_once_the_step_commits(runtime: Runtime) -> None:
    store, clock = runtime.store, runtime.clock

    def remember(ctx: Context) -> Any:
        ctx.memory.put(("user", "u1"), "lang", "fr")
        outside = store.memory.get(ctx.tenant_id, ("user", "u1"), "lang", clock.now())
        return {"mine": value(ctx.memory.get(("user", "u1"), "lang")), "outside": value(outside)}

    assert result_of(runtime, one_step("remember", remember)) == {"mine": "fr", "outside": None}

    def recall(ctx: Context) -> Any:
        item = ctx.memory.get(("user", "u1"), "lang")
        assert item is not None
        return {"lang": item.value, "version": item.version}

    assert result_of(runtime, one_step("recall", recall)) == {"lang": "fr", "version": 1}


def test_memory_is_scoped_by_tenant(runtime: Runtime) -> None:
    def remember(ctx: Context) -> Any:
        ctx.memory.put(("user", "u1"), "lang", "fr")

    def recall(ctx: Context) -> Any:
        return value(ctx.memory.get(("user", "u1"), "lang"))

    result_of(runtime, one_step("remember", remember), tenant="acme")
    assert result_of(runtime, one_step("recall", recall), tenant="acme") == "fr"
    assert result_of(runtime, one_step("recall", recall), tenant="globex") is None


def test_a_step_that_raises_and_is_retried_leaves_only_the_committed_attempts_memory(
    runtime: Runtime, clock: FakeClock
) -> None:
    attempts: list[int] = []

    def flaky(ctx: Context) -> Any:
        attempts.append(1)
        ctx.memory.put(("task",), f"attempt-{len(attempts)}", len(attempts))
        if len(attempts) == 1:
            raise TimeoutError("read timed out")
        return [i.key for i in ctx.memory.search(("task",))]

    wf = one_step("flaky", flaky, RetryPolicy(max_attempts=3, initial_delay=1, jitter=False))
    run = runtime.start(wf)
    for _ in range(2):
        runtime.run_until_idle()
        clock.advance(5)
    after = runtime.get(run.run_id)
    assert after.status is RunStatus.SUCCEEDED
    assert after.result == ["attempt-2"]
    stored = runtime.store.memory.search("default", ("task",), clock.now())
    assert [(i.key, i.version) for i in stored] == [("attempt-2", 1)]


def test_a_step_that_escalates_writes_no_memory(runtime: Runtime) -> None:
    def broken(ctx: Context) -> Any:
        ctx.memory.put(("task",), "k", 1)
        raise ValueError("a bug")

    run = runtime.start(one_step("broken", broken))
    runtime.run_until_idle()
    assert runtime.get(run.run_id).status is RunStatus.NEEDS_ATTENTION
    assert runtime.store.memory.search("default", (), runtime.clock.now()) == []


@pytest.mark.parametrize("mode", ["sync", "async", "exit"])
def test_later_steps_of_a_run_read_earlier_steps_writes_in_every_durability_mode(
    runtime: Runtime, mode: str
) -> None:
    @step(next=["second"])
    def first(ctx: Context, s: Notes):  # type: ignore[no-untyped-def]
        ctx.memory.put(("run",), "a", 1)
        ctx.memory.put(("run",), "b", 2)
        return goto("second")

    @step(next=["third"])
    def second(ctx: Context, s: Notes):  # type: ignore[no-untyped-def]
        ctx.memory.put(("run",), "a", 10)
        ctx.memory.delete(("run",), "b")
        return goto("third")

    @step
    def third(ctx: Context, s: Notes):  # type: ignore[no-untyped-def]
        return done([(i.key, i.value, i.version) for i in ctx.memory.search(("run",))])

    wf = Workflow("steps", state=Notes, steps=[first, second, third])
    run = runtime.start(wf, durability=mode)
    runtime.run_until_idle()
    after = runtime.get(run.run_id)
    assert after.result == [["a", 10, 2]]
    stored = runtime.store.memory.search("default", ("run",), runtime.clock.now())
    assert [(i.key, i.value, i.version) for i in stored] == [("a", 10, 2)]


def test_read_your_writes_inside_a_step_covers_get_delete_and_search(runtime: Runtime) -> None:
    def seed(ctx: Context) -> Any:
        ctx.memory.put(("kb",), "x", {"kind": "fact", "text": "old"})
        ctx.memory.put(("kb",), "y", {"kind": "fact"})

    result_of(runtime, one_step("seed", seed))

    def edit(ctx: Context) -> Any:
        ctx.memory.put(("kb",), "x", {"kind": "fact", "text": "new"})
        ctx.memory.delete(("kb",), "y")
        ctx.memory.put(("kb", "sub"), "z", {"kind": "pref"})
        x = ctx.memory.get(("kb",), "x")
        assert x is not None
        return {
            "x": [x.value["text"], x.version],
            "y": ctx.memory.get(("kb",), "y"),
            "all": [i.key for i in ctx.memory.search(("kb",))],
            "facts": [i.key for i in ctx.memory.search(("kb",), filter={"kind": "fact"})],
            "one": [i.key for i in ctx.memory.search((), limit=1)],
        }

    assert result_of(runtime, one_step("edit", edit)) == {
        "x": ["new", 2],
        "y": None,
        "all": ["x", "z"],
        "facts": ["x"],
        "one": ["x"],
    }


def test_an_item_with_a_ttl_reads_as_absent_once_the_clock_passes_it_and_gc_removes_it(
    runtime: Runtime, clock: FakeClock
) -> None:
    def remember(ctx: Context) -> Any:
        ctx.memory.put(("session",), "token", "abc", ttl=60)
        ctx.memory.put(("session",), "name", "Ada")

    def recall(ctx: Context) -> Any:
        return [i.key for i in ctx.memory.search(("session",))]

    result_of(runtime, one_step("remember", remember))
    clock.advance(59)
    assert result_of(runtime, one_step("recall", recall)) == ["name", "token"]
    clock.advance(1)
    assert result_of(runtime, one_step("recall", recall)) == ["name"]
    report = runtime.gc()
    assert report.rows.get("memory") == 1
    assert runtime.store.memory.expire(clock.now(), limit=10) == 0


@pytest.mark.parametrize(
    ("namespace", "key"),
    [
        ((), "k"),
        (("user", ""), "k"),
        (("user", "a/b"), "k"),
        (("user", "nul\x00"), "k"),
        (("user", "\udcff"), "k"),
        (("user", "x" * 300), "k"),
        (("user", 7), "k"),
        ("user/u1", "k"),
        (("user",), ""),
        (("user",), "a/b"),
        (("user",), "\x00"),
    ],
)
def test_hostile_namespaces_and_keys_are_refused_as_invalid_input(
    runtime: Runtime, namespace: Any, key: Any
) -> None:
    refused: list[str] = []

    def hostile(ctx: Context) -> Any:
        for attempt in (
            lambda: ctx.memory.put(namespace, key, 1),
            lambda: ctx.memory.get(namespace, key),
            lambda: ctx.memory.delete(namespace, key),
        ):
            try:
                attempt()
            except InvalidInputError as exc:
                refused.append(exc.code)

    result_of(runtime, one_step("hostile", hostile))
    if isinstance(namespace, str):  # a string is the CLI's form: split on "/", still checked
        assert len(refused) in (0, 3)
    else:
        assert refused == ["invalid_input"] * 3
    assert runtime.store.memory.search("default", (), runtime.clock.now()) == []


def test_values_limits_and_ttls_that_cannot_be_stored_are_refused(runtime: Runtime) -> None:
    codes: list[str] = []

    def bad(ctx: Context) -> Any:
        for attempt in (
            lambda: ctx.memory.put(("a",), "k", object()),  # type: ignore[arg-type]
            lambda: ctx.memory.put(("a",), "k", 1, ttl=0),
            lambda: ctx.memory.put(("a",), "k", 1, ttl=True),
            lambda: ctx.memory.search(("a",), limit=0),
            lambda: ctx.memory.search(("a",), filter=["kind"]),  # type: ignore[arg-type]
        ):
            try:
                attempt()
            except InvalidInputError as exc:
                codes.append(exc.code)

    result_of(runtime, one_step("bad", bad))
    assert codes == ["invalid_input"] * 5


def test_the_runtime_lists_shows_and_erases_a_tenants_memory(runtime: Runtime) -> None:
    def remember(ctx: Context) -> Any:
        ctx.memory.put(("user", "u1"), "a", {"kind": "fact"})
        ctx.memory.put(("user", "u1", "notes"), "b", {"kind": "pref"})
        ctx.memory.put(("user", "u2"), "c", 3)

    result_of(runtime, one_step("remember", remember), tenant="acme")
    assert [i.key for i in runtime.memory("user", tenant="acme")] == ["a", "b", "c"]
    assert [i.key for i in runtime.memory(("user",), tenant="acme", filter={"kind": "pref"})] == [
        "b"
    ]
    assert runtime.memory(tenant="globex") == []
    assert runtime.memory_item("user/u1", "a", tenant="acme").version == 1
    with pytest.raises(MemoryNotFoundError):
        runtime.memory_item(("user", "u1"), "a", tenant="globex")
    with pytest.raises(InvalidInputError):
        runtime.erase_memory((), tenant="acme")
    with pytest.raises(InvalidInputError):
        runtime.memory("user", tenant="acme", limit=0)
    assert runtime.erase_memory("user/u1", tenant="acme") == 2
    assert [i.key for i in runtime.memory(tenant="acme")] == ["c"]


def test_an_async_handler_lists_shows_and_erases_memory(runtime: Runtime) -> None:
    def remember(ctx: Context) -> Any:
        ctx.memory.put(("user", "u1"), "a", 1)

    result_of(runtime, one_step("remember", remember))

    async def handler(art: AsyncRuntime) -> list[Any]:
        listed = [i.key for i in await art.memory("user")]
        item = await art.memory_item(("user", "u1"), "a")
        erased = await art.erase_memory("user")
        return [listed, item.value, erased]

    assert asyncio.run(handler(AsyncRuntime(runtime, threads=1))) == [["a"], 1, 1]


def test_a_semantic_search_orders_by_similarity_and_sees_the_steps_own_writes(
    runtime: Runtime,
) -> None:
    from perdure import MemoryIndex
    from tests.embeddings import DIMS, embed

    index = MemoryIndex(embed=embed, dims=DIMS, fields=("text",))

    def seed(ctx: Context) -> Any:
        ctx.memory.put(("kb",), "py", {"text": "python python rust"}, index=index)
        ctx.memory.put(("kb",), "cafe", {"text": "coffee and tea"}, index=index)
        ctx.memory.put(("kb",), "plain", {"text": "python"})  # not indexed

    result_of(runtime, one_step("seed", seed))

    def ask(ctx: Context) -> Any:
        before = [
            (i.key, round(i.score or 0, 3))
            for i in ctx.memory.search(("kb",), query="coffee", index=index)
        ]
        ctx.memory.put(("kb",), "tea", {"text": "tea"}, index=index)
        ctx.memory.delete(("kb",), "cafe")
        after = ctx.memory.search(("kb",), query="tea please", index=index, limit=2)
        return {"before": before, "after": [(i.key, i.score is not None) for i in after]}

    assert result_of(runtime, one_step("ask", ask)) == {
        "before": [["cafe", 0.577], ["py", 0], ["plain", 0]],  # 1/sqrt(3); plain: no score
        "after": [["tea", True], ["py", True]],
    }


def test_semantic_search_is_refused_without_its_index_and_a_bad_embedding_is_refused(
    runtime: Runtime,
) -> None:
    from perdure import MemoryIndex

    with pytest.raises(InvalidInputError, match="dims"):
        MemoryIndex(embed=lambda texts: [], dims=0)
    wrong = MemoryIndex(embed=lambda texts: [[1.0, 2.0] for _ in texts], dims=3)

    def search_without_index(ctx: Context) -> Any:
        try:
            ctx.memory.search(("kb",), query="x")
        except InvalidInputError as exc:
            return exc.code
        return "accepted"

    def put_with_wrong_dims(ctx: Context) -> Any:
        try:
            ctx.memory.put(("kb",), "k", {"a": "b"}, index=wrong)
        except InvalidInputError as exc:
            return exc.code
        return "accepted"

    assert result_of(runtime, one_step("noindex", search_without_index)) == "invalid_input"
    assert result_of(runtime, one_step("wrongdims", put_with_wrong_dims)) == "invalid_input"
