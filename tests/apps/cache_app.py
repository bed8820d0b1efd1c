"""A run with a rebuildable cache field, for the cache field tests and crash tests.

``fetch`` retrieves documents for the question and sets the ``docs`` cache; each of
``TURNS`` ``answer`` steps reads it. With ``Rag.wait`` the run waits for signal ``go`` after
``fetch`` (so a test can damage the stored cache in between). Every time the cache is rebuilt
(its stored value missing or unreadable), one line ``rebuilt <question>`` goes to the file
named by ``Rag.log``.

``python -m tests.apps.cache_app start DB LOG`` starts a run and advances it;
``python -m tests.apps.cache_app resume DB`` advances what is left.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from perdure import Context, Lazy, Runtime, Workflow, cache, done, goto, step, wait_for_signal
from perdure.core.workflow import Outcome
from perdure.runtime.worker import Worker

TURNS = 3


def retrieve(question: str) -> dict[str, Any]:
    """Stand-in for a retriever: the same documents for the same question."""
    return {"question": question, "docs": [f"document {i} about {question}" for i in range(20)]}


def rebuild(state: Rag) -> dict[str, Any]:
    if state.log:
        fd = os.open(state.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"rebuilt {state.question}\n".encode())
        finally:
            os.close(fd)
    return retrieve(state.question)


@dataclass
class Rag:
    question: str = "why"
    log: str = ""
    wait: bool = False
    fill: bool = True
    turns: int = 0
    seen: int = 0
    docs: Lazy[dict[str, Any]] = cache(rebuild=rebuild)  # noqa: RUF009 (a dataclasses.field)


@step(next=["answer"])
def fetch(ctx: Context, s: Rag) -> Outcome:
    if s.fill:
        s.docs.set(retrieve(s.question))
    return wait_for_signal("go", next="answer") if s.wait else goto("answer")


@step(next=["answer"])
def answer(ctx: Context, s: Rag) -> Outcome:
    s.seen += len(s.docs.value["docs"])
    s.turns += 1
    if s.turns < TURNS:
        return goto("answer")
    return done({"turns": s.turns, "seen": s.seen})


rag = Workflow("rag", state=Rag, steps=[fetch, answer])


def main(argv: list[str]) -> int:
    verb, db = argv[0], argv[1]
    with Runtime(db, workflows=[rag]) as rt:
        if verb == "start":
            rt.start(rag, Rag(log=argv[2]))
        Worker(rt, concurrency=1, poll_interval=0.01).run(until_idle=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
