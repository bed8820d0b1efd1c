"""Peer runtimes and the SQLite baseline for the step-overhead benchmark.

``benchmarks/step_overhead.py`` measures perdure on a linear workflow of no-op
steps; this module measures the same workload on peer durable-execution
runtimes, plus the cost of one durable SQLite commit as a floor, so the figures
can be compared in one process on one machine.

Every measuring function takes a scratch directory (a fresh temporary directory
owned by the caller) and returns the mean per-step overhead in microseconds:
total wall time divided by ``runs * steps`` (or by ``n`` for the baseline).
Peer imports, database creation and one warm-up run happen before the clock
starts; everything a run does (including any per-run start and end
checkpoints) is inside it.

The peers are optional (the ``bench`` extra). Nothing here imports them at
module level, so this file imports fine without them; use :func:`available`
to find out which ones can be run.

Durability settings, as the peers ship them (checked against the installed
sources, see ``PEER_NOTES``):

* baseline: ``journal_mode=WAL``, ``synchronous=FULL``, one
  ``BEGIN; INSERT; COMMIT`` per iteration.
* LangGraph ``SqliteSaver``: ``journal_mode=WAL`` (set by ``setup()``),
  ``synchronous`` left at SQLite's default (FULL in CPython's bundled and
  Debian's SQLite builds; :func:`sqlite_saver_pragmas` reports the actual
  value).
* DBOS SQLite system database: no ``journal_mode`` pragma, so SQLite's
  default rollback journal (``DELETE``) with ``synchronous`` at its default
  (FULL); transactions are ``BEGIN IMMEDIATE``.

Run standalone with ``python benchmarks/peers.py [--runs N] [--steps N]``.
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import importlib.util
import itertools
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import Durability

__all__ = [
    "DURABILITY_MODES",
    "PEER_NOTES",
    "available",
    "dbos_step_us",
    "langgraph_step_us",
    "sqlite_commit_us",
    "sqlite_saver_pragmas",
]

#: LangGraph durability modes, in the order they are usually reported.
DURABILITY_MODES: tuple[str, ...] = ("sync", "async", "exit")

#: One-line notes on how each peer persists, for printing beside the figures.
PEER_NOTES: dict[str, str] = {
    "sqlite": "baseline: WAL, synchronous=FULL, one BEGIN/INSERT/COMMIT per step",
    "langgraph": (
        "SqliteSaver: WAL set by setup(), synchronous at SQLite default (FULL); "
        "sync = checkpoint before next step, async = checkpoint on a background "
        "thread while the next step runs (invoke still waits for it), "
        "exit = one checkpoint when the graph finishes"
    ),
    "dbos": (
        "DBOS SQLite system db: default rollback journal (no WAL), synchronous "
        "default (FULL), BEGIN IMMEDIATE; one row per step output plus "
        "workflow start/end"
    ),
}

# Distribution name -> a module that must be importable for the peer to run.
_PEER_MODULES: dict[str, str] = {
    "langgraph": "langgraph.graph",
    "langgraph-checkpoint-sqlite": "langgraph.checkpoint.sqlite",
    "dbos": "dbos",
}

_DBOS_APP_NAME = "perdure-bench"
_DBOS_WORKFLOW_NAME = "perdure_bench.linear_workflow"
_DBOS_STEP_NAME = "perdure_bench.noop_step"


def available() -> dict[str, str | None]:
    """Report which peers can be run, without importing them.

    Returns:
        A mapping from distribution name (``"langgraph"``,
        ``"langgraph-checkpoint-sqlite"``, ``"dbos"``) to its installed
        version, or ``None`` when it is not installed or its module cannot be
        found. :func:`langgraph_step_us` needs both LangGraph entries;
        :func:`dbos_step_us` needs ``"dbos"``.

    Only module specs are looked up (which may import the parent packages of
    a dotted name, e.g. the ``langgraph`` namespace); the peers' heavy imports
    happen in the measuring functions.
    """
    found: dict[str, str | None] = {}
    for dist, module in _PEER_MODULES.items():
        try:
            spec = importlib.util.find_spec(module)
            version = importlib.metadata.version(dist) if spec is not None else None
        except (ImportError, ValueError, importlib.metadata.PackageNotFoundError):
            version = None
        found[dist] = version
    return found


def _check_sizes(runs: int, steps: int) -> None:
    """Reject sizes that would make a mean meaningless."""
    if runs < 1 or steps < 1:
        raise ValueError(f"runs and steps must be >= 1, got runs={runs}, steps={steps}")


# --------------------------------------------------------------------------
# Baseline: one durable SQLite commit.
# --------------------------------------------------------------------------


def sqlite_commit_us(tmpdir: Path, n: int = 2000, *, warmup: int = 10) -> float:
    """Mean cost of one durable SQLite commit, in microseconds.

    A fresh file database in ``tmpdir`` with ``journal_mode=WAL`` and
    ``synchronous=FULL`` on an autocommit connection; each timed iteration is
    ``BEGIN; INSERT one small row; COMMIT``. This is the floor for any runtime
    that makes each step durable with its own SQLite commit.

    Args:
        tmpdir: Scratch directory; the database file is created in it.
        n: Number of timed commits.
        warmup: Untimed commits made first (WAL file creation, page cache).

    Returns:
        Mean wall time per commit in microseconds.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    conn = sqlite3.connect(Path(tmpdir) / "baseline.sqlite", isolation_level=None)
    try:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise RuntimeError(f"could not enable WAL, journal_mode={mode!r}")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(
            "CREATE TABLE steps (id INTEGER PRIMARY KEY, run TEXT NOT NULL, "
            "step INTEGER NOT NULL, payload BLOB)"
        )
        payload = b"x" * 32

        def commit_one(i: int) -> None:
            conn.execute("BEGIN")
            conn.execute(
                "INSERT INTO steps (run, step, payload) VALUES (?, ?, ?)",
                ("baseline", i, payload),
            )
            conn.execute("COMMIT")

        for i in range(warmup):
            commit_one(i)
        start = time.perf_counter()
        for i in range(n):
            commit_one(i)
        elapsed = time.perf_counter() - start
    finally:
        conn.close()
    return elapsed / n * 1e6


# --------------------------------------------------------------------------
# LangGraph StateGraph + SqliteSaver.
# --------------------------------------------------------------------------


class _CounterState(TypedDict):
    """Graph state: a counter that each node increments."""

    count: int


def _increment(state: _CounterState) -> dict[str, int]:
    """No-op node body: bump the counter so each step writes a little state."""
    return {"count": state["count"] + 1}


def _build_langgraph(steps: int, checkpointer: Any) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile ``START -> node_0 -> ... -> node_{steps-1} -> END``."""
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(_CounterState)
    names = [f"node_{i}" for i in range(steps)]
    for name in names:
        builder.add_node(name, _increment)
    builder.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        builder.add_edge(a, b)
    builder.add_edge(names[-1], END)
    return builder.compile(checkpointer=checkpointer)


def sqlite_saver_pragmas(tmpdir: Path) -> dict[str, str]:
    """The journal mode and synchronous level a default ``SqliteSaver`` runs with.

    Opens a saver exactly as :func:`langgraph_step_us` does, lets it create
    its tables, and reads the pragmas back from its connection.

    Returns:
        ``{"journal_mode": ..., "synchronous": ...}`` with synchronous spelled
        as SQLite's name for the level (``OFF``, ``NORMAL``, ``FULL``,
        ``EXTRA``).
    """
    from langgraph.checkpoint.sqlite import SqliteSaver

    levels = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    with SqliteSaver.from_conn_string(str(Path(tmpdir) / "pragmas.sqlite")) as saver:
        saver.setup()
        with saver.lock:
            mode = saver.conn.execute("PRAGMA journal_mode").fetchone()[0]
            sync = saver.conn.execute("PRAGMA synchronous").fetchone()[0]
    return {"journal_mode": str(mode), "synchronous": levels.get(sync, str(sync))}


def langgraph_step_us(
    tmpdir: Path, durability: str, runs: int, steps: int, *, warmup: int = 1
) -> float:
    """Mean per-step overhead of a LangGraph linear graph, in microseconds.

    A ``StateGraph`` of ``steps`` no-op nodes chained linearly, compiled with
    a ``SqliteSaver`` on a file database in ``tmpdir`` opened the documented
    way (``SqliteSaver.from_conn_string``, i.e. ``sqlite3.connect(path,
    check_same_thread=False)``, which the ``"async"`` mode's background
    writer needs) and left at its own pragmas (WAL; see
    :func:`sqlite_saver_pragmas`). Each run is one ``invoke`` on a fresh
    ``thread_id`` with ``durability=durability``.

    Args:
        tmpdir: Scratch directory; the checkpoint database is created in it.
        durability: LangGraph durability mode: ``"sync"``, ``"async"`` or
            ``"exit"``.
        runs: Number of timed graph invocations.
        steps: Nodes per graph.
        warmup: Untimed invocations made first (table creation, first-call
            caches).

    Returns:
        Total timed wall time / (runs * steps), in microseconds.
    """
    _check_sizes(runs, steps)
    if durability not in DURABILITY_MODES:
        raise ValueError(f"durability must be one of {DURABILITY_MODES}, got {durability!r}")
    from langgraph.checkpoint.sqlite import SqliteSaver

    mode = cast("Durability", durability)
    db_path = Path(tmpdir) / f"langgraph-{durability}.sqlite"
    with SqliteSaver.from_conn_string(str(db_path)) as saver:
        graph = _build_langgraph(steps, saver)
        # Supersteps per run = steps; leave headroom over LangGraph's default limit.
        limit = steps + 10

        def run_once(thread_id: str) -> None:
            config: Any = {
                "configurable": {"thread_id": thread_id},
                "recursion_limit": limit,
            }
            result = graph.invoke({"count": 0}, config, durability=mode)
            if result["count"] != steps:
                raise RuntimeError(f"graph ran {result['count']} of {steps} steps")

        for i in range(warmup):
            run_once(f"warmup-{i}")
        start = time.perf_counter()
        for i in range(runs):
            run_once(f"run-{i}")
        elapsed = time.perf_counter() - start
    return elapsed / (runs * steps) * 1e6


# --------------------------------------------------------------------------
# DBOS with a SQLite system database.
# --------------------------------------------------------------------------


@functools.cache
def _dbos_workflow() -> Callable[[int], int]:
    """Register the benchmark workflow and step with DBOS, once per process.

    DBOS keeps a process-global registry of decorated functions that must be
    filled before ``DBOS.launch()``; caching keeps a second call from
    registering duplicates. Explicit names keep the registration independent
    of where this module is imported from.
    """
    from dbos import DBOS

    @DBOS.step(name=_DBOS_STEP_NAME)
    def noop_step(i: int) -> int:
        return i

    @DBOS.workflow(name=_DBOS_WORKFLOW_NAME)
    def linear_workflow(steps: int) -> int:
        done = 0
        for i in range(steps):
            noop_step(i)
            done += 1
        return done

    return linear_workflow


_dbos_in_use = False


def dbos_step_us(tmpdir: Path, runs: int, steps: int, *, warmup: int = 1) -> float:
    """Mean per-step overhead of a DBOS workflow on SQLite, in microseconds.

    Configures DBOS with ``system_database_url="sqlite:///<tmpdir>/dbos.sqlite"``
    (DBOS creates and migrates it at launch), runs ``runs`` workflows that
    each call a no-op ``@DBOS.step()`` ``steps`` times in sequence (each call
    is recorded as its own step), then destroys the DBOS instance.

    DBOS is a process-global singleton: this function creates it, launches
    it and always destroys it before returning, and it refuses to run while
    another call is in progress. It must not be called in a process that has
    its own DBOS instance (``DBOS(config=...)`` would hand back that instance
    and its configuration). Calling it again later in the same process works;
    the workflow and step stay registered in DBOS's global registry.

    Args:
        tmpdir: Scratch directory; the system database is created in it.
        runs: Number of timed workflow runs.
        steps: Steps per workflow.
        warmup: Untimed workflow runs made first.

    Returns:
        Total timed wall time / (runs * steps), in microseconds.
    """
    global _dbos_in_use  # noqa: PLW0603 (DBOS is one instance per process)
    _check_sizes(runs, steps)
    if _dbos_in_use:
        raise RuntimeError("dbos_step_us is already running in this process")
    from dbos import DBOS, DBOSConfig

    workflow = _dbos_workflow()
    db_path = (Path(tmpdir) / "dbos.sqlite").resolve()
    config: DBOSConfig = {
        "name": _DBOS_APP_NAME,
        "system_database_url": f"sqlite:///{db_path}",
        "log_level": "WARNING",
    }
    _dbos_in_use = True
    try:
        DBOS(config=config)
        try:
            DBOS.launch()

            def run_once() -> None:
                done = workflow(steps)
                if done != steps:
                    raise RuntimeError(f"workflow ran {done} of {steps} steps")

            for _ in range(warmup):
                run_once()
            start = time.perf_counter()
            for _ in range(runs):
                run_once()
            elapsed = time.perf_counter() - start
        finally:
            DBOS.destroy()
    finally:
        _dbos_in_use = False
    return elapsed / (runs * steps) * 1e6


# --------------------------------------------------------------------------
# Standalone run.
# --------------------------------------------------------------------------


def _line(label: str, us: float) -> str:
    """Format one figure as per-step microseconds and steps per second."""
    return f"{label:<28} {us:10.1f} us/step {1e6 / us:12,.0f} steps/s"


def main(argv: list[str] | None = None) -> None:
    """Print the baseline and every installed peer's per-step overhead."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=50, help="timed runs per peer")
    parser.add_argument("--steps", type=int, default=20, help="steps per run")
    parser.add_argument("--commits", type=int, default=2000, help="baseline commits")
    args = parser.parse_args(argv)

    peers = available()
    print("peers:", ", ".join(f"{k}={v or 'missing'}" for k, v in peers.items()))
    print(f"workload: {args.runs} runs x {args.steps} no-op steps")

    with tempfile.TemporaryDirectory(prefix="perdure-bench-") as d:
        print(_line("sqlite commit (baseline)", sqlite_commit_us(Path(d), args.commits)))

    if peers["langgraph"] and peers["langgraph-checkpoint-sqlite"]:
        with tempfile.TemporaryDirectory(prefix="perdure-bench-") as d:
            pragmas = sqlite_saver_pragmas(Path(d))
        print(f"  SqliteSaver pragmas: {pragmas}")
        for mode in DURABILITY_MODES:
            with tempfile.TemporaryDirectory(prefix="perdure-bench-") as d:
                us = langgraph_step_us(Path(d), mode, args.runs, args.steps)
            print(_line(f"langgraph durability={mode}", us))
    else:
        print("langgraph: not installed")

    if peers["dbos"]:
        with tempfile.TemporaryDirectory(prefix="perdure-bench-") as d:
            print(_line("dbos (sqlite)", dbos_step_us(Path(d), args.runs, args.steps)))
    else:
        print("dbos: not installed")


if __name__ == "__main__":
    main()
