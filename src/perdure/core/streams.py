"""Durable token streams: the deltas a streamed model call writes for one message, numbered.

A streamed reply has its message id fixed before generation. Each delta is stored with a sequence
number that grows across attempts and is never reused, so a reader can resume after any number it
has seen. When a crash cuts an attempt short, the next attempt first writes a ``superseded`` marker:
a reader sees explicitly that the draft so far is replaced.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

DEFAULT_BATCH = 32
"""Deltas per write when the step does not choose (see ``benchmarks/streams.py``)."""

DEFAULT_MAX_DELAY = 0.25
"""Seconds a delta may wait in the buffer before a later write flushes it (a slow model's
reader is not left a whole batch behind)."""


class StreamEventKind(StrEnum):
    """What one entry of a message's stream says."""

    DELTA = "delta"  # a piece of the reply's text
    SUPERSEDED = "superseded"  # the draft of an earlier attempt was cut; a new attempt follows
    FINISHED = "finished"  # the attempt completed; the message is whole


@dataclass(frozen=True, slots=True)
class StreamEntry:
    """One numbered entry of a message's durable stream."""

    message_id: str
    seq: int
    attempt: int
    kind: StreamEventKind
    text: str = ""


class StreamSink(Protocol):
    """Where a streamed model call writes its deltas, for one message and one attempt."""

    def write(self, text: str) -> None:
        """Append one delta (buffered; written in batches, not a transaction per token)."""
        ...

    def finish(self) -> None:
        """Flush what is buffered and record that the attempt completed."""
        ...
