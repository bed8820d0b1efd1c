"""Listing runs a page at a time: what a list asks for (:class:`RunFilter`), where the next page
starts (:class:`RunCursor`, an opaque token a client hands back) and a page of runs
(:class:`RunPage`).

Runs are listed newest first by ``(created_at, run_id)``, a key no two runs share, so a cursor
is stable: runs started after the first page was read never shift the pages that follow, and
no run is listed twice or skipped while paging."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from perdure.core.errors import InvalidInputError
from perdure.core.ids import MAX_ID_LENGTH, checked_id, checked_text
from perdure.core.model import Run, RunStatus

END_OF_TIME = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
"""Where a listing without a cursor starts (after every run)."""
MAX_CURSOR_LENGTH = 512
"""The longest cursor accepted (characters); a real one is well under 100."""
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CURSOR = rf"^[0-9]{{1,17}}:[^\x00]{{1,{MAX_ID_LENGTH}}}$"
"""What a cursor is: microseconds since 1970 (up to 17 digits: within the calendar) and a run
id. The OpenAPI document says the same."""


@dataclass(frozen=True, slots=True)
class RunCursor:
    """Where the next page of a listing starts: after the run created at ``created_at`` with
    id ``run_id`` (the last run of the page before)."""

    created_at: datetime
    run_id: str

    def token(self) -> str:
        """The cursor as a URL-safe token (what ``next_cursor`` carries; a client hands it
        back unchanged): the microseconds of ``created_at`` since 1970 and the run id,
        ``<micros>:<run_id>``, exactly what :data:`CURSOR` describes."""
        micros = (self.created_at - EPOCH) // timedelta(microseconds=1)
        return f"{micros}:{self.run_id}"

    @classmethod
    def of(cls, run: Run) -> RunCursor:
        """The cursor that continues after ``run``."""
        return cls(run.created_at, run.run_id)

    @classmethod
    def parse(cls, token: str) -> RunCursor:
        """The cursor a token names, or :class:`InvalidInputError` for anything that does not
        match :data:`CURSOR` (every token that matches is a cursor: a place in the listing)."""
        checked_text(token, "cursor", max_length=MAX_CURSOR_LENGTH)
        if not re.match(CURSOR, token):
            raise InvalidInputError(
                f"cursor {token[:40]!r} is not a cursor",
                fix="pass the next_cursor of the page before unchanged, or no cursor for the "
                "first page",
            )
        micros, run_id = token.split(":", 1)
        created_at = EPOCH + timedelta(microseconds=int(micros))
        return cls(created_at, checked_id(run_id, "cursor's run id"))


@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs a listing asks for: any of ``statuses`` (none: every status), one
    ``workflow``, one ``thread``, created in ``[since, until)``, and ``search``: text found in
    the run's id, its thread's id or its idempotency key (case-sensitive; empty: no search)."""

    statuses: tuple[RunStatus, ...] = ()
    workflow: str | None = None
    thread: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    search: str | None = None

    def __post_init__(self) -> None:
        for moment, name in ((self.since, "since"), (self.until, "until")):
            if moment is not None and moment.tzinfo is None:
                raise InvalidInputError(
                    f"{name} {moment.isoformat()} has no time zone",
                    fix=f"give {name} with its offset, e.g. 2026-12-02T10:00:00+00:00",
                )
        if self.search is not None:
            checked_text(self.search, "search", max_length=MAX_ID_LENGTH)


@dataclass(frozen=True, slots=True)
class RunPage:
    """One page of a listing, newest first, and the cursor of the next page (``None``: this
    was the last)."""

    runs: list[Run]
    next_cursor: str | None
