"""Logging set-up for workers and servers: the ``perdure`` logger in plain text or JSON lines.

Records of a run carry ``run_id``, ``tenant``, ``workflow``, ``step``, ``attempt`` and ``fence``
(see :mod:`perdure.runtime.telemetry`); the JSON format writes them as top-level keys.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import orjson

FIELDS = ("run_id", "tenant", "workflow", "step", "attempt", "fence", "outcome")


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the run's fields."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON line."""
        out: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in FIELDS:
            value = record.__dict__.get(name)
            if value is not None:
                out[name] = value
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return orjson.dumps(out, default=str).decode()


class TextFormatter(logging.Formatter):
    """``time level logger: message [run_id=… step=… …]``."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of text."""
        base = super().format(record)
        extra = " ".join(
            f"{n}={record.__dict__[n]}" for n in FIELDS if record.__dict__.get(n) is not None
        )
        return f"{base} [{extra}]" if extra else base


def configure(fmt: str = "text", level: str | int = "INFO") -> None:
    """Send the ``perdure`` logger to stderr in ``text`` or ``json``."""
    handler = logging.StreamHandler()
    handler.setFormatter(
        JsonFormatter()
        if fmt == "json"
        else TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger("perdure")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False
