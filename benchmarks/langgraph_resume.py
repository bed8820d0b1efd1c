"""Is a person's approval kept when the process answering it dies? And is the tool called once?

The graph is the LangGraph demo's agent (``perdure.demos.graph_agent``): a scripted model asks
to pay an invoice, a person approves (``interrupt``), the ``pay`` tool pays through a provider
that keeps every payment (no deduplication). Each leg, on a fresh thread:

1. this process runs the graph to the approval (``graph.invoke(input)``);
2. a new process answers it — ``graph.invoke(Command(resume="yes"), config)`` (entry
   ``plain``), ``perdure.langgraph.resume(graph, "yes", config)`` (``resume``), or the plain
   call inside ``saver.hold`` (``held``) — and dies: at a crash point with ``os._exit``
   (``approved``: just after ``interrupt()`` returned; ``after_call``: just after the provider
   took the payment), or by SIGKILL at a random instant of the call (``random``, uniform over
   1.5 times the call's own duration, measured first);
3. this process continues the thread with ``graph.invoke(None, config)``. If the graph asks
   again although the dead process had acted on the answer, the decision was **lost**; it is
   approved again so the leg ends, and the provider's payments are counted.

Dimensions: ``--savers`` (``perdure``: ``PerdureSaver`` with ``invoke``, ``perdure-async``:
``AsyncPerdureSaver`` with ``ainvoke``, and LangGraph's own ``sqlite``/``sqlite-async``),
``--dbs`` (``sqlite``, ``postgres`` with ``PERDURE_TEST_PG_DSN``), ``--durability``
(``sync``, ``async``), ``--entries``, ``--points``, ``--approval`` (``tool``: asked inside the
tool, so the interrupted node pays; ``node``: an approve node before the tool node),
``--tools`` (``plain`` LangChain tool or perdure ``effect`` tool), ``--reps``.

Prints one row per combination: lost/legs, payments/legs (1 per leg is exactly once), model
calls per leg. ``python benchmarks/langgraph_resume.py --reps 20``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FORK = True
"""Fork the answering process from this one (``--spawn``: a new interpreter each time)."""


@dataclass(frozen=True)
class Leg:
    """One combination, and where its thread keeps its files."""

    saver: str
    db: str
    url: str
    durability: str
    entry: str
    point: str
    approval: str
    tool: str
    thread: str
    folder: str

    @property
    def ledger(self) -> str:
        return f"{self.folder}/{self.thread}.ledger.db"

    @property
    def calls(self) -> str:
        return f"{self.folder}/{self.thread}.calls"


# -- one action on a leg's thread (this process or a child) --------------------------------------


@contextmanager
def opened(leg: Leg) -> Iterator[Any]:
    if leg.saver == "perdure":
        from perdure.langgraph import PerdureSaver

        with PerdureSaver.from_conn_string(leg.url) as saver:
            yield saver
    elif leg.saver == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(leg.url.removeprefix("sqlite:///")) as saver:
            yield saver
    else:
        raise ValueError(leg.saver)


async def aopened(leg: Leg) -> Any:
    if leg.saver == "perdure-async":
        from perdure.langgraph import AsyncPerdureSaver

        return AsyncPerdureSaver.from_conn_string(leg.url)
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    return AsyncSqliteSaver.from_conn_string(leg.url.removeprefix("sqlite:///"))


def act(leg: Leg, action: str) -> bool:
    """Run ``action`` (start, answer, continue, approve) on the leg's thread; True when the
    graph stopped at an approval."""
    from langchain_core.messages import HumanMessage
    from langgraph.types import Command

    from perdure.demos.graph_agent import QUESTION, build

    config: Any = {"configurable": {"thread_id": leg.thread}}
    payload: Any = {
        "start": {"messages": [HumanMessage(content=QUESTION)]},
        "answer": Command(resume="yes"),
        "continue": None,
        "approve": Command(resume="yes"),
    }[action]
    kw = {"durability": leg.durability}
    answering = action == "answer"

    def graph_on(saver: Any) -> Any:
        return build(
            saver,
            ledger=leg.ledger,
            calls=leg.calls,
            durable=leg.tool == "effect",
            approval=leg.approval,  # type: ignore[arg-type]
        )

    if not leg.saver.endswith("-async"):
        with opened(leg) as saver:
            graph = graph_on(saver)
            if answering:
                mark_begun()
            if answering and leg.entry == "resume":
                from perdure.langgraph import resume

                out = resume(graph, "yes", config, **kw)
            elif leg.entry == "held":  # every action holds: a dead holder is taken over
                with saver.hold(config) as held:
                    out = graph.invoke(payload, held, **kw)
            else:
                out = graph.invoke(payload, config, **kw)
            return bool(out.get("__interrupt__"))

    async def run() -> bool:
        async with await aopened(leg) as saver:
            graph = graph_on(saver)
            if answering:
                mark_begun()
            if answering and leg.entry == "resume":
                from perdure.langgraph import aresume

                out = await aresume(graph, "yes", config, **kw)
            elif leg.entry == "held":
                async with saver.ahold(config) as held:
                    out = await graph.ainvoke(payload, held, **kw)
            else:
                out = await graph.ainvoke(payload, config, **kw)
            return bool(out.get("__interrupt__"))

    return asyncio.run(run())


def mark_begun() -> None:
    """Tell the parent the answering call begins now (for random kills)."""
    mark = os.environ.get("LG_BEGUN")
    if mark:
        Path(mark).write_text(str(time.perf_counter()))


def child(spec: str) -> None:
    leg = Leg(**json.loads(spec))
    began = time.perf_counter()
    act(leg, "answer")
    print(json.dumps({"seconds": time.perf_counter() - began}), flush=True)


# -- the parent ----------------------------------------------------------------------------------


def answer_in_fork(leg: Leg, kill_after: float | None) -> tuple[int, float | None]:
    """The answering process forked from this warm one (no import time): it dies at its crash
    point (``os._exit``) or by SIGKILL; it holds no connection of ours (each action here
    opens and closes its own saver)."""
    begun = Path(leg.folder) / f"{leg.thread}.begun"
    os.environ["LG_BEGUN"] = str(begun)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the answering process
        log = os.open(f"{begun}.err", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(log, 2)
        code = 0
        try:
            from perdure.runtime.crashpoints import arm

            arm(f"{leg.point}:pay" if leg.point in ("approved", "after_call") else None)
            began = time.perf_counter()
            act(leg, "answer")
            Path(f"{begun}.took").write_text(str(time.perf_counter() - began))
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
        os._exit(code)
    if kill_after is not None:
        while not begun.exists():
            if os.waitpid(pid, os.WNOHANG) != (0, 0):
                raise RuntimeError("the answering process ended before it began")
            time.sleep(0.001)
        time.sleep(kill_after)
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 75, -signal.SIGKILL):
        raise RuntimeError(f"answering process failed ({code})")
    took = Path(f"{begun}.took")
    return code, float(took.read_text()) if code == 0 and took.exists() else None


def answer_in_child(leg: Leg, kill_after: float | None) -> tuple[int, float | None]:
    if FORK:
        return answer_in_fork(leg, kill_after)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("PERDURE_CRASH_AT", None)
    if leg.point in ("approved", "after_call"):
        env["PERDURE_CRASH_AT"] = f"{leg.point}:pay"
    begun = Path(leg.folder) / f"{leg.thread}.begun"
    env["LG_BEGUN"] = str(begun)
    cmd = [sys.executable, __file__, "--child", json.dumps(asdict(leg))]
    proc = subprocess.Popen(
        cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    if kill_after is not None:
        while not begun.exists() and proc.poll() is None:
            time.sleep(0.001)
        time.sleep(kill_after)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    if proc.returncode not in (0, 75, -signal.SIGKILL):
        raise RuntimeError(f"answering process failed ({proc.returncode}): {err[-2000:]}")
    seconds = None
    if proc.returncode == 0 and out.strip():
        seconds = float(json.loads(out.strip().splitlines()[-1])["seconds"])
    return proc.returncode, seconds


def one_leg(leg: Leg, window: float | None) -> dict[str, Any]:
    from perdure.demos.graph_agent import counts, payments

    assert act(leg, "start"), "the graph asks for an approval"
    kill_after = None if window is None else random.uniform(0, window)
    code, _ = answer_in_child(leg, kill_after)
    acted = counts(leg.calls).get("approved", 0) > 0
    asked_again = act(leg, "continue")
    approvals = 0
    while asked_again and approvals < 3:
        approvals += 1
        asked_again = act(leg, "approve")
    return {
        "crashed": code != 0,
        "lost": acted and approvals > 0,
        "payments": payments(leg.ledger),
        "model": counts(leg.calls).get("model", 0),
    }


def calibrate(base: dict[str, Any]) -> float:
    """The answering call's own duration, uncrashed (median of 3), for random kills."""
    seconds = []
    for _ in range(3):
        leg = Leg(**{**base, "point": "none", "thread": f"cal-{uuid.uuid4().hex[:8]}"})
        assert act(leg, "start")
        _, took = answer_in_child(leg, None)
        seconds.append(took or 0.05)
    return sorted(seconds)[1]


@contextmanager
def database(db: str, folder: str, saver: str) -> Iterator[str]:
    if db == "sqlite":
        url = f"sqlite:///{folder}/{saver}-{uuid.uuid4().hex[:6]}.db"
        if saver.startswith("perdure"):
            from perdure.langgraph import PerdureSaver

            with PerdureSaver.from_conn_string(url) as s:
                s.setup()
        else:
            from langgraph.checkpoint.sqlite import SqliteSaver

            with SqliteSaver.from_conn_string(url.removeprefix("sqlite:///")) as s:
                s.setup()
        yield url
        return
    import psycopg

    dsn = os.environ["PERDURE_TEST_PG_DSN"]
    name = f"lgbench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = dsn.rsplit("/", 1)[0] + "/" + name
    try:
        from perdure.langgraph import PerdureSaver

        with PerdureSaver.from_conn_string(url) as s:
            s.setup()
        yield url
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--savers", default="perdure,perdure-async,sqlite,sqlite-async")
    parser.add_argument("--dbs", default="sqlite,postgres")
    parser.add_argument("--durability", default="sync,async")
    parser.add_argument("--entries", default="plain,resume")
    parser.add_argument("--points", default="approved,after_call,random")
    parser.add_argument("--approval", default="tool,node")
    parser.add_argument("--tools", default="plain,effect")
    parser.add_argument("--spawn", action="store_true", help="a new interpreter per answer")
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    global FORK  # noqa: PLW0603 (one process-wide setting)
    FORK = not args.spawn
    split = lambda s: [x for x in s.split(",") if x]  # noqa: E731
    dbs = [d for d in split(args.dbs) if d == "sqlite" or os.environ.get("PERDURE_TEST_PG_DSN")]
    header = (
        f"{'approval':8} {'tool':6} {'saver':13} {'db':8} {'durab.':6} {'entry':6} "
        f"{'point':10} {'lost':>7} {'payments':>9} {'model/leg':>9}"
    )
    print(header, flush=True)
    with tempfile.TemporaryDirectory(prefix="lg-resume-") as folder:
        for approval, tool, saver, db in itertools.product(
            split(args.approval), split(args.tools), split(args.savers), dbs
        ):
            if not saver.startswith("perdure") and (db != "sqlite" or tool != "plain"):
                continue  # LangGraph's own savers: SQLite, plain tools only
            with database(db, folder, saver) as url:
                for durability, entry, point in itertools.product(
                    split(args.durability), split(args.entries), split(args.points)
                ):
                    if entry != "plain" and not saver.startswith("perdure"):
                        continue
                    base = {
                        "saver": saver,
                        "db": db,
                        "url": url,
                        "durability": durability,
                        "entry": entry,
                        "point": point,
                        "approval": approval,
                        "tool": tool,
                        "folder": folder,
                    }
                    window = 1.5 * calibrate(base) if point == "random" else None
                    rows = [
                        one_leg(Leg(**base, thread=f"t-{uuid.uuid4().hex[:10]}"), window)
                        for _ in range(args.reps)
                    ]
                    lost = sum(r["lost"] for r in rows)
                    paid = sum(r["payments"] for r in rows)
                    model = sum(r["model"] for r in rows) / len(rows)
                    print(
                        f"{approval:8} {tool:6} {saver:13} {db:8} {durability:6} {entry:6} "
                        f"{point:10} {lost:>3}/{len(rows):<3} {paid:>4}/{len(rows):<4} "
                        f"{model:>9.1f}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
