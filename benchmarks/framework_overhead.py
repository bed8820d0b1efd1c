"""What a recorded model request costs in a framework's agent run: pydantic-ai and the OpenAI
Agents SDK, each bare and through perdure's integration, on the same local stub server.

For each framework, ``--calls`` agent runs of one model request each (a fresh question each
time, the stub answering "ok"): bare, one ``agent.run`` / ``Runner.run`` after the other; then
the same runs inside one ``async def`` perdure step, each with ``PerdureDurability`` /
``PerdureRunner``, so every request is a recorded model call (intent, in flight, outcome, the
request's fingerprint hashed, the reply stored). Each figure is the median wall time of one
agent run, timed around it; the difference is what recording adds. First, the effect protocol
alone: a no-op ``ctx.aeffect`` in an async step (what any recorded call pays). Beside them, the
floor:
one durable commit on the same database (SQLite: ``BEGIN; INSERT; COMMIT``, WAL,
``synchronous=FULL``; PostgreSQL: a one-row autocommit INSERT), since a recorded call makes
three of them.

SQLite on a fresh file; PostgreSQL on a scratch database of the server ``--dsn`` names
(default ``PERDURE_BENCH_PG_DSN``, then ``PERDURE_TEST_PG_DSN``), dropped at the end.

Run: ``python benchmarks/framework_overhead.py [--calls 200] [--db sqlite,postgres]``.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

from openai import AsyncOpenAI
from peers import sqlite_commit_us
from postgres_overhead import database

from perdure import Context, Runtime, Workflow, done, step
from perdure.providers.stub import StubServer, openai_reply


@dataclass
class Empty:
    pass


def client(stub: StubServer) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=stub.url + "/v1", api_key="bench", max_retries=0)


# -- the two frameworks: one agent run of one request, bare or recorded -------------------------


Run = Callable[[Context | None, int], Awaitable[Any]]
"""One agent run of one request: bare (no context) or recorded in the step of the context."""


def pydantic_ai_run(stub: StubServer) -> tuple[Run, AsyncOpenAI]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from perdure.pydantic_ai import PerdureDurability

    sdk = client(stub)
    agent = Agent(OpenAIChatModel("gpt-test", provider=OpenAIProvider(openai_client=sdk)))

    async def one(ctx: Context | None, i: int) -> Any:
        capabilities = [] if ctx is None else [PerdureDurability(ctx)]
        return (await agent.run(f"question {i}", capabilities=capabilities)).output

    return one, sdk


def openai_agents_run(stub: StubServer) -> tuple[Run, AsyncOpenAI]:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner

    from perdure.openai_agents import PerdureRunner

    sdk = client(stub)
    model = OpenAIChatCompletionsModel(model="gpt-test", openai_client=sdk)
    agent = Agent(name="bench", model=model)
    config = RunConfig(tracing_disabled=True)

    async def one(ctx: Context | None, i: int) -> Any:
        if ctx is None:
            return (await Runner.run(agent, f"question {i}", run_config=config)).final_output
        result = await PerdureRunner(ctx).run(agent, f"question {i}", run_config=config)
        return result.final_output

    return one, sdk


FRAMEWORKS = {"pydantic-ai": pydantic_ai_run, "openai-agents": openai_agents_run}


def bare(made: tuple[Run, AsyncOpenAI], stub: StubServer, n: int) -> float:
    stub.script(*(openai_reply("ok") for _ in range(n)))
    one, sdk = made

    async def go() -> list[float]:
        times = []
        for i in range(n):
            began = time.perf_counter()
            await one(None, i)
            times.append(time.perf_counter() - began)
        await sdk.close()  # on the loop it used
        return times

    return statistics.median(asyncio.run(go()))


def recorded(made: tuple[Run, AsyncOpenAI], stub: StubServer, n: int, db: str) -> float:
    stub.script(*(openai_reply("ok") for _ in range(n)))
    one, sdk = made
    times: list[float] = []

    @step
    async def ask(ctx: Context, s: Empty):  # type: ignore[no-untyped-def]
        for i in range(n):
            began = time.perf_counter()
            await one(ctx, i)
            times.append(time.perf_counter() - began)
        await sdk.close()
        return done(None)

    flow = Workflow("bench_framework", state=Empty, steps=[ask])
    with Runtime(db, workflows=[flow]) as rt:
        run = rt.start(flow, Empty())
        rt.run_until_idle()
        assert rt.get(run.run_id).status == "SUCCEEDED"
        recorded_calls = sum(1 for e in rt.effects.list(run_id=run.run_id) if e.target == "model")
        assert recorded_calls == n, recorded_calls
    return statistics.median(times)


def noop_effects(n: int, db: str) -> float:
    """The effect protocol alone in an async step: ``n`` no-op ``ctx.aeffect`` calls."""
    times: list[float] = []

    async def noop(_request: Any, _key: str) -> str:
        return "ok"

    @step
    async def act(ctx: Context, s: Empty):  # type: ignore[no-untyped-def]
        for i in range(n):
            began = time.perf_counter()
            await ctx.aeffect(
                f"noop.{i}", target="bench", operation="noop", request={"i": i}, execute=noop
            )
            times.append(time.perf_counter() - began)
        return done(None)

    flow = Workflow("bench_noop", state=Empty, steps=[act])
    with Runtime(db, workflows=[flow]) as rt:
        rt.start(flow, Empty())
        rt.run_until_idle()
    return statistics.median(times)


# -- databases and their floors ---------------------------------------------------------------


def floor_us(kind: str, folder: Path, url: str) -> float:
    if kind == "sqlite":
        return sqlite_commit_us(Path(tempfile.mkdtemp(dir=folder)), 2000)
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS floor (id serial PRIMARY KEY, v text)")
        times = []
        for _ in range(500):
            began = time.perf_counter()
            conn.execute("INSERT INTO floor (v) VALUES ('x')")
            times.append(time.perf_counter() - began)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--db", default="sqlite,postgres")
    dsn = os.environ.get("PERDURE_BENCH_PG_DSN") or os.environ.get("PERDURE_TEST_PG_DSN")
    parser.add_argument("--dsn", default=dsn)
    args = parser.parse_args()
    kinds = [k for k in args.db.split(",") if k == "sqlite" or args.dsn]
    print(f"median wall time of one agent run of one model request, {args.calls} runs, µs")
    print(f"{'':<30}{'bare':>9}{'recorded':>10}{'added':>9}{'commit floor':>14}")
    with tempfile.TemporaryDirectory(prefix="perdure-frameworks-") as tmp, StubServer() as stub:
        folder = Path(tmp)
        for kind in kinds:
            with database(kind, folder, args.dsn, "perdure_fw_noop") as db:
                noop = noop_effects(args.calls, db) * 1e6
                floor = floor_us(kind, folder, db)
            label = f"no-op ctx.aeffect, {kind}"
            print(f"{label:<30}{'':>9}{noop:>10.0f}{noop:>9.0f}{floor:>14.0f}")
        for name, build in FRAMEWORKS.items():
            bare(build(stub), stub, 20)  # warm the framework (a client per event loop)
            for kind in kinds:
                with database(kind, folder, args.dsn, f"perdure_fw_{name.replace('-', '_')}") as db:
                    alone = bare(build(stub), stub, args.calls) * 1e6
                    kept = recorded(build(stub), stub, args.calls, db) * 1e6
                    floor = floor_us(kind, folder, db)
                label = f"{name}, {kind}"
                print(f"{label:<30}{alone:>9.0f}{kept:>10.0f}{kept - alone:>9.0f}{floor:>14.0f}")


if __name__ == "__main__":
    main()
