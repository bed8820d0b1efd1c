"""The workflow of ``respawn.py``: its first step SIGKILLs its process the first time it runs
(no file named by ``RESPAWN_MARKER`` yet), writing ``kill <time>`` first, and ``again <time>``
when it runs again, to the file named by ``RESPAWN_TIMES``."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from perdure import Context, Workflow, done
from perdure.core.workflow import Outcome, StepDef


@dataclass
class Plain:
    n: int = 0


def note(word: str) -> None:
    with open(os.environ["RESPAWN_TIMES"], "a", encoding="utf-8") as f:
        f.write(f"{word} {time.time()!r}\n")


def fragile(ctx: Context, state: Plain) -> Outcome:
    marker = Path(os.environ["RESPAWN_MARKER"])
    if not marker.exists():
        marker.touch()
        note("kill")
        os.kill(os.getpid(), signal.SIGKILL)
    note("again")
    return done()


respawn = Workflow("respawn", state=Plain, steps=[StepDef("fragile", fragile, frozenset())])
