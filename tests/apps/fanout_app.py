"""A supervisor that spawns three researcher children and runs two parallel branches, for the
process-level tests. Every external call writes to a ledger file (``FANOUT_DIR/ledger``): a
``start`` line when the call begins, a ``done`` line when it takes effect, with the effect key
and the pid. A call whose request says ``gated`` first waits for a shared lock on
``FANOUT_DIR/gate`` (the test holds it exclusively until it opens the gate; a killed process
simply lets go of its wait). Reconcilers read the ledger: a key with a ``done`` line was made."""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perdure import Context, Workflow, done, step
from perdure.core.effects import Reconciled
from perdure.core.reducers import append
from perdure.core.workflow import wait_for_children
from perdure.runtime.step.parallel import EffectCall


def _dir() -> Path:
    return Path(os.environ.get("FANOUT_DIR", "."))


def _log(kind: str, key: str, what: str) -> None:
    with open(_dir() / "ledger", "a") as f:
        f.write(f"{kind} {key} {what} {os.getpid()}\n")
        f.flush()


def ledger() -> list[list[str]]:
    """The ledger's lines, split (kind, key, what, pid)."""
    path = _dir() / "ledger"
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def call(request: Any, key: str) -> Any:
    _log("start", key, request["what"])
    if request.get("gated"):
        with open(_dir() / "gate", "a") as gate:
            fcntl.flock(gate, fcntl.LOCK_SH)
    _log("done", key, request["what"])
    return {"what": request["what"]}


def check(request: Any, key: str) -> Reconciled:
    made = any(row[0] == "done" and row[1] == key for row in ledger())
    return Reconciled.confirmed({"what": request["what"]}) if made else Reconciled.not_found()


@dataclass
class Topic:
    topic: str = ""
    gated: bool = False


@step(next=["write"])
def search(ctx: Context, s: Topic):  # type: ignore[no-untyped-def]
    request = {"what": f"search:{s.topic}", "gated": s.gated}
    ctx.effect("search", target="web", operation="get", request=request, execute=call,
               reconcile=check)  # fmt: skip
    from perdure import goto

    return goto("write")


@step
def write(ctx: Context, s: Topic):  # type: ignore[no-untyped-def]
    return done({"findings": [f"{s.topic}: found"]})


researcher = Workflow("researcher", state=Topic, steps=[search, write])


@dataclass
class Plan:
    topics: list[str] = field(default_factory=lambda: ["alpha", "beta", "gamma"])
    gated: bool = False
    findings: list[str] = field(default_factory=list)
    branches: dict[str, Any] = field(default_factory=dict)


@step(next=["combine"])
def plan(ctx: Context, s: Plan):  # type: ignore[no-untyped-def]
    for topic in s.topics:
        ctx.spawn(researcher, {"topic": topic, "gated": s.gated}, key=topic)
    found = ctx.parallel(
        {
            "b": EffectCall("lookup", "kb", "get", {"what": "kb:b", "gated": s.gated}, call, check),
            "a": EffectCall("lookup", "kb", "get", {"what": "kb:a"}, call, check),
        }
    )
    s.branches = {bid: r["what"] for bid, r in found.items()}
    return wait_for_children(on_done="combine")


@step
def combine(ctx: Context, s: Plan):  # type: ignore[no-untyped-def]
    merged = ctx.merge_children(s)
    statuses = {k: str(c.status) for k, c in ctx.children.items()}
    return done({"findings": merged.findings, "branches": s.branches, "children": statuses})


supervisor = Workflow(
    "supervisor", state=Plan, steps=[plan, combine], reducers={"findings": append}
)
WORKFLOWS = [supervisor, researcher]
