"""The query parameters that list runs, shared by ``GET /v1/runs`` and the dashboard's run
list: ``status`` (repeatable), ``workflow``, ``thread``, ``since`` and ``until`` (ISO 8601; a
time without a zone is UTC, a date alone is its midnight UTC), ``q`` (text found in a run id,
thread id or idempotency key) and ``cursor`` (the ``next_cursor`` of the page before). An empty
parameter, as an HTML form sends for a field left blank, is no filter. Anything malformed is
:class:`InvalidInputError`: one line with the parameter, the cause and the fix (a 400)."""

from __future__ import annotations

from datetime import UTC, datetime

from starlette.requests import Request

from perdure.core.errors import InvalidInputError
from perdure.core.ids import MAX_ID_LENGTH, checked_id, checked_text
from perdure.core.listing import MAX_CURSOR_LENGTH, RunFilter
from perdure.core.model import RunStatus


def given(request: Request, name: str, longest: int = MAX_ID_LENGTH) -> str | None:
    """A query parameter as text perdure accepts, or ``None`` when absent or empty."""
    raw = request.query_params.get(name)
    if not raw:
        return None
    return checked_text(raw, f"query parameter {name}", max_length=longest)


def moment(request: Request, name: str) -> datetime | None:
    """A time given as ISO 8601 (``2026-12-02``, ``2026-12-02T10:00``, with or without an
    offset; no offset is UTC)."""
    raw = given(request, name, 64)
    if raw is None:
        return None
    try:
        at = datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidInputError(
            f"query parameter {name}={raw!r} is not a time",
            fix=f"give {name} as ISO 8601, e.g. 2026-12-02T10:00:00Z",
        ) from None
    if at.tzinfo is None:
        return at.replace(tzinfo=UTC)
    try:
        return at.astimezone(UTC)
    except OverflowError:  # past the calendar's end (or before its start) once in UTC
        edge = datetime.max if at.year > 1 else datetime.min
        return edge.replace(tzinfo=UTC)


def run_filter(request: Request) -> RunFilter:
    """The runs a listing request asks for."""
    statuses: list[RunStatus] = []
    for raw in request.query_params.getlist("status"):
        if not raw:
            continue
        try:
            statuses.append(RunStatus(checked_text(raw, "query parameter status").upper()))
        except ValueError:
            raise InvalidInputError(
                f"query parameter status={raw[:40]!r} is not a run status",
                fix=f"use one of {', '.join(s.value for s in RunStatus)}",
            ) from None
    workflow, thread = given(request, "workflow"), given(request, "thread")
    return RunFilter(
        statuses=tuple(statuses),
        workflow=None if workflow is None else checked_id(workflow, "query parameter workflow"),
        thread=None if thread is None else checked_id(thread, "query parameter thread"),
        since=moment(request, "since"),
        until=moment(request, "until"),
        search=given(request, "q"),
    )


def number(request: Request, name: str, default: int, low: int, high: int) -> int:
    """A whole-number query parameter within bounds (absent or empty: ``default``)."""
    raw = request.query_params.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInputError(
            f"query parameter {name}={raw[:40]!r} is not a number",
            fix=f"give {name} as a whole number from {low} to {high}",
        ) from None
    if not low <= value <= high:
        raise InvalidInputError(
            f"query parameter {name}={value} is out of range",
            fix=f"give {name} from {low} to {high}",
        )
    return value


def cursor_of(request: Request) -> str | None:
    """The ``cursor`` parameter (checked when it is read: :meth:`RunCursor.parse`)."""
    return given(request, "cursor", MAX_CURSOR_LENGTH)
