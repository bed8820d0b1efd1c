"""The mail provider of the framework demos: it sends every message it is given (duplicates
included) and remembers the key each was sent under, so a reconciler can ask what it sent under
a key. A JSON-lines file; a second file tallies the requests a scripted model answered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class Mailbox:
    """An outbox file: :meth:`send` appends, :meth:`find` looks a key up, :meth:`sent` lists."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def send(self, to: str, body: str, key: str) -> str:
        """Deliver one message; return its provider id."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        number = len(self.sent()) + 1
        with self.path.open("a") as f:
            f.write(json.dumps({"id": f"mail-{number}", "key": key, "to": to, "body": body}))
            f.write("\n")
        return f"mail-{number}"

    def find(self, key: str) -> str | None:
        """The id of the message sent under ``key``, if any."""
        return next((m["id"] for m in self.sent() if m["key"] == key), None)

    def sent(self) -> list[dict[str, Any]]:
        """Every message delivered so far."""
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]


def tally(path: str | Path) -> int:
    """Count one more model request in the file at ``path``; return the count."""
    where = Path(path)
    where.parent.mkdir(parents=True, exist_ok=True)
    with where.open("a") as f:
        f.write("request\n")
    return requests(where)


def requests(path: str | Path) -> int:
    """How many model requests the file at ``path`` counted."""
    where = Path(path)
    return len(where.read_text().splitlines()) if where.exists() else 0
