"""The systems measured by ``benchmarks/async_agents.py``: perdure, LangGraph, DBOS and the floor.

Every system runs the same agent: ``steps`` steps in a row, each awaiting ``latency`` seconds
of simulated model time (``await asyncio.sleep``), ``runs`` agents at once in one process. Each
measuring function builds its database and one warm-up agent before the clock starts, then
returns the wall time of ``runs`` agents (started together) from the first start to the last
end. Peers are imported inside the functions, so this module imports without them.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent))

from perdure import Context, RunStatus, Runtime, Worker, Workflow, done, goto
from perdure.core.errors import StoreError
from perdure.core.workflow import Outcome, StepDef

NOTES: list[str] = []
"""What a measurement saw besides its figure (printed under the table)."""


@dataclass(frozen=True)
class Job:
    """One measurement: a system on a backend at ``runs`` concurrent agents."""

    backend: str  # "sqlite" or "postgres"
    db: str  # a file path (sqlite) or a database URL (postgres)
    runs: int
    steps: int
    latency: float
    pool: int  # PostgreSQL connections each system may open


# -- perdure --------------------------------------------------------------------------------------


@dataclass
class Agent:
    n: int = 0


def agent_workflow(steps: int, latency: float, *, effect: bool) -> Workflow[Agent]:
    """``steps`` async steps; each awaits the model (inside ``ctx.aeffect`` when ``effect``)."""

    async def model(request: Any, key: str) -> dict[str, int]:
        await asyncio.sleep(latency)
        return {"tokens": 1}

    def make(i: int) -> StepDef:
        async def fn(ctx: Context, state: Agent) -> Outcome:
            if effect:
                await ctx.aeffect(
                    "model",
                    target="model",
                    operation="complete",
                    request={"step": i},
                    execute=model,
                )
            else:
                await asyncio.sleep(latency)
            state.n += 1
            return goto(f"s{i + 1}") if i < steps - 1 else done({"n": state.n})

        return StepDef(f"s{i}", fn, frozenset({f"s{i + 1}"}) if i < steps - 1 else frozenset())

    name = "agent_effect" if effect else "agent"
    return Workflow(name, state=Agent, steps=[make(i) for i in range(steps)])


def perdure_seconds(job: Job, *, effect: bool) -> float:
    """Start ``runs`` runs, then one ``Worker(rt, concurrency=runs).run(until_idle=True)``: the
    wall time from the worker's start to the last run's stop."""
    wf = agent_workflow(job.steps, job.latency, effect=effect)
    if job.backend == "postgres":
        from perdure.store.postgres.store import PostgresStore

        rt = Runtime(PostgresStore(job.db, max_connections=job.pool), workflows=[wf])
    else:
        rt = Runtime(f"sqlite:///{job.db}", workflows=[wf])
    with rt:
        rt.start(wf)
        Worker(rt).run(until_idle=True)  # warm-up: event loop, statements, caches
        ids = [rt.start(wf).run_id for _ in range(job.runs)]
        last = [0.0]
        errors: list[StoreError] = []
        lock = threading.Lock()

        def on_stop(run_id: str, reason: str) -> None:
            with lock:
                last[0] = time.perf_counter()

        def on_error(exc: StoreError) -> None:
            with lock:
                errors.append(exc)

        worker = Worker(rt, concurrency=job.runs, on_stop=on_stop, on_error=on_error)
        began = time.perf_counter()
        worker.run(until_idle=True)
        if errors:
            NOTES.append(f"{len(errors)} store errors retried by the worker, first: {errors[0]}")
        check_succeeded(rt, ids)
    return last[0] - began


def check_succeeded(rt: Runtime, ids: list[str]) -> None:
    """Raise, naming how many runs are in which status and the first error, unless every run
    SUCCEEDED by the time the worker went idle."""
    runs = [rt.get(run_id) for run_id in ids]
    bad = [run for run in runs if run.status is not RunStatus.SUCCEEDED]
    if not bad:
        return
    counts = Counter(run.status.value for run in bad)
    why = next((run.error for run in bad if run.error is not None), None)
    detail = f"; first error: {why.reason}: {why.message[:100]}" if why is not None else ""
    raise RuntimeError(
        f"{len(bad)} of {len(runs)} runs not SUCCEEDED {dict(counts)}{detail}"
        + "".join(f"; {note}" for note in NOTES)
    )


# -- LangGraph ------------------------------------------------------------------------------------


class GraphState(TypedDict):
    n: int


def build_graph(steps: int, latency: float, checkpointer: Any) -> Any:
    """``START -> node_0 -> ... -> node_{steps-1} -> END``; every node awaits the model."""
    from langgraph.graph import END, START, StateGraph

    async def node(state: GraphState) -> dict[str, int]:
        await asyncio.sleep(latency)
        return {"n": state["n"] + 1}

    builder = StateGraph(GraphState)
    names = [f"node_{i}" for i in range(steps)]
    for name in names:
        builder.add_node(name, node)
    builder.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        builder.add_edge(a, b)
    builder.add_edge(names[-1], END)
    return builder.compile(checkpointer=checkpointer)


async def gather_seconds(runs: int, one: Callable[[int], Awaitable[Any]]) -> float:
    """``await one(-1)`` (warm-up), then the wall time of ``runs`` ``one(i)`` gathered."""
    await one(-1)
    began = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(runs)))
    return time.perf_counter() - began


def langgraph_seconds(job: Job) -> float:
    """``runs`` concurrent ``graph.ainvoke`` (``durability="sync"``, one thread_id each) on
    ``AsyncSqliteSaver`` or on ``AsyncPostgresSaver`` over a pool of ``pool`` connections."""

    async def measure(saver: Any) -> float:
        await saver.setup()
        graph = build_graph(job.steps, job.latency, saver)

        async def one(i: int) -> None:
            config: Any = {"configurable": {"thread_id": f"t{i}"}, "recursion_limit": 100}
            result = await graph.ainvoke({"n": 0}, config, durability="sync")
            if result["n"] != job.steps:
                raise RuntimeError(f"graph ran {result['n']} of {job.steps} steps")

        return await gather_seconds(job.runs, one)

    async def main() -> float:
        if job.backend == "postgres":
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
            from psycopg.rows import dict_row
            from psycopg_pool import AsyncConnectionPool

            kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
            async with AsyncConnectionPool(
                job.db, min_size=1, max_size=job.pool, kwargs=kwargs, timeout=300
            ) as pool:
                return await measure(AsyncPostgresSaver(pool))  # type: ignore[arg-type]
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(job.db) as saver:
            return await measure(saver)

    return asyncio.run(main())


# -- DBOS -----------------------------------------------------------------------------------------


@functools.cache
def dbos_workflow(steps: int, latency: float) -> Callable[[], Coroutine[Any, Any, int]]:
    """Register (once per process, before launch) an async workflow of ``steps`` async steps."""
    from dbos import DBOS

    @DBOS.step(name="perdure_async_bench.model_step")
    async def model_step(i: int) -> int:
        await asyncio.sleep(latency)
        return i

    @DBOS.workflow(name="perdure_async_bench.agent")
    async def agent() -> int:
        n = 0
        for i in range(steps):
            await model_step(i)
            n += 1
        return n

    return agent


def dbos_seconds(job: Job) -> float:
    """``runs`` async workflows gathered on one event loop, on a SQLite or PostgreSQL system
    database (``sys_db_pool_size=pool``)."""
    from dbos import DBOS, DBOSConfig

    workflow = dbos_workflow(job.steps, job.latency)
    url = job.db if job.backend == "postgres" else f"sqlite:///{job.db}"
    config: DBOSConfig = {
        "name": "perdure-async-bench",
        "system_database_url": url,
        "sys_db_pool_size": job.pool,
        "log_level": "WARNING",
    }

    async def one(i: int) -> None:
        n = await workflow()
        if n != job.steps:
            raise RuntimeError(f"workflow ran {n} of {job.steps} steps")

    DBOS(config=config)
    try:
        DBOS.launch()
        return asyncio.run(gather_seconds(job.runs, one))
    finally:
        DBOS.destroy()


# -- floor ----------------------------------------------------------------------------------------


def floor_commits_per_second(job: Job) -> float:
    """Plain durable commits per second on the same database: SQLite, one connection, one-row
    ``BEGIN; INSERT; COMMIT`` in WAL with synchronous=FULL; PostgreSQL, one-row autocommit
    INSERTs from ``min(runs, pool)`` threads, each on its own connection."""
    if job.backend == "postgres":
        from postgres_overhead import baseline_level

        threads = min(job.runs, job.pool)
        level = baseline_level(job.db, threads, threads * 20, job.steps)
        return level.steps_per_second
    from peers import sqlite_commit_us

    return 1e6 / sqlite_commit_us(Path(job.db).parent, 2000)


SYSTEMS: dict[str, Callable[[Job], float]] = {
    "floor": floor_commits_per_second,
    "perdure": functools.partial(perdure_seconds, effect=False),
    "perdure+effect": functools.partial(perdure_seconds, effect=True),
    "LangGraph": langgraph_seconds,
    "DBOS": dbos_seconds,
}
"""Name -> measuring function (the floor returns commits/s, the others seconds)."""
