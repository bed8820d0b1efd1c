"""Closing a saver while LangGraph still writes through it: a cancelled async run leaves its
checkpoint writes running in worker threads, and the close waits for them instead of closing a
connection under them (on SQLite that crashed the process)."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.checkpoint.base import empty_checkpoint

from perdure import Runtime
from perdure.langgraph import AsyncPerdureSaver, PerdureSaver
from perdure.langgraph.closed import SaverClosedError
from tests.conftest import ROOT, cli_env
from tests.crash.test_crash_resume import wait_for

ROUNDS = 60
"""Rounds of cancel-then-close per process; before the close waited, 3 of 4 such processes
died of SIGSEGV on a 2-core machine."""


def test_a_cancelled_streamed_run_and_a_close_at_once_never_crash_the_process(
    tmp_path: Path,
) -> None:
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.langgraph.cancelled_stream",
                f"sqlite:///{tmp_path / f'graph{i}.db'}",
                str(ROUNDS),
            ],
            cwd=ROOT,
            env=cli_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode != -signal.SIGSEGV, "the process crashed (SIGSEGV)"
        assert proc.returncode == 0, err[-2000:]
        assert out.strip() == f"survived {ROUNDS}"


@contextmanager
def write_lock_taken(graph_url: str) -> Iterator[Callable[[], None]]:
    """Another connection holds the lock a checkpoint write needs, until the function it
    yields is called (or the block ends): the saver's write waits in the database."""
    if graph_url.startswith("sqlite:///"):
        lite = sqlite3.connect(
            graph_url.removeprefix("sqlite:///"), isolation_level=None, check_same_thread=False
        )
        lite.execute("BEGIN IMMEDIATE")

        def release() -> None:
            lite.execute("COMMIT")

        try:
            yield release
        finally:
            if lite.in_transaction:
                lite.execute("COMMIT")
            lite.close()
        return
    with psycopg.connect(graph_url) as pg:
        pg.execute("LOCK TABLE perdure.graph_checkpoints IN EXCLUSIVE MODE")
        yield pg.commit
        pg.commit()


def a_checkpoint() -> tuple[Any, Any]:
    config = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    return config, empty_checkpoint()


def test_close_waits_for_a_write_a_cancelled_run_left_in_flight(graph_url: str) -> None:
    config, checkpoint = a_checkpoint()
    seen: list[str] = []
    with PerdureSaver.from_conn_string(graph_url) as first:
        first.setup()

    async def cancel_then_close() -> None:
        with write_lock_taken(graph_url) as release:
            async with AsyncPerdureSaver.from_conn_string(graph_url) as saver:
                put = asyncio.create_task(saver.aput(config, checkpoint, {}, {}))
                await asyncio.to_thread(wait_for, lambda: saver.calls.running == 1)
                put.cancel()  # what LangGraph does to a cancelled run's write: the thread goes on

                def release_once_closing() -> None:
                    wait_for(lambda: saver.calls.closed)
                    with pytest.raises(SaverClosedError) as refused:
                        saver.get_tuple(config)
                    assert refused.value.code == "saver_closed"
                    seen.append(f"closing with {saver.calls.running} write in flight")
                    release()

                releaser = threading.Thread(target=release_once_closing)
                releaser.start()
            seen.append("closed")
            releaser.join()

    asyncio.run(cancel_then_close())
    assert seen == ["closing with 1 write in flight", "closed"]
    with Runtime(graph_url, migrate=False) as rt:
        stored = PerdureSaver(rt, renew=False).get_tuple(config)
    assert stored is not None and stored.checkpoint["id"] == checkpoint["id"], (
        "the write the close waited for committed"
    )


def test_a_closed_saver_refuses_calls_in_one_line_and_closing_again_is_harmless(
    graph_url: str,
) -> None:
    with PerdureSaver.from_conn_string(graph_url) as saver:
        saver.setup()
        config, checkpoint = a_checkpoint()
        saver.put(config, checkpoint, {}, {})
    with pytest.raises(SaverClosedError) as refused:
        saver.get_tuple(config)
    assert refused.value.one_line().startswith("error[saver_closed]: ")
    saver.close()
