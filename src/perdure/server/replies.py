"""What the API answers: one typed model per response body. The handlers write the shapes of
:mod:`perdure.core.shapes` (what ``perdure ... --json`` prints too); these models describe
them for the OpenAPI document, and the schemathesis test in ``tests/server/`` checks every
response against them on both databases."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from perdure.core.effects import EffectStatus
from perdure.core.model import RunStatus

Object = dict[str, Any]


class Reply(BaseModel):
    """A response body (a JSON object)."""

    model_config = ConfigDict(extra="forbid")


class Problem(Reply):
    """What went wrong, in one line."""

    code: str = Field(description="A stable snake_case code", examples=["run_not_found"])
    message: str = Field(description="The cause", examples=["run r_01 does not exist"])
    fix: str = Field(description="What to do about it", examples=["check the run id"])


class ErrorReply(Reply):
    """Every refusal and failure: ``{"error": {"code", "message", "fix"}}``."""

    error: Problem


class RunReply(Reply):
    """A run."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "run_id": "r_01jf6",
                    "tenant_id": "acme",
                    "thread_id": "r_01jf6",
                    "workflow": "refund",
                    "status": "PENDING",
                    "next_step": "plan",
                    "state_version": 1,
                    "fence": 0,
                    "owner": None,
                    "lease_until": None,
                    "release": {"workflow_version": 1, "state_schema": 1, "durability": "sync"},
                    "idempotency_key": None,
                    "steps_done": 0,
                    "result": None,
                    "error": None,
                    "waiting": None,
                    "budget": None,
                    "created_at": "2026-12-02T10:00:00+00:00",
                    "updated_at": "2026-12-02T10:00:00+00:00",
                }
            ]
        }
    )
    run_id: str
    tenant_id: str
    thread_id: str
    workflow: str
    status: RunStatus
    next_step: str | None
    state_version: int
    fence: int
    owner: str | None = Field(description="The worker holding its lease")
    lease_until: datetime | None
    release: Object = Field(description="The release manifest the run was started under")
    idempotency_key: str | None
    steps_done: int
    result: Any = Field(description="What the run returned (when SUCCEEDED)")
    error: Object | None = Field(description="Why it failed, needs a person or was cancelled")
    waiting: Object | None = Field(description="What it waits for")
    budget: Object | None = Field(description="Its limits and what it used")
    created_at: datetime
    updated_at: datetime


class StepReply(Reply):
    """A committed step."""

    seq: int
    name: str
    outcome: str
    fence: int
    next_step: str | None
    started_at: datetime | None
    finished_at: datetime | None


class EventReply(Reply):
    """An event of a run's history."""

    seq: int = Field(description="Its position in the store (an SSE stream's id)")
    type: str
    step: str | None
    fence: int | None
    data: Any
    at: datetime


class ApprovalReply(Reply):
    """An approval request and its decision."""

    id: int
    run_id: str
    step: str
    role: str
    request: Any
    status: str = Field(examples=["pending", "approved", "rejected"])
    on_approve: str
    on_reject: str
    decided_by: str | None
    comment: str | None
    requested_at: datetime
    decided_at: datetime | None


class EffectReply(Reply):
    """An effect: a side effect's record and where it is."""

    key: str
    run_id: str
    step: str
    name: str
    target: str
    operation: str
    status: EffectStatus
    attempts: int
    receipt: str | None
    result: Any
    last_error: Any
    request: Any
    request_hash: str
    resolution: Any
    updated_at: datetime


class RunDetail(RunReply):
    """A run with its state, steps, messages, effects, approvals and latest events."""

    state: Any = Field(description="The workflow state (null when unreadable)")
    state_error: str | None = Field(description="Why the state could not be read")
    completed_steps: list[str]
    steps: list[StepReply]
    messages: list[Object]
    effects: list[EffectReply]
    approvals: list[ApprovalReply]
    events: list[EventReply]


class RunList(Reply):
    """Runs, newest first, with the tenant's counts by status."""

    runs: list[RunReply]
    counts: dict[str, int]
    next_cursor: str | None = Field(description="Continue with ?cursor=this; null: the last page")


class StuckList(Reply):
    """RUNNING runs without progress."""

    runs: list[RunReply]
    threshold: int


class Runs(Reply):
    """Runs."""

    runs: list[RunReply]


class Signalled(Reply):
    """A delivered signal."""

    signal_id: str
    name: str
    outcome: str = Field(examples=["woke", "queued", "duplicate"])


class Approvals(Reply):
    """Approval requests."""

    approvals: list[ApprovalReply]


class Effects(Reply):
    """Effects."""

    effects: list[EffectReply]


class WorkerReply(Reply):
    """A worker of the fleet."""

    owner: str
    host: str
    pid: int
    concurrency: int
    runs_held: int
    started_at: datetime
    last_beat: datetime
    stopped_at: datetime | None
    live: bool


class Workers(Reply):
    """Workers."""

    workers: list[WorkerReply]


class Me(Reply):
    """Who a key speaks for."""

    tenant: str
    name: str
    roles: list[str]


class KeyReply(Reply):
    """An API key (never its secret)."""

    key_id: str
    tenant: str
    name: str
    roles: list[str]
    created_at: datetime
    revoked_at: datetime | None


class MadeKey(KeyReply):
    """A new API key, with its token (shown this once)."""

    token: str


class Keys(Reply):
    """API keys."""

    keys: list[KeyReply]


class StreamTokenReply(Reply):
    """A short-lived token that opens one stream, read-only."""

    token: str = Field(description="Pass as ?token= to the stream it names")
    scope: str = Field(examples=["run:r_01jf6", "message:m_01", "events"])
    expires_at: datetime
