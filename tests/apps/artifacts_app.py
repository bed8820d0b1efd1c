"""Workflows that keep big outputs as artifacts, for the artifact, history and retention tests.

``report``: ``make`` uploads a report (its bytes name the run's ``label`` and the env's
``ARTIFACTS_APP_SUFFIX``) and waits for signal ``go``; ``read`` reads it back and ends with its
size. ``big``: ``fill`` puts a 2 MB string in the state and a 5 MB tool output in the thread;
``check`` reads both back. ``pay``: ``plan``, then ``charge`` makes a payment effect and marks
savepoint ``paid``, then ``notify`` makes a notification effect, then ``finish``; every effect
call is appended to the file named by ``state.ledger``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perdure import Context, Workflow, done, goto, step, wait_for_signal
from perdure.core.artifacts import ArtifactRef
from perdure.core.fields import Lazy, derived, lazy
from perdure.core.workflow import Outcome

BIG_STATE = 2_000_000
BIG_MESSAGE = 5_000_000


@dataclass
class Report:
    label: str = "r"
    report: ArtifactRef | None = None
    size: int = 0


@step(next=["read"])
def make(ctx: Context, s: Report) -> Outcome:
    suffix = os.environ.get("ARTIFACTS_APP_SUFFIX", "")
    body = (f"report of {s.label}{suffix}\n" * 2000).encode()
    s.report = ctx.put_artifact(body, media_type="text/plain")
    return wait_for_signal("go", next="read")


@step
def read(ctx: Context, s: Report) -> Outcome:
    assert s.report is not None
    data = ctx.get_artifact(s.report)
    s.size = len(data)
    return done({"size": len(data), "first": data[:40].decode()})


report = Workflow("report", state=Report, steps=[make, read])


@dataclass
class Big:
    blob: str = ""
    notes: list[str] = field(default_factory=list)


@step(next=["check"])
def fill(ctx: Context, s: Big) -> Outcome:
    s.blob = "x" * BIG_STATE
    ctx.add_message("tool", "y" * BIG_MESSAGE, tool_call_id="call-1")
    return goto("check")


@step
def check(ctx: Context, s: Big) -> Outcome:
    tool = [m for m in ctx.messages if m.role == "tool"]
    return done({"blob": len(s.blob), "tool": len(tool[-1].content)})


big = Workflow("big", state=Big, steps=[fill, check])


@dataclass
class Payment:
    ledger: str = "ledger.txt"
    amount: int = 10
    note: str = ""


def _record(ledger: str, line: str) -> dict[str, Any]:
    with open(ledger, "a") as f:
        f.write(line + "\n")
    return {"line": line}


def calls(ledger: str) -> list[str]:
    """The effect calls the external systems received, in order."""
    path = Path(ledger)
    return path.read_text().splitlines() if path.exists() else []


@step(next=["charge"])
def plan(ctx: Context, s: Payment) -> Outcome:
    s.note = f"plan {s.amount}"
    return goto("charge")


@step(next=["notify"])
def charge(ctx: Context, s: Payment) -> Outcome:
    ctx.effect(
        "charge",
        target="bank",
        operation="pay",
        request={"amount": s.amount},
        execute=lambda req, key: _record(s.ledger, f"charge {req['amount']} {key}"),
    )
    ctx.savepoint("paid")
    s.note = f"paid {s.amount}"
    return goto("notify")


@step(next=["finish"])
def notify(ctx: Context, s: Payment) -> Outcome:
    ctx.effect(
        "notify",
        target="mail",
        operation="send",
        request={"text": s.note},
        execute=lambda req, key: _record(s.ledger, f"notify {req['text']} {key}"),
    )
    ctx.add_message("assistant", f"notified: {s.note}")
    return goto("finish")


@step
def finish(ctx: Context, s: Payment) -> Outcome:
    return done({"note": s.note})


pay = Workflow("pay", state=Payment, steps=[plan, charge, notify, finish])


def index_of(s: Any) -> dict[str, str]:
    return {"q": s.question.upper()}


@dataclass
class Rag:
    question: str = ""
    read_cache: bool = True
    cache: Lazy[dict[str, Any]] = lazy()  # noqa: RUF009 (a dataclasses.field)
    index: dict[str, str] | None = derived(index_of)  # noqa: RUF009


@step(next=["use"])
def load(ctx: Context, s: Rag) -> Outcome:
    s.question = "why"
    s.cache.set({"docs": ["d1", "d2", "d3"]})
    s.index = {"q": "written by the step, never stored"}
    return wait_for_signal("go", next="use")


@step
def use(ctx: Context, s: Rag) -> Outcome:
    docs = len(s.cache.value["docs"]) if s.read_cache else None
    return done({"index": s.index, "docs": docs})


rag = Workflow("rag", state=Rag, steps=[load, use])


@step(next=["aread"])
async def amake(ctx: Context, s: Report) -> Outcome:
    s.report = await ctx.aput_artifact(f"async {s.label}".encode(), media_type="text/plain")
    return goto("aread")


@step
async def aread(ctx: Context, s: Report) -> Outcome:
    assert s.report is not None
    return done({"text": (await ctx.aget_artifact(s.report)).decode()})


areport = Workflow("areport", state=Report, steps=[amake, aread])
