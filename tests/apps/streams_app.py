"""Workflows for process-level tests of streams and of one writer per thread.

``streamer`` streams ``WORDS`` into the message named by its state's ``message``, two deltas per
write; with ``STREAM_HOLD_AFTER=N`` and ``STREAM_GATE=DIR`` it waits, after N deltas are stored,
at the gate ``DIR/stream`` (a lock file the test holds, see ``tests.conftest.Gates``) until the
test lets it go or kills the process. ``turn`` is three steps that log ``ENTER``/``EXIT`` lines
with the run id to ``TURN_LOG``, so a test can check that two runs of one thread never overlap.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass

from perdure import Context, Workflow, done, goto, step

WORDS = [f"word{i} " for i in range(40)]


@dataclass
class Streamed:
    message: str = "m1"


@step
def answer(ctx: Context, s: Streamed):  # type: ignore[no-untyped-def]
    sink = ctx.open_stream(s.message, batch=2, max_delay=None)  # batches of exactly two
    hold_after = int(os.environ.get("STREAM_HOLD_AFTER", "-1"))
    for i, word in enumerate(WORDS):
        if i == hold_after:
            with open(os.path.join(os.environ["STREAM_GATE"], "stream"), "a") as gate:
                fcntl.flock(gate, fcntl.LOCK_SH)
        sink.write(word)
    sink.finish()
    return done({"words": len(WORDS)})


streamer = Workflow("streamer", state=Streamed, steps=[answer])


@dataclass
class Turn:
    n: int = 0


def log(line: str) -> None:
    path = os.environ.get("TURN_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def make_turn_step(i: int):  # type: ignore[no-untyped-def]
    name = f"t{i}"

    @step(name=name, next=[f"t{i + 1}"] if i < 3 else [])
    def run(ctx: Context, s: Turn):  # type: ignore[no-untyped-def]
        log(f"ENTER {ctx.run_id} {name} {os.getpid()}")
        s.n += 1
        log(f"EXIT {ctx.run_id} {name} {os.getpid()}")
        return goto(f"t{i + 1}") if i < 3 else done({"n": s.n})

    return run


turn = Workflow("turn", state=Turn, steps=[make_turn_step(i) for i in (1, 2, 3)])
