"""A two-step workflow for memory crash tests.

``note`` logs ``ENTER note RUN_ID`` to the file named by ``COUNTING_LOG``, reads the visits
counted in memory under ``("user", "u1")``, writes one more and keeps the number in its state,
and puts a fact indexed for semantic search (``tests.embeddings``); ``finish`` ends the run with
what the state and memory say and how many facts a semantic search scores. A write committed
twice would count two visits.
"""

from __future__ import annotations

from dataclasses import dataclass

from perdure import Context, MemoryIndex, Workflow, done, goto, step
from tests.apps.counting import log
from tests.embeddings import DIMS, embed

USER = ("user", "u1")
FACTS = MemoryIndex(embed=embed, dims=DIMS, fields=("text",))


@dataclass
class Visit:
    visits: int = 0


@step(next=["finish"])
def note(ctx: Context, state: Visit):  # type: ignore[no-untyped-def]
    log(f"ENTER note {ctx.run_id}")
    item = ctx.memory.get(USER, "visits")
    state.visits = (item.value if item is not None else 0) + 1
    ctx.memory.put(USER, "visits", state.visits)
    ctx.memory.put(USER, "fact", {"text": "likes tea and a cat"}, index=FACTS)
    return goto("finish")


@step
def finish(ctx: Context, state: Visit):  # type: ignore[no-untyped-def]
    item = ctx.memory.get(USER, "visits")
    assert item is not None
    hits = ctx.memory.search(USER, query="tea", index=FACTS)
    scored = [h.key for h in hits if h.score is not None]
    return done(
        {"state": state.visits, "memory": item.value, "version": item.version, "scored": scored}
    )


remember = Workflow("remember", state=Visit, steps=[note, finish])
