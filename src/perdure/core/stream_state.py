"""What the store knows of one message's durable stream, beside its entries
(:mod:`perdure.core.streams` holds the entry and sink types every surface shares)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """The head of one message's stream.

    ``attempt`` is the newest attempt (1 for the first); ``last_seq`` the highest sequence
    number written (entries are numbered from 1 and a number is never reused); ``finished`` is
    True once an attempt recorded ``finished`` (the message is whole and the stream takes no
    more writes); ``run_id`` is the run that streams it and ``run_ended`` whether that run is
    finished (a stream whose run ended unfinished will never finish).
    """

    tenant_id: str
    message_id: str
    run_id: str
    attempt: int
    last_seq: int
    finished: bool
    run_ended: bool


@dataclass(frozen=True, slots=True)
class StreamOpened:
    """What opening a new attempt of a message's stream found and did.

    ``attempt`` is the new attempt's number; ``superseded`` is True when an earlier attempt was
    unfinished and a ``superseded`` entry was written first; ``finished`` is True when the
    message was already whole (nothing was written and the attempt takes no writes).
    """

    attempt: int
    superseded: bool
    finished: bool
