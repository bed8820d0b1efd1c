"""Runs whose boundaries commit in groups, for the group-commit crash test.

``python -m tests.apps.group_app start DB LEDGER`` starts ``RUNS`` runs of ``tally`` and advances
them with a worker holding all of them at once, so their commits share transactions;
``python -m tests.apps.group_app resume DB`` advances whatever is left. Each of a run's ``STEPS``
steps first prints ``ACK <run> <n>`` (its ``n`` earlier steps were acknowledged as durable, or
this step would not run) and then makes one effect that appends ``<run> <n>`` to the ``LEDGER``
file, which never deduplicates. The test crashes the process inside a group commit
(``PERDURE_CRASH_AT=group_begin:N`` or ``group_durable:N``) or SIGKILLs it, then checks what is
stored against what was acknowledged.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from perdure import Context, Runtime, Workflow, done, goto, step
from perdure.core.workflow import Outcome
from perdure.runtime.grouping import GroupCommit
from perdure.runtime.worker import Worker

RUNS = 6
STEPS = 8


@dataclass
class Tally:
    n: int = 0
    ledger: str = ""


def append(path: str, line: str) -> Any:
    def execute(request: Any, key: str) -> Any:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{line}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return {"line": line}

    return execute


@step(next=["bump"])
def bump(ctx: Context, state: Tally) -> Outcome:
    os.write(1, f"ACK {ctx.run_id} {state.n}\n".encode())  # one write: lines never interleave
    line = f"{ctx.run_id} {state.n}"
    ctx.effect(
        f"append-{state.n}",
        target="ledger",
        operation="append",
        request={"line": line},
        execute=append(state.ledger, line),
    )
    state.n += 1
    return goto("bump") if state.n < STEPS else done()


tally = Workflow("tally", state=Tally, steps=[bump])


def main(argv: list[str]) -> int:
    verb, db = argv[0], argv[1]
    # every run's commit waits (up to half a second) for the others, so the groups are full
    grouping = GroupCommit(max_batch=RUNS, max_wait=0.5)
    with Runtime(db, workflows=[tally], group_commit=grouping) as rt:
        if verb == "start":
            for _ in range(RUNS):
                rt.start(tally, Tally(ledger=argv[2]))
        Worker(rt, concurrency=RUNS, poll_interval=0.01).run(until_idle=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
