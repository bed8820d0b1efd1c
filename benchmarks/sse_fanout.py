"""SSE fan-out: concurrent subscribers to live runs, delivery latency from commit to client,
and the server's CPU.

A server process (uvicorn, ``create_app``) serves ``--runs`` runs, each followed by
``--per-run`` subscribers (200 in all by default) over ``GET /v1/runs/{id}/events``. The
runs wait for a signal that never comes; this process delivers ``--rounds`` other signals to
every run (each one commits a ``signal_received`` event) and notes when each commit returned.
Every subscriber notes when the event reached it. Latency = arrival - commit return, over all
deliveries; server CPU = user + system seconds of the server process while the rounds ran.

    python benchmarks/sse_fanout.py --db postgresql://postgres@127.0.0.1:5432/bench
    python benchmarks/sse_fanout.py --db sqlite:////tmp/fanout.db

On PostgreSQL streams wake on LISTEN/NOTIFY; on SQLite the server polls every 20 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass

import httpx
import orjson

from perdure import Context, Runtime, Workflow, done, step
from perdure.core.workflow import Outcome, wait_for_signal


@dataclass
class Nothing:
    n: int = 0


@step(next=["end"])
def park(ctx: Context, s: Nothing) -> Outcome:
    return wait_for_signal("never", next="end")


@step
def end(ctx: Context, s: Nothing) -> Outcome:
    return done(None)


parked = Workflow("parked", state=Nothing, steps=[park, end])


def serve(db: str, port: int) -> None:
    """The server process."""
    import uvicorn

    from perdure.server import create_app

    rt = Runtime(db)
    uvicorn.run(create_app(rt, poll=0.02), host="127.0.0.1", port=port, log_level="warning")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def subscribe(
    client: httpx.AsyncClient, run_id: str, expected: int, arrivals: list[tuple[str, float]]
) -> None:
    """Follow one run until ``expected`` signal events arrived."""
    seen = 0
    async with client.stream("GET", f"/v1/runs/{run_id}/events") as response:
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue
            event = orjson.loads(line[5:])
            if event["type"] == "signal_received":
                arrivals.append((event["data"]["signal_id"], time.time()))
                seen += 1
                if seen == expected:
                    return


async def main(args: argparse.Namespace) -> None:
    rt = Runtime(args.db, workflows=[parked])
    runs = [rt.start(parked, tenant="bench").run_id for _ in range(args.runs)]
    rt.run_until_idle()
    token = rt.keys.create(f"bench-{uuid.uuid4().hex[:6]}", tenant="bench").token
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, __file__, "--serve", args.db, str(port)])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(url + "/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)
        limits = httpx.Limits(max_connections=args.runs * args.per_run + 10)
        headers = {"Authorization": f"Bearer {token}"}
        arrivals: list[tuple[str, float]] = []
        async with httpx.AsyncClient(
            base_url=url, headers=headers, limits=limits, timeout=None
        ) as client:
            tasks = [
                asyncio.create_task(subscribe(client, run_id, args.rounds, arrivals))
                for run_id in runs
                for _ in range(args.per_run)
            ]
            await asyncio.sleep(2.0)  # let every subscriber connect and read the backlog
            committed: dict[str, float] = {}
            cpu_before, wall_before = cpu_seconds(server.pid), time.monotonic()

            def publish() -> None:
                for _ in range(args.rounds):
                    for run_id in runs:
                        signal_id = uuid.uuid4().hex
                        rt.signal(run_id, "tick", tenant="bench", signal_id=signal_id)
                        committed[signal_id] = time.time()
                    time.sleep(args.pause)

            await asyncio.to_thread(publish)
            await asyncio.wait_for(asyncio.gather(*tasks), timeout=60)
            cpu = cpu_seconds(server.pid) - cpu_before
            wall = time.monotonic() - wall_before
        latencies = sorted((at - committed[sid]) * 1000 for sid, at in arrivals)
        n = len(latencies)
        q = statistics.quantiles(latencies, n=100)
        print(f"database            {args.db.split('://')[0]}")
        print(f"subscribers         {args.runs * args.per_run} ({args.runs} runs x {args.per_run})")
        print(f"deliveries          {n} ({args.rounds} events per run)")
        print(f"latency p50 / p99   {q[49]:.1f} ms / {q[98]:.1f} ms (max {latencies[-1]:.1f} ms)")
        print(
            f"server CPU          {cpu:.2f} s over {wall:.1f} s ({100 * cpu / wall:.0f}% of a core)"
        )
        print(f"server CPU/delivery {1e6 * cpu / n:.0f} us")
    finally:
        server.terminate()
        server.wait(timeout=30)
        rt.close()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        serve(sys.argv[2], int(sys.argv[3]))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="sqlite:////tmp/perdure-fanout.db")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--per-run", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--pause", type=float, default=0.1, help="Seconds between rounds.")
    asyncio.run(main(parser.parse_args()))
