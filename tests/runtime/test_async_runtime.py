"""An async application drives runs through AsyncRuntime without blocking its event loop."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from perdure import AsyncRuntime, Context, RunStatus, Runtime, Workflow, done, step


@dataclass
class Ticket:
    text: str = ""


@step
def answer(ctx: Context, s: Ticket):  # type: ignore[no-untyped-def]
    return done({"echo": s.text})


tickets = Workflow("tickets", state=Ticket, steps=[answer])


def test_an_async_handler_starts_resumes_and_reads_runs(db_url: str) -> None:
    async def handler(art: AsyncRuntime) -> None:
        ticks = 0

        async def heartbeat() -> None:  # proves the loop keeps running during the calls
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        beat = asyncio.create_task(heartbeat())
        started = await asyncio.gather(
            *(art.start(tickets, {"text": f"t{i}"}, idempotency_key=f"k{i}") for i in range(5))
        )
        again = await art.start(tickets, {"text": "other"}, idempotency_key="k0")
        assert again.run_id == started[0].run_id, "idempotent by key"
        done_runs = [await art.resume(r.run_id) for r in started]
        assert [r.status for r in done_runs] == [RunStatus.SUCCEEDED] * 5
        view = await art.status(started[3].run_id)
        assert view.run.result == {"echo": "t3"}
        assert len(await art.runs(limit=10)) == 5
        beat.cancel()
        assert ticks > 0
        await art.aclose()

    asyncio.run(handler(AsyncRuntime(Runtime(db_url, workflows=[tickets]))))
