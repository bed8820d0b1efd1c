"""A retrieval cache kept apart from the core state, against seed 003 §7's table: checkpoint
size, checkpoint write p50, recovery p50 and cache hits after a crash.

Workload: a 4.8 MB agent state — a 0.8 MB core (a dialog of ~3 KB messages, variables) and a
4 MB retrieval cache (400 documents of ~10 KB) — advanced by steps that each append one message
to the dialog; every eighth step retrieves again and replaces the cache. Three layouts:

* ``mixed``: the seed's mixed storage — the whole state in one field, rewritten by every step;
* ``typed``: perdure's typed state with the cache as a plain field (only changed fields are
  written; the cache goes to the artifact store when it changes, and is read on recovery);
* ``split``: the cache as ``cache(rebuild=retrieve)`` — written only when a step sets it, not
  read on recovery until a step asks for it, rebuilt when its stored copy is gone.

Per layout it prints the mean and median bytes written per checkpoint (state fields, field-log
tails and artifacts), the median wall time of a step boundary (the steps do no work of their
own: the time from one step's start to the next one's is the checkpoint), the median time to
recover a run (read its stored state and decode it into the typed state, as a new process does
when it claims the run), and after a crash (a new runtime on the same files) the share of runs whose
next read of the cache was a hit rather than a rebuild. The cache is stored durably with the
step that set it, so only a lost object store makes a miss (then it is rebuilt, and recorded:
tests/artifacts/test_cache_fields.py); real SIGKILLs of the same layout are in
tests/crash/test_cache_crash.py.

Run: ``python benchmarks/rag_split.py [--runs 10] [--steps 40] [--db sqlite,postgres]``.
Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres_overhead import database

from perdure import Context, Lazy, Runtime, Workflow, cache, done, goto, step, wait_for_signal
from perdure.core.workflow import Outcome

MESSAGE = "user asked about the refund policy; the agent cited the retrieved clauses. " * 40
DOC = "clause 4.2: refunds are issued within fourteen days of a valid request. " * 140
SEED = {  # seed 003 §7: mixed, split
    "size": ("4.8 MB", "0.8 MB core + 4.0 MB cache only when changed (-83%)"),
    "write": ("180 ms", "35 ms (-81%)"),
    "recovery": ("480 ms", "127 ms (-74%)"),
    "hit": ("100% (always stored)", "85% (re-retrieved when lost)"),
}


def retrieve(question: str, round: int) -> dict[str, Any]:
    return {"question": question, "round": round, "docs": [f"{i} {DOC}" for i in range(400)]}


def core(n: int) -> dict[str, Any]:
    return {
        "dialog": [f"{i} {MESSAGE}" for i in range(n)],
        "variables": {f"v{i}": {"value": i, "note": "x" * 100} for i in range(200)},
    }


class Trace:
    starts: ClassVar[list[float]] = []


def rebuild(state: Any) -> dict[str, Any]:
    return retrieve(state.question, state.turns // 8)


@dataclass
class Mixed:
    question: str = ""
    blob: dict[str, Any] = field(default_factory=dict)
    turns: int = 0
    until: int = 0


@dataclass
class Typed:
    question: str = ""
    dialog: list[str] = field(default_factory=list)
    variables: dict[str, Any] = field(default_factory=dict)
    docs: dict[str, Any] = field(default_factory=dict)
    turns: int = 0
    until: int = 0


@dataclass
class Split:
    question: str = ""
    dialog: list[str] = field(default_factory=list)
    variables: dict[str, Any] = field(default_factory=dict)
    docs: Lazy[dict[str, Any]] = cache(rebuild=rebuild)  # noqa: RUF009 (a dataclasses.field)
    turns: int = 0
    until: int = 0


def advance(s: Any) -> Outcome:
    s.turns += 1
    if s.turns == s.until:
        return wait_for_signal("go", next="read")
    return goto("turn")


@step(next=["turn", "read"])
def turn_mixed(ctx: Context, s: Mixed) -> Outcome:
    Trace.starts.append(time.perf_counter())
    s.blob["dialog"].append(f"{len(s.blob['dialog'])} {MESSAGE}")
    if s.turns % 8 == 0:
        s.blob["docs"] = retrieve(s.question, s.turns // 8)
    return advance(s)


@step(next=["turn", "read"])
def turn_typed(ctx: Context, s: Typed) -> Outcome:
    Trace.starts.append(time.perf_counter())
    s.dialog.append(f"{len(s.dialog)} {MESSAGE}")
    if s.turns % 8 == 0:
        s.docs = retrieve(s.question, s.turns // 8)
    return advance(s)


@step(next=["turn", "read"])
def turn_split(ctx: Context, s: Split) -> Outcome:
    Trace.starts.append(time.perf_counter())
    s.dialog.append(f"{len(s.dialog)} {MESSAGE}")
    if s.turns % 8 == 0:
        s.docs.set(retrieve(s.question, s.turns // 8))
    return advance(s)


@step
def read(ctx: Context, s: Any) -> Outcome:
    docs = s.blob["docs"] if isinstance(s, Mixed) else s.docs
    docs = docs.value if isinstance(docs, Lazy) else docs
    return done({"docs": len(docs["docs"])})


def workflow(layout: str) -> Workflow[Any]:
    turn = {"mixed": turn_mixed, "typed": turn_typed, "split": turn_split}[layout]
    state = {"mixed": Mixed, "typed": Typed, "split": Split}[layout]
    named = step(name="turn", next=["turn", "read"])(turn.fn)
    return Workflow(f"rag_{layout}", state=state, steps=[named, read])


def initial(layout: str, steps: int, question: str) -> Any:
    c = core(256)  # ~0.8 MB with the variables
    if layout == "mixed":
        return Mixed(question=question, blob={**c, "docs": {}}, until=steps)
    state_type = Typed if layout == "typed" else Split
    return state_type(question=question, dialog=c["dialog"], variables=c["variables"], until=steps)


class Written:
    """Counts the bytes step boundaries write: state fields and log tails in the database,
    offloaded values in the artifact store."""

    def __init__(self, rt: Runtime) -> None:
        self.per_boundary: list[int] = []
        self._uploaded = 0
        commit, put = rt.store.commit, rt.services.artifacts.put

        def counted_commit(*args: Any) -> int:
            for boundary in args[4]:
                size = sum(len(v) for v in boundary.state.values())
                size += sum(len(v) for v in boundary.appends.values())
                self.per_boundary.append(size + self._uploaded)
                self._uploaded = 0
            return commit(*args)

        def counted_put(*args: Any, **kwargs: Any) -> Any:
            ref, ref_id = put(*args, **kwargs)
            self._uploaded += ref.size
            return ref, ref_id

        rt.store.commit = counted_commit  # type: ignore[method-assign]
        rt.services.artifacts.put = counted_put  # type: ignore[method-assign]


@dataclass
class Result:
    size: float = 0.0
    size_p50: float = 0.0
    writes: list[float] = field(default_factory=list)
    recoveries: list[float] = field(default_factory=list)
    hit: float = 0.0


def measure(url: str, objects: Path, layout: str, runs: int, steps: int) -> Result:
    wf = workflow(layout)
    out = Result()
    with Runtime(url, workflows=[wf], artifacts=str(objects), group_commit=False) as rt:
        ids = []
        written = Written(rt)
        for k in range(runs):
            Trace.starts = []
            run = rt.start(wf, initial(layout, steps, f"refunds-{k}"))
            rt.run_until_idle()
            ids.append(run.run_id)
            out.writes += [b - a for a, b in pairwise(Trace.starts)]
        out.size = statistics.fmean(written.per_boundary)
        out.size_p50 = statistics.median(written.per_boundary)
        for run_id in ids:
            began = time.perf_counter()
            stored = rt.store.load_state("default", run_id)
            resolved = rt.services.artifacts.resolve_fields("default", stored, wf.codec.lazy)
            wf.codec.from_fields(resolved)
            out.recoveries.append(time.perf_counter() - began)
    # the crash: a new runtime on the same files reads each run's cache in its next step
    with Runtime(url, workflows=[wf], artifacts=str(objects), group_commit=False) as rt:
        for run_id in ids:
            rt.signal(run_id, "go")
        rt.run_until_idle()
        hits = 0
        for run_id in ids:
            events = rt.store.events("default", run_id, limit=10_000)
            missed = any(e.type == "cache_rebuilt" for e in events)
            hits += rt.get(run_id).result == {"docs": 400} and not missed
    out.hit = hits / len(ids)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--db", default="sqlite,postgres")
    dsn = os.environ.get("PERDURE_BENCH_PG_DSN") or os.environ.get("PERDURE_TEST_PG_DSN")
    parser.add_argument("--dsn", default=dsn)
    args = parser.parse_args()
    kinds = [k for k in args.db.split(",") if k == "sqlite" or args.dsn]
    print(
        f"4.8 MB state (0.8 MB core, 4 MB retrieval cache), {args.runs} runs x {args.steps} "
        "steps, the cache replaced every 8th step"
    )
    with tempfile.TemporaryDirectory(prefix="perdure-rag-") as tmp:
        folder = Path(tmp)
        for kind in kinds:
            print(
                f"\n{kind:<10}{'MB/ckpt':>9}{'MB p50':>8}{'write p50':>11}{'recovery p50':>14}"
                f"{'hit after crash':>17}"
            )
            for i, layout in enumerate(("mixed", "typed", "split")):
                with database(kind, folder, args.dsn, f"perdure_rag_{i}") as url:
                    objects = folder / f"{kind}-{layout}-objects"
                    r = measure(url, objects, layout, args.runs, args.steps)
                write = statistics.median(r.writes) * 1000
                recovery = statistics.median(r.recoveries) * 1000
                print(
                    f"{layout:<10}{r.size / 1e6:>9.2f}{r.size_p50 / 1e6:>8.3f}"
                    f"{write:>8.1f} ms{recovery:>11.1f} ms{r.hit:>17.0%}"
                )
        print("\nseed 003 §7 (mixed -> split):")
        for name, (mixed, split) in SEED.items():
            print(f"  {name:<10}{mixed:>24}  ->  {split}")


if __name__ == "__main__":
    main()
