"""The outbox file the framework test apps' ``send_email`` tools append to: one JSON line per
message given, duplicates included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def sent(outbox: str | Path) -> list[dict[str, Any]]:
    """Every message the outbox was given."""
    path = Path(outbox)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]
