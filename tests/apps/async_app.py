"""An async agent for process-level tests: its steps await a real HTTP server on 127.0.0.1.

``ask`` makes one recorded call (``await ctx.aeffect``) to ``GET /apply?key=KEY``; the server
applies each key once and remembers it, and ``reconcile`` asks it (``GET /seen?key=KEY``) when
a crash left the outcome unknown. ``check`` raises while ``ASYNC_APP_BROKEN=1`` (a bug that a
deploy fixes), and ``reply`` answers. ``sleepy`` has steps that each await ``ASYNC_APP_DELAY``
seconds of simulated model latency, for the many-runs-in-one-process test.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

from perdure import Context, Outcome, Reconciled, Workflow, done, goto, step


@dataclass
class Fetch:
    url: str
    answer: str = ""


async def http_get(url: str) -> dict[str, Any]:
    """GET ``url`` with asyncio streams; the body is JSON."""
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    try:
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        writer.write(f"GET {path} HTTP/1.0\r\nHost: {parts.netloc}\r\n\r\n".encode())
        await writer.drain()
        raw = await reader.read()
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    if status != 200:
        raise ConnectionError(f"HTTP {status}")
    result: dict[str, Any] = orjson.loads(body)
    return result


async def apply(request: dict[str, str], key: str) -> dict[str, Any]:
    return await http_get(f"{request['url']}/apply?key={key}")


async def seen(request: dict[str, str], key: str) -> Reconciled:
    found = await http_get(f"{request['url']}/seen?key={key}")
    if found.get("applied"):
        return Reconciled.confirmed(found["result"])
    return Reconciled.not_found()


@step(next=["check"])
async def ask(ctx: Context, s: Fetch) -> Outcome:
    result = await ctx.aeffect(
        "fetch",
        target="answers",
        operation="apply",
        request={"url": s.url},
        execute=apply,
        reconcile=seen,
    )
    s.answer = str(result["answer"])
    return goto("check")


@step(next=["reply"])
async def check(ctx: Context, s: Fetch) -> Outcome:
    if os.environ.get("ASYNC_APP_BROKEN") == "1":
        raise ValueError("the answer cannot be parsed")
    return goto("reply")


@step
async def reply(ctx: Context, s: Fetch) -> Outcome:
    ctx.add_message("assistant", s.answer)
    return done({"answer": s.answer})


fetch = Workflow("fetch", state=Fetch, steps=[ask, check, reply])


@dataclass
class Sleepy:
    n: int = 0


async def think(ctx: Context, s: Sleepy) -> Outcome:
    await asyncio.sleep(float(os.environ.get("ASYNC_APP_DELAY", "0.05")))
    s.n += 1
    return goto("second") if ctx.step == "first" else done({"n": s.n})


sleepy = Workflow(
    "sleepy",
    state=Sleepy,
    steps=[step(name="first", next=["second"])(think), step(name="second")(think)],
)
