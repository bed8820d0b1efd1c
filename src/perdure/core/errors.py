"""Typed errors with stable codes.

Every error perdure raises on purpose is a :class:`PerdureError`. Each subclass has a stable
``code`` (snake_case, safe to match on in scripts and alerts), a human ``message`` that names the
cause, and a ``fix`` that tells the reader what to do. The CLI prints exactly one line built from
these three parts.

Control-flow signals (a run being cancelled under a step) are not errors and live elsewhere.
"""

from __future__ import annotations


class PerdureError(Exception):
    """Root of every error perdure raises on purpose."""

    code: str = "perdure_error"
    fix: str = ""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if fix is not None:
            self.fix = fix

    def one_line(self) -> str:
        """The error as one line: ``error[code]: cause. fix: what to do``."""
        text = f"error[{self.code}]: {self.message}"
        return f"{text} (fix: {self.fix})" if self.fix else text


class DefinitionError(PerdureError):
    """A workflow definition is invalid (raised when the workflow is declared)."""

    code = "invalid_definition"
    fix = "correct the workflow declaration; it is checked when the module is imported"


class ConfigError(PerdureError):
    """A setting (database URL, app module, option value) is missing or malformed."""

    code = "invalid_config"


class InvalidInputError(PerdureError):
    """Input given by a caller (run input, JSON on the command line) is not acceptable."""

    code = "invalid_input"


class RunNotFoundError(PerdureError):
    """No run with this id exists for this tenant (other tenants' runs are never revealed)."""

    code = "run_not_found"
    fix = "check the run id and the tenant (`perdure runs` lists the runs you can see)"


class WorkflowNotFoundError(PerdureError):
    """A run names a workflow that the loaded code does not define."""

    code = "workflow_not_found"
    fix = "load the module that defines it with --app MODULE (or PERDURE_APP)"


class IllegalTransitionError(PerdureError):
    """A status change that the run state machine does not allow."""

    code = "illegal_transition"
    fix = (
        "this is a bug in the caller: only the transitions in perdure.core.transitions are allowed"
    )


class RunClosedError(PerdureError):
    """The run is in a terminal state (SUCCEEDED, FAILED, CANCELLED) and cannot change."""

    code = "run_closed"
    fix = "start a new run; a finished run is never reopened"


class RunStateError(PerdureError):
    """The run's status does not allow this verb now (resuming or failing a run that does not
    need a person, failing one whose confirmed effects must be compensated): a conflict with
    the run's state, not a bad request. Nothing was written."""

    code = "run_state_conflict"
    fix = "see the run's status with `perdure show RUN`"


class KeyNameTakenError(PerdureError):
    """The tenant already has a live API key of this name. Nothing was written."""

    code = "key_name_taken"
    fix = "pick another name, or revoke that key first (`perdure keys revoke`)"


class MethodNotAllowedError(PerdureError):
    """The API has this path, but not for this HTTP method; ``allow`` names the methods it
    has."""

    code = "method_not_allowed"

    def __init__(self, message: str, *, allow: tuple[str, ...], fix: str | None = None) -> None:
        super().__init__(message, fix=fix or f"use {', '.join(allow)} (see /openapi.json)")
        self.allow = allow


class PathNotFoundError(PerdureError):
    """No operation of the API has this path."""

    code = "path_not_found"
    fix = "see the API's paths at /openapi.json or /docs"


class LeaseLostError(PerdureError):
    """The caller's lease is gone: another owner claimed the run (its fence is higher).

    A worker that receives this must stop touching the run at once; nothing it tried to write
    was written.
    """

    code = "lease_lost"
    fix = "nothing to do: another worker owns the run now and continues it"


class StaleStateError(PerdureError):
    """The run's ``state_version`` moved on since the caller read it; nothing was written."""

    code = "stale_state"
    fix = "re-read the run and decide again"


class RunBusyError(PerdureError):
    """The run is leased by a live owner, so it cannot be claimed now."""

    code = "run_busy"
    fix = "wait for the current owner to finish or for its lease to expire"


class SchemaTooNewError(PerdureError):
    """The database was migrated by a newer perdure than this one."""

    code = "schema_too_new"
    fix = "upgrade perdure to the version that migrated this database; never downgrade a store"


class MigrationChecksumError(PerdureError):
    """An applied migration's recorded checksum differs from the file shipped with this code."""

    code = "migration_checksum_mismatch"
    fix = "never edit an applied migration; add a new numbered migration instead"


class StoreError(PerdureError):
    """The database failed in a way perdure cannot classify more precisely."""

    code = "store_error"
    fix = "check that the database is reachable and writable, then retry"


class StoreUnavailableError(StoreError):
    """The database is unreachable or busy for now (connection lost, server restarting, lock
    timeout). Nothing was decided: the same operation may be retried later."""

    code = "store_unavailable"
    fix = "wait for the database to come back; workers retry on their own"


class DecodeError(PerdureError):
    """Stored state or a payload cannot be decoded into the declared type."""

    code = "decode_error"
    fix = "repair the run's state or deploy code that can read it"


class EffectNotFoundError(PerdureError):
    """No effect with this key exists for this tenant."""

    code = "effect_not_found"
    fix = "check the key with `perdure effects` (keys look like tenant/workflow/run/1.step/name)"


class EffectStateError(PerdureError):
    """The effect is not in the status the change requires (someone else changed it first)."""

    code = "effect_state_changed"
    fix = "re-read the effect with `perdure effects --run RUN` and decide again"


class ApprovalStateError(PerdureError):
    """The run is not waiting for a decision (it was decided already, or never asked)."""

    code = "approval_not_pending"
    fix = "see what is pending with `perdure approvals`"


class NotAuthorizedError(PerdureError):
    """The principal lacks the role the operation requires."""

    code = "not_authorized"
    fix = "ask someone who holds the required role"


class ThreadBusyError(PerdureError):
    """A thread already has an unfinished run and its policy (``reject``) refuses another input
    until that run ends. Nothing was written."""

    code = "thread_busy"
    fix = (
        "wait for the thread's run to finish, or start with policy enqueue (run after it) or "
        "interrupt (cancel it first)"
    )


class StreamClosedError(PerdureError):
    """A token stream cannot take this write: a newer attempt of the message was opened, the
    message is already finished, or another run streams it. Nothing was written."""

    code = "stream_closed"
    fix = "write through the sink of the current attempt; a finished message is never reopened"


class GraphThreadBusyError(RunBusyError):
    """Another invocation holds this LangGraph thread (perdure.langgraph): this write would
    interleave with its checkpoints, so nothing was written."""

    code = "graph_thread_busy"
    fix = "wait for the other invocation to finish, or give it another thread_id"


class GraphThreadQuarantinedError(PerdureError):
    """The LangGraph thread is quarantined: one of its checkpoints could not be read or
    verified, so it is neither read as empty nor written over."""

    code = "thread_quarantined"
    fix = (
        "see why with `perdure runs --quarantined`; repair or restore the checkpoint, or "
        "delete the thread to start it over"
    )


class GraphCheckpointUnreadableError(PerdureError):
    """A stored LangGraph checkpoint, channel value or write cannot be decoded or verified
    (unknown or refused serializer type, failed seal, corrupt bytes); the thread is
    quarantined."""

    code = "checkpoint_unreadable"
    fix = (
        "restore the checkpoint from a backup, or configure the serializer and keys that wrote "
        "it; `perdure runs --quarantined` lists the thread"
    )


class GraphNotInterruptedError(PerdureError):
    """A resume was given for a LangGraph thread that has no pending interrupt to answer."""

    code = "not_interrupted"
    fix = (
        "see what the thread waits for with graph.get_state(config); continue it with "
        "graph.invoke(None, config)"
    )


class GraphInterruptAnsweredError(PerdureError):
    """The LangGraph thread's pending interrupt already has a recorded answer that differs from
    this one; the graph may have acted on the first, so it is not replaced."""

    code = "interrupt_answered"
    fix = "the first answer stands: continue the thread with graph.invoke(None, config)"


class ToolEffectAmbiguousError(PerdureError):
    """A LangGraph tool that runs as a perdure effect stopped during its call (or its outcome
    is unknown) and no reconciler could tell what the provider did: it is not called again
    until a person decides."""

    code = "ambiguous_effect"
    fix = (
        "ask the provider what it did under the effect's key, record it with `perdure effects "
        "resolve KEY --confirmed|--not-applied --as NAME --reason TEXT`, then invoke the graph "
        "again"
    )


class NotAuthenticatedError(PerdureError):
    """A request carried no API key, a malformed one, or one that is unknown or revoked."""

    code = "not_authenticated"
    fix = "send a valid key: `Authorization: Bearer pdk_...` (make one with `perdure keys create`)"


class ForgedRequestError(PerdureError):
    """A state change with a browser's cookie that did not come from the dashboard's own page:
    another origin (``Origin``, ``Sec-Fetch-Site``), or no valid CSRF token."""

    code = "forged_request"
    fix = "act from the dashboard's own pages (reload the page and submit again)"


class UnsupportedMediaTypeError(PerdureError):
    """A request body of a type the endpoint does not take (the API takes
    ``application/json``; the dashboard's forms ``application/x-www-form-urlencoded``)."""

    code = "unsupported_media_type"
    fix = "send the body as application/json with a matching Content-Type header"


class TooManyAttemptsError(PerdureError):
    """Too many failed logins or key checks from one address or for one key: refused, without
    looking at the key, until ``retry_after`` seconds have passed."""

    code = "too_many_attempts"

    def __init__(self, message: str, *, retry_after: float, fix: str | None = None) -> None:
        super().__init__(
            message, fix=fix or f"wait {max(1, round(retry_after))} s and check the key"
        )
        self.retry_after = retry_after


class MemoryNotFoundError(PerdureError):
    """No live memory item with this namespace and key exists for this tenant (an expired
    item is absent)."""

    code = "memory_not_found"
    fix = "list what the tenant holds with `perdure memory list NAMESPACE_PREFIX`"


class KeyNotFoundError(PerdureError):
    """No API key with this id exists in this tenant."""

    code = "key_not_found"
    fix = "see the tenant's keys with `perdure keys list`"


class ConflictingUpdatesError(PerdureError):
    """Two branches or children wrote the same state field and the workflow declares no
    reducer for it: perdure never lets the last writer win."""

    code = "conflicting_updates"
    fix = "declare a reducer for the field: Workflow(..., reducers={'field': append})"


class ChildRunError(PerdureError):
    """A child run cannot be started or waited for as asked (a key used twice with another
    input, a wait for a key that was never spawned)."""

    code = "child_run_invalid"
    fix = "give each child a unique key and wait only for keys this run spawned"
