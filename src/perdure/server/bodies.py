"""What the API's requests carry: one typed model per request body and per query, the single
source of what a request may say. :func:`parsed` and :func:`queried` validate a request
against them (a bad body or query is one ``invalid_input`` line naming the field), and
:mod:`perdure.server.openapi` writes the OpenAPI document from the same models.

Bodies are strict: a field of the wrong JSON type is refused rather than converted, and a
field the model does not name is refused (a misspelt field never passes silently). Queries
arrive as text, so their numbers and booleans are read from it."""

from __future__ import annotations

import re
from typing import Annotated, Any, TypeVar, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from starlette.requests import Request

from perdure.core.effects import EffectStatus
from perdure.core.errors import InvalidInputError
from perdure.core.ids import MAX_ID_LENGTH
from perdure.core.listing import CURSOR, MAX_CURSOR_LENGTH
from perdure.core.model import Durability, RunStatus
from perdure.core.threads import ThreadPolicy

M = TypeVar("M", bound=BaseModel)
ID = MAX_ID_LENGTH
"""The longest id or name a field takes (what the store takes)."""

TEXT = r"^[^\x00]*$"
"""Text perdure stores: no NUL character (PostgreSQL cannot store one, and the runtime refuses
it on every database). Every text field and parameter carries it, so the OpenAPI document
admits exactly what the server takes."""

ROLE = r"^[a-z][a-z0-9_.:-]{0,63}$"
"""A role name (see :func:`perdure.core.keys.checked_roles`)."""

POSITION = r"^[0-9]{1,18}$"
"""A stream position: digits, at most 18 of them."""

MOMENT = (
    r"^(?:|[1-9][0-9]{3}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
    r"(?:[T ](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{1,6})?)?"
    r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?)?)$"
)
"""A time a listing takes (empty: no filter): an ISO 8601 date (years 1000 to 9999),
optionally with a time of day and an offset (``2026-12-02``, ``2026-12-02T10:00``,
``2026-12-02T10:00:00.5+01:00``)."""


def any_case(words: list[str]) -> str:
    """A pattern of ``words`` in any case, or empty (``[Pp][Ee]...``: JSON Schema's regular
    expressions have no flag for case)."""
    spelled = (
        "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in word)
        for word in words
    )
    return "^(?:|" + "|".join(spelled) + ")$"


CURSOR_OR_EMPTY = "^(?:|" + CURSOR.removeprefix("^").removesuffix("$") + ")$"
"""A listing's cursor (:data:`perdure.core.listing.CURSOR`), or empty: the first page."""


def _whole(value: Any) -> Any:
    """A JSON number without a fraction (``300.0``) as the whole number it is: JSON Schema's
    ``integer`` admits it, so the server takes it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Whole = Annotated[int, BeforeValidator(_whole)]
"""A whole number, written with or without ``.0`` (not a string, not ``true``)."""
Role = Annotated[str, Field(pattern=ROLE)]
Status = Annotated[str, Field(pattern=any_case([s.value for s in RunStatus]))]
Text = Annotated[str, Field(pattern=TEXT)]


class Body(BaseModel):
    """A request body: a JSON object with exactly the fields its model names."""

    model_config = ConfigDict(strict=True, extra="forbid")


class Query(BaseModel):
    """A query string: its parameters as the model types them (others are ignored)."""

    model_config = ConfigDict(extra="ignore")


class ReleaseIds(Body):
    """The release ids a run records (each optional)."""

    code: str | None = Field(None, max_length=ID, pattern=TEXT, description="The code's release")
    prompt: str | None = Field(None, max_length=ID, pattern=TEXT, description="The prompt's")
    model: str | None = Field(None, max_length=ID, pattern=TEXT, description="The model's")
    tools: str | None = Field(None, max_length=ID, pattern=TEXT, description="The tools'")


class StartRun(Body):
    """Start a run of a loaded workflow."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"workflow": "refund", "input": {"amount": 40}}]}
    )
    workflow: str = Field(min_length=1, max_length=ID, description="A loaded workflow's name")
    input: Any = Field(None, description="The initial state: an object of the state's fields")
    thread: str | None = Field(
        None,
        min_length=1,
        max_length=ID,
        pattern=TEXT,
        description="The conversation the run belongs to (default: new)",
    )
    idempotency_key: str | None = Field(
        None,
        min_length=1,
        max_length=ID,
        pattern=TEXT,
        description="A repeat with the same key returns the first run (or the Idempotency-Key "
        "header)",
    )
    durability: Durability = Field(
        Durability.SYNC, description="When a step's commit is durable: sync, async or exit"
    )
    release: ReleaseIds | None = Field(
        None, description="Release ids recorded with the run: code, prompt, model, tools"
    )
    policy: ThreadPolicy | None = Field(
        None, description="What happens while the thread has an unfinished run"
    )


class CancelRun(Body):
    """Cancel a run at its next step boundary."""

    reason: str | None = Field(
        None, max_length=10_000, pattern=TEXT, description="Why (recorded; empty: who did it)"
    )
    request_id: str | None = Field(
        None,
        min_length=1,
        max_length=ID,
        pattern=TEXT,
        description="A repeat with the same id changes nothing",
    )


class AddBudget(Body):
    """More budget for a run: each limit is raised by the amount given."""

    steps: Annotated[int, Field(ge=0, le=10**12), BeforeValidator(_whole)] | None = None
    cost: float | None = Field(None, ge=0, le=1e15)
    tokens: Annotated[int, Field(ge=0, le=10**15), BeforeValidator(_whole)] | None = None


class ResumeRun(Body):
    """Hand a run that needs a person back to the workers."""

    at: str | None = Field(
        None, min_length=1, max_length=ID, pattern=TEXT, description="The step to run next"
    )
    patch: dict[str, Any] | None = Field(None, description="State fields to change first")
    add_budget: AddBudget | None = None


class FailRun(Body):
    """End a run that needs a person as FAILED."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"reason": "refund sent by hand"}]})
    reason: str = Field(min_length=1, max_length=10_000, pattern=TEXT, description="Why (recorded)")


class SendSignal(Body):
    """Deliver a signal to a run."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"name": "paid", "payload": {"amount": 40}}]}
    )
    name: str = Field(min_length=1, max_length=ID, pattern=TEXT, description="The signal's name")
    payload: Any = Field(None, description="Any JSON value the run receives")
    signal_id: str | None = Field(
        None,
        min_length=1,
        max_length=ID,
        pattern=TEXT,
        description="A repeat with the same id is a duplicate",
    )


class Decision(Body):
    """Approve or reject a run's pending request."""

    comment: str | None = Field(
        None, max_length=10_000, pattern=TEXT, description="Recorded with the decision"
    )
    request_id: str | None = Field(
        None,
        min_length=1,
        max_length=ID,
        pattern=TEXT,
        description="A repeat with the same id changes nothing",
    )


class ResolveEffect(Body):
    """Record whether an ambiguous effect happened."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"applied": True, "reason": "seen in the bank's log"}]}
    )
    applied: bool = Field(description="True: it happened; false: it did not")
    reason: str = Field(
        min_length=1, max_length=10_000, pattern=TEXT, description="Why you know (recorded)"
    )
    receipt: str | None = Field(
        None, max_length=10_000, pattern=TEXT, description="The provider's receipt"
    )
    result: Any = Field(None, description="The call's result, when it happened")
    request_id: str | None = Field(
        None,
        min_length=1,
        max_length=ID,
        pattern=TEXT,
        description="A repeat with the same id changes nothing",
    )


class NewKey(Body):
    """Make an API key of the tenant."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"name": "ci", "roles": ["approver"]}]}
    )
    name: str = Field(
        min_length=1, max_length=ID, pattern=TEXT, description="Who the key speaks for"
    )
    roles: list[Role] = Field(
        default_factory=list, max_length=64, description="Role names (admin, approver, ...)"
    )


class RunsQuery(Query):
    """``GET /v1/runs``."""

    status: list[Status] = Field(
        default_factory=list,
        description="Only these statuses (any case: pending, RUNNING, ...); may repeat",
    )
    workflow: str | None = Field(
        None, max_length=ID, pattern=TEXT, description="Only this workflow"
    )
    thread: str | None = Field(None, max_length=ID, pattern=TEXT, description="Only this thread")
    since: str | None = Field(
        None,
        pattern=MOMENT,
        description="Created at or after this time (ISO 8601; no zone: UTC)",
    )
    until: str | None = Field(
        None, pattern=MOMENT, description="Created before this time (ISO 8601; no zone: UTC)"
    )
    q: str | None = Field(
        None,
        max_length=ID,
        pattern=TEXT,
        description="Text found in the run id, thread id or idempotency key",
    )
    cursor: str | None = Field(
        None,
        max_length=MAX_CURSOR_LENGTH,
        pattern=CURSOR_OR_EMPTY,
        description="The next_cursor of the page before (absent: the newest runs)",
    )
    limit: int = Field(100, ge=1, le=10_000, description="At most this many")


class StreamQuery(Query):
    """A stream's starting position (a reconnect's ``Last-Event-ID`` header wins)."""

    after: int | None = Field(None, ge=0, le=10**18 - 1, description="Send what follows this id")
    token: str | None = Field(
        None,
        max_length=1000,
        pattern=TEXT,
        description="A stream token (POST /v1/stream-tokens) instead of the Authorization header",
    )


class EventsQuery(StreamQuery):
    """``GET /v1/events``."""

    type: list[Text] = Field(default_factory=list, description="Only events of these types")
    workflow: str | None = Field(None, pattern=TEXT, description="Only runs of this workflow")


class ApprovalsQuery(Query):
    """``GET /v1/approvals``."""

    run_id: str | None = Field(None, pattern=TEXT, description="Only this run's")
    pending: bool = Field(True, description="false: decided ones too")


class EffectsQuery(Query):
    """``GET /v1/effects``."""

    run_id: str | None = Field(None, pattern=TEXT, description="Only this run's")
    status: list[EffectStatus] = Field(default_factory=list, description="Only these statuses")
    limit: int = Field(1000, ge=1, le=10_000, description="At most this many")


class StuckQuery(Query):
    """``GET /v1/stuck``."""

    threshold: int = Field(300, ge=0, le=10**7, description="Seconds without progress")


def _where(error: dict[str, Any]) -> str:
    return ".".join(str(part) for part in error["loc"]) or "the body"


def refusal(exc: ValidationError, what: str) -> InvalidInputError:
    """A validation failure as one ``invalid_input`` line: the first problem, the field it
    is in, and how many more there are."""
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    where = _where(dict(first))
    kind = first["type"]
    if kind == "extra_forbidden":
        message = f"{what} field {where!r} is not one this endpoint takes{more}"
    elif kind == "missing":
        message = f"{what} field {where!r} is required{more}"
    else:
        message = f"{what} field {where!r}: {first['msg'].lower()}{more}"
    return InvalidInputError(message, fix="see the operation's schema at /openapi.json or /docs")


def validated(model: type[M], found: dict[str, Any], what: str = "body") -> M:
    """``found`` (a query's text values) as ``model``, or :class:`InvalidInputError` (see
    :func:`refusal`)."""
    try:
        return model.model_validate(found)
    except ValidationError as exc:
        raise refusal(exc, what) from None


def decoded(model: type[M], raw: bytes) -> M:
    """A JSON body (already known to be a JSON object) as ``model``, validated strictly by
    JSON types, or :class:`InvalidInputError`."""
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError as exc:
        raise refusal(exc, "body") from None


def queried(request: Request, model: type[M]) -> M:
    """The request's query string as ``model`` (a parameter the model types as a list may
    repeat; any other takes its last value)."""
    params = request.query_params
    found: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name not in params:
            continue
        many = get_origin(info.annotation) is list
        found[name] = params.getlist(name) if many else params.getlist(name)[-1]
    return validated(model, found, "query")


class NewStreamToken(Body):
    """Mint a stream token: name one run (its events), one message (its token deltas), or
    neither (the tenant's feed of every run's events)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"run_id": "r_01jf6", "seconds": 300}],
            "not": {  # one stream per token: not a run and a message at once
                "required": ["run_id", "message_id"],
                "properties": {"run_id": {"type": "string"}, "message_id": {"type": "string"}},
            },
        }
    )
    run_id: str | None = Field(
        None, min_length=1, max_length=ID, pattern=TEXT, description="A run's events"
    )
    message_id: str | None = Field(
        None, min_length=1, max_length=ID, pattern=TEXT, description="A message's token deltas"
    )
    seconds: Whole = Field(
        300,
        ge=1,
        le=3600,
        description="How long the token opens its stream (an open stream lasts while the key does)",
    )
