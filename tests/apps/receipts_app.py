"""A workflow whose provider hands out a fresh id on every call, as real providers do.

``pay`` charges a ledger through ``ctx.effect`` (idempotent by the effect's key, with a
reconciler that finds a charge by its key and a retry policy); each new charge gets a new
random receipt id (``ch_…``), which the run's result carries. A drill's run therefore never has
the reference's receipt, although it charged exactly once.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perdure import Context, RetryPolicy, Workflow, done, step
from perdure.core.effects import Reconciled
from perdure.core.workflow import Outcome


@dataclass
class Order:
    ledger: str = "ledger.jsonl"
    amount: int = 40


class Ledger:
    """Charges kept one JSON line each in a file: ``charge`` once per key, ``find`` by key."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)

    def find(self, key: str) -> dict[str, Any] | None:
        if not self.path.exists():
            return None
        for line in self.path.read_text().splitlines():
            entry: dict[str, Any] = json.loads(line)
            if entry["key"] == key:
                return entry
        return None

    def charge(self, amount: int, key: str) -> dict[str, Any]:
        found = self.find(key)
        if found is not None:
            return found
        entry = {"key": key, "amount": amount, "receipt": f"ch_{uuid.uuid4().hex}"}
        with self.path.open("a") as out:
            out.write(json.dumps(entry) + "\n")
        return entry


@step
def pay(ctx: Context, o: Order) -> Outcome:
    ledger = Ledger(o.ledger)

    def find(request: Any, key: str) -> Reconciled:
        found = ledger.find(key)
        return Reconciled.not_found() if found is None else Reconciled.confirmed(found)

    charged = ctx.effect(
        "charge",
        target="ledger",
        operation="charge",
        request={"amount": o.amount},
        execute=lambda req, key: ledger.charge(req["amount"], key),
        reconcile=find,
        retry=RetryPolicy(),
    )
    return done({"charged": charged["amount"], "receipt": charged["receipt"]})


receipts = Workflow("receipts", state=Order, steps=[pay])
