"""Many concurrent async agent runs in one process: perdure beside LangGraph and DBOS.

Workload: N agents (N = 10, 100, 1000 by default), each 10 steps in a row; every step awaits
50 ms of simulated model latency (``await asyncio.sleep(0.05)``, no network). All N start
together in one process; the figure is the wall time from the start to the last agent's end,
so the best any system can do is ``steps x latency`` (0.5 s) whatever N is.

* perdure: N runs started, then one ``Worker(rt, concurrency=N).run(until_idle=True)``; the
  wall time ends at the last run's stop. ``perdure+effect`` wraps each sleep in
  ``await ctx.aeffect(...)`` (a recorded model call: intent and outcome are written too).
  perdure runs with its defaults (30 s leases renewed every 10 s by one heartbeat thread); a
  run left unfinished is reported with its status and the store errors the worker retried.
* LangGraph: a linear ``StateGraph`` of 10 async nodes, ``durability="sync"`` (a checkpoint is
  written before the next node starts, as perdure and DBOS do), N ``graph.ainvoke`` gathered,
  one thread_id each; ``AsyncSqliteSaver`` (one aiosqlite connection) or ``AsyncPostgresSaver``
  on a psycopg pool.
* DBOS: an async ``@DBOS.workflow`` awaiting N async ``@DBOS.step`` calls, N gathered.
* Floor: plain durable commits per second on the same database (SQLite: one connection,
  one-row ``BEGIN; INSERT; COMMIT``, WAL, synchronous=FULL; PostgreSQL: one-row autocommit
  INSERTs from min(N, pool) threads on their own connections). ``x floor`` is steps/s divided
  by those commits/s: how close a system comes to one durable commit per step.

On PostgreSQL every system may open ``--pool`` connections (perdure's store pool, LangGraph's
psycopg pool, DBOS's ``sys_db_pool_size``). Each measurement runs in its own subprocess on a
fresh database (a temporary SQLite file, or a PostgreSQL database created for it and dropped
after it), bounded by ``--timeout`` seconds: a cut or failed measurement is printed in the table
with its reason. ``--repeat`` measures each cell several times and reports the median.

Run: ``python benchmarks/async_agents.py [--runs 10,100,1000] [--steps 10] [--latency 0.05]
[--backends sqlite,postgres] [--pg postgresql://postgres@127.0.0.1:5432/postgres]``
(``--pg`` defaults to ``PERDURE_TEST_PG_DSN``). Figures vary with the disk, the cores and their
load (printed); compare ratios, not absolutes. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

PEERS = ("LangGraph", "DBOS")
DISTRIBUTIONS = (
    "langgraph",
    "langgraph-checkpoint-sqlite",
    "langgraph-checkpoint-postgres",
    "aiosqlite",
    "dbos",
)


@dataclass
class Cell:
    """One system on one backend at one N: its median figure, or why there is none."""

    backend: str
    runs: int
    system: str
    value: float | None  # seconds (commits/s for the floor)
    problem: str = ""
    notes: tuple[str, ...] = ()


def child(argv: list[str]) -> None:
    """Run one measurement (in a subprocess) and print its figure as JSON."""
    from async_systems import NOTES, SYSTEMS, Job

    system, backend, db, runs, steps, latency, pool = argv
    job = Job(backend, db, int(runs), int(steps), float(latency), int(pool))
    print(json.dumps({"value": SYSTEMS[system](job), "notes": NOTES}), flush=True)


def admin(dsn: str, statement: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL(statement).format(sql.Identifier(name)))


def measure_once(args: argparse.Namespace, system: str, backend: str, runs: int) -> Cell:
    """One measurement in a fresh subprocess on a fresh database, cut after ``--timeout``."""
    from postgres_overhead import database_url

    with tempfile.TemporaryDirectory(prefix="perdure-async-") as tmp:
        name = f"perdure_async_{os.getpid()}"
        if backend == "postgres":
            admin(args.pg, "DROP DATABASE IF EXISTS {} WITH (FORCE)", name)
            admin(args.pg, "CREATE DATABASE {}", name)
            db = database_url(args.pg, name)
        else:
            db = str(Path(tmp) / "bench.sqlite")
        command = [sys.executable, __file__, "--child", system, backend, db]
        command += [str(runs), str(args.steps), str(args.latency), str(args.pool)]
        try:
            done = subprocess.run(
                command, check=False, capture_output=True, text=True, timeout=args.timeout
            )
        except subprocess.TimeoutExpired:
            return Cell(backend, runs, system, None, f"cut after {args.timeout:.0f} s")
        finally:
            if backend == "postgres":
                admin(args.pg, "DROP DATABASE IF EXISTS {} WITH (FORCE)", name)
    if done.returncode != 0:
        lines = [x for x in done.stderr.strip().splitlines() if x.strip()]
        return Cell(backend, runs, system, None, lines[-1][:600] if lines else "failed")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return Cell(backend, runs, system, float(answer["value"]), notes=tuple(answer["notes"]))


def measure(args: argparse.Namespace, system: str, backend: str, runs: int) -> Cell:
    """The median of ``--repeat`` measurements (the first problem, if any, ends the series)."""
    values: list[float] = []
    notes: list[str] = []
    for _ in range(args.repeat):
        cell = measure_once(args, system, backend, runs)
        if cell.value is None:
            return cell
        values.append(cell.value)
        notes += cell.notes
    return Cell(backend, runs, system, statistics.median(values), notes=tuple(notes))


def row(cell: Cell, args: argparse.Namespace, floor: float | None, ours: Cell | None) -> str:
    """One markdown table row: wall s, steps/s, x floor, wall / ideal, perdure / this."""
    head = f"| {cell.backend} | {cell.runs} | {cell.system} |"
    if cell.value is None:
        short = cell.problem if len(cell.problem) <= 90 else cell.problem[:90] + "... (note)"
        return f"{head} {short} | | | | |"
    steps = cell.runs * args.steps
    rate = steps / cell.value
    ideal = args.steps * args.latency
    ratio = f"{rate / floor:.2f}" if floor else "-"
    versus = ""
    if cell.system in PEERS and ours is not None and ours.value is not None:
        versus = f"{cell.value / ours.value:.2f}"
    wall = f"{cell.value:.2f} | {rate:,.0f} | {ratio} | {cell.value / ideal:.1f}"
    return f"{head} {wall} | {versus} |"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", default="10,100,1000", help="concurrent agents, comma-separated")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.05, help="model latency per step, s")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--systems", default="perdure,perdure+effect,LangGraph,DBOS")
    parser.add_argument("--pg", default=os.environ.get("PERDURE_TEST_PG_DSN"))
    parser.add_argument("--pool", type=int, default=20, help="PostgreSQL connections per system")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per measurement")
    parser.add_argument("--repeat", type=int, default=1, help="measurements per cell (median)")
    args = parser.parse_args()
    backends = [b.strip() for b in args.backends.split(",")]
    if "postgres" in backends and not args.pg:
        parser.error("PostgreSQL needs --pg postgresql://user@host:5432/postgres")
    sizes = [int(n) for n in args.runs.split(",")]
    systems = [s.strip() for s in args.systems.split(",")]

    def version(dist: str) -> str:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    print(", ".join(f"{d} {version(d)}" for d in ("perdure", *DISTRIBUTIONS)))
    print(
        f"{args.steps} steps x {args.latency * 1e3:.0f} ms per agent; ideal wall "
        f"{args.steps * args.latency:.2f} s; PostgreSQL pool {args.pool}; "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at start; "
        f"median of {args.repeat}"
    )
    if "postgres" in backends:
        from postgres_overhead import server_settings

        print(server_settings(args.pg))
    print(
        "\n| backend | N | system | wall s | steps/s | x floor | x ideal wall | peer wall "
        "/ perdure wall |\n|---|---|---|---|---|---|---|---|"
    )
    began = time.monotonic()
    notes: list[str] = []
    for backend in backends:
        floor_cell: Cell | None = None
        for runs in sizes:
            if floor_cell is None or backend == "postgres":  # the SQLite floor has no N
                floor_cell = measure(args, "floor", backend, runs)
            floor = floor_cell.value
            print(
                f"| {backend} | {runs} | floor (plain commits) | | {floor or 0:,.0f} commits/s"
                f" | 1.00 | | |"
                if floor
                else f"| {backend} | {runs} | floor | {floor_cell.problem} | | | | |",
                flush=True,
            )
            ours: Cell | None = None
            for system in systems:
                cell = measure(args, system, backend, runs)
                if system == "perdure":
                    ours = cell
                print(row(cell, args, floor, ours), flush=True)
                said = [cell.problem] if len(cell.problem) > 90 else []
                notes += [f"{backend} N={runs} {system}: {x}" for x in [*said, *cell.notes]]
    for note in notes:
        print(f"note: {note}")
    print(
        f"\nload {os.getloadavg()[0]:.2f} at end; {time.monotonic() - began:.0f} s in all. "
        "x ideal wall: wall / (steps x latency). peer wall / perdure wall > 1: perdure finished "
        "first."
    )


if __name__ == "__main__":
    main()
