"""The workflow of ``recovery_table.py``: a run whose state holds a list of documents of a given
size (``RECOVERY_MB``), then steps that each SIGKILL their process the first time they run.

``fill`` appends documents of about 250 KB of words (``RECOVERY_DOC_BYTES``) until the list
holds ``RECOVERY_MB`` megabytes: from the first of them the list is a field log, compacted by
the runtime as it grows, as a conversation or a retrieval cache would be. ``crash`` then runs
``RECOVERY_CRASHES`` times; the first time each one runs it writes ``kill <time>`` to the file
named by ``RECOVERY_TIMES`` and SIGKILLs its process; when it runs again (in the next process)
it writes ``again <time>`` and goes on to the next. With ``RECOVERY_MIN_AGE`` (seconds) a
process lets that much time pass after its first step before it kills itself, so that
``perdure worker --respawn`` restarts it at once (it pauses before restarting a worker that
died within a second of its start, which a crash loop would be). ``work`` is the hand-off's
workload: steps of ``RECOVERY_STEP_SECONDS`` each (standing in for a tool call), forever; the
first step a process runs writes ``first <pid> <time>``.
"""

from __future__ import annotations

import os
import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perdure import Context, Workflow, done, goto
from perdure.core.workflow import Outcome, StepDef

_rng = random.Random(3)
WORDS = [
    "".join(_rng.choices("etaoinshrdlucmfwypvbgkqjxz", k=_rng.randint(2, 9))) for _ in range(5000)
]
_seen: list[int] = []
_born: list[float] = []


def note(word: str) -> None:
    with open(os.environ["RECOVERY_TIMES"], "a", encoding="utf-8") as f:
        f.write(f"{word} {time.time()!r}\n")


def document(n: int) -> dict[str, Any]:
    size = int(os.environ.get("RECOVERY_DOC_BYTES", "250000"))
    rng = random.Random(n)
    text = " ".join(rng.choices(WORDS, k=size // 6))
    return {"role": "tool", "n": n, "content": text}


@dataclass
class Session:
    docs: list[dict[str, Any]] = field(default_factory=list)
    size: int = 0
    crashes: int = 0
    steps: int = 0


def fill(ctx: Context, s: Session) -> Outcome:
    target = float(os.environ.get("RECOVERY_MB", "1")) * 1_000_000
    doc = document(len(s.docs))
    s.docs.append(doc)
    s.size += len(doc["content"]) + 40
    if s.size < target:
        return goto("fill")
    return goto("crash") if int(os.environ.get("RECOVERY_CRASHES", "0")) else goto("work")


def crash(ctx: Context, s: Session) -> Outcome:
    if not _born:
        _born.append(time.monotonic())
    marker = Path(os.environ["RECOVERY_TIMES"] + f".{s.crashes}")
    if not marker.exists():
        marker.touch()
        age = float(os.environ.get("RECOVERY_MIN_AGE", "0"))
        time.sleep(max(0.0, _born[0] + age - time.monotonic()))
        note("kill")
        os.kill(os.getpid(), signal.SIGKILL)
    note("again")
    s.crashes += 1
    return goto("crash") if s.crashes < int(os.environ["RECOVERY_CRASHES"]) else done(s.crashes)


def work(ctx: Context, s: Session) -> Outcome:
    if not _seen:
        _seen.append(os.getpid())
        with open(os.environ["RECOVERY_TIMES"], "a", encoding="utf-8") as f:
            f.write(f"first {os.getpid()} {time.time()!r}\n")
    time.sleep(float(os.environ.get("RECOVERY_STEP_SECONDS", "0.02")))
    s.steps += 1
    return goto("work")


session = Workflow(
    "session",
    state=Session,
    steps=[
        StepDef("fill", fill, frozenset({"fill", "crash", "work"})),
        StepDef("crash", crash, frozenset({"crash"})),
        StepDef("work", work, frozenset({"work"})),
    ],
)
