"""perdure: durable execution for AI agents.

Define a workflow of named steps over a typed state, start runs with a :class:`Runtime`, and let
a worker advance them. Every step boundary is committed; a killed process resumes from the last
committed step, never from the beginning.

Every name a step author uses is importable from here (``from perdure import ...``); the
submodules are the implementation. Importing this package needs only the base dependencies
(``orjson``, ``click``): pydantic, cryptography and psycopg are optional extras, loaded only when
a feature that needs them is used.

Declaring a workflow
    :class:`Workflow`, :func:`step`, :class:`RetryPolicy`, :class:`Budget`; state fields kept
    apart: :func:`lazy` (a :class:`Lazy` value read on first access), :func:`cache` (a lazy
    field rebuilt when its stored value is missing), :func:`derived`;
    checkpoint strategies (``Workflow(checkpoint=...)``, docs/state.md): :func:`per_step`,
    :func:`per_effect`, :func:`timed`, :func:`hybrid`, the :class:`CheckpointStrategy` they build.

What a step returns (outcomes)
    :func:`goto`, :func:`done`, :func:`fail`, :func:`wait_for_approval`,
    :func:`wait_for_signal`, :func:`sleep`, :func:`sleep_until`; the values they build:
    :class:`Next`, :class:`Done`, :class:`Fail`, :class:`WaitApproval`, :class:`WaitSignal`,
    :class:`Sleep`, and their union :data:`Outcome`; :func:`wait_for_children` and
    :class:`WaitChildren` (child runs: ``docs/parallel.md``).

Inside a step
    :class:`Context` (the ``ctx`` argument), :class:`Message`, :class:`ToolCall`,
    :func:`tool_call`, :class:`Approval` (``ctx.approval``), :class:`Signal` (``ctx.signals``),
    :class:`Release` (``ctx.release``), :class:`ArtifactRef` (``ctx.put_artifact``),
    :class:`MemoryItem` and :class:`MemoryIndex` (``ctx.memory``: long-term memory and its
    semantic search, docs/state.md);
    :class:`ChildRecord` (``ctx.children``), :class:`EffectCall` and :class:`ModelCall`
    (branches of ``ctx.parallel``), :class:`ConflictingUpdatesError` (two writes of a field
    without a reducer).

Effects (``ctx.effect``)
    :class:`EffectResult` (a result with a receipt), :class:`Reconciled` (what a reconciler
    found); errors ``execute`` raises to classify a failure: :class:`TransientError` (retried),
    :class:`PermanentError` (rejected), :class:`UnknownOutcomeError` (reconciled),
    :class:`BudgetExhaustedError` (escalated), their base :class:`EffectError`; errors a step may
    catch: :class:`EffectRejectedError`, :class:`EffectConflictError`. Records:
    :class:`EffectRecord`, :class:`EffectStatus`.

Agents (``ctx.model_call``, ``ctx.context``; see docs/agents.md)
    :class:`ChatModel` (the protocol a model client implements), :class:`ModelRequest`,
    :class:`ModelResponse`, :class:`Delta`, :class:`TokenUsage`, :class:`Pricing`,
    :class:`ModelReply` (what ``ctx.model_call`` returns); tools: :class:`ToolRegistry`,
    :class:`ToolSpec`, :func:`run_tools`, :func:`arun_tools`, :class:`ToolArgumentError`. The
    provider adapters live in :mod:`perdure.providers` (optional extras).

Running and inspecting runs
    :class:`Runtime`, :class:`AsyncRuntime`, :class:`Worker`, :class:`Run`, :class:`RunView`,
    :class:`RunStatus`, :class:`RunFilter` and :class:`RunPage` (``Runtime.run_page``: runs a
    page at a time), :class:`Durability`, :class:`Principal`, :class:`Keyring`,
    :class:`Limits`, :class:`Savepoint`, :class:`Retention`; clocks:
    :class:`Clock`, :class:`SystemClock`, :class:`FakeClock`.

Threads and streams
    :class:`ThreadPolicy` (what a new run or message does on a busy thread), :class:`ThreadInfo`
    (``rt.threads.get(...)``), :class:`Delivery` (``rt.threads.post(...)``);
    ``ctx.open_stream(...)`` returns a :class:`StreamSink`; ``rt.threads.stream(...)`` yields
    :class:`StreamEntry` records of a :class:`StreamEventKind`; errors :class:`ThreadBusyError`,
    :class:`StreamClosedError`.

Errors (each has a stable ``.code`` and a ``.fix``)
    :class:`PerdureError` (the root), :class:`DefinitionError`, :class:`ConfigError`,
    :class:`InvalidInputError`, :class:`RunNotFoundError`, :class:`WorkflowNotFoundError`,
    :class:`RunClosedError`, :class:`RunBusyError`, :class:`LeaseLostError`,
    :class:`StaleStateError`, :class:`IllegalTransitionError`, :class:`ApprovalStateError`,
    :class:`NotAuthorizedError`, :class:`EffectNotFoundError`, :class:`EffectStateError`,
    :class:`DecodeError`, :class:`OversizeError`, :class:`IntegrityError`, :class:`StoreError`,
    :class:`StoreUnavailableError`, :class:`SchemaTooNewError`, :class:`MigrationChecksumError`,
    :class:`ArtifactError`, :class:`ArtifactMissingError`, :class:`ArtifactCorruptError`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perdure.core.artifacts import (
        ArtifactCorruptError,
        ArtifactError,
        ArtifactMissingError,
        ArtifactRef,
    )
    from perdure.core.budget import Budget
    from perdure.core.chat import (
        ChatModel,
        Delta,
        ModelRequest,
        ModelResponse,
        Pricing,
        TokenUsage,
        ToolSpec,
    )
    from perdure.core.children import ChildRecord
    from perdure.core.clock import Clock, FakeClock, SystemClock
    from perdure.core.effects import (
        BudgetExhaustedError,
        EffectConflictError,
        EffectError,
        EffectRecord,
        EffectRejectedError,
        EffectResult,
        EffectStatus,
        PermanentError,
        Reconciled,
        TransientError,
        UnknownOutcomeError,
    )
    from perdure.core.errors import (
        ApprovalStateError,
        ConfigError,
        ConflictingUpdatesError,
        DecodeError,
        DefinitionError,
        EffectNotFoundError,
        EffectStateError,
        IllegalTransitionError,
        InvalidInputError,
        LeaseLostError,
        MigrationChecksumError,
        NotAuthorizedError,
        PerdureError,
        RunBusyError,
        RunClosedError,
        RunNotFoundError,
        SchemaTooNewError,
        StaleStateError,
        StoreError,
        StoreUnavailableError,
        StreamClosedError,
        ThreadBusyError,
        WorkflowNotFoundError,
    )
    from perdure.core.fields import Lazy, cache, derived, lazy
    from perdure.core.history import Retention, Savepoint
    from perdure.core.listing import RunFilter, RunPage
    from perdure.core.memory import MemoryItem
    from perdure.core.memory_index import MemoryIndex
    from perdure.core.model import (
        Approval,
        Durability,
        Message,
        Principal,
        Release,
        Run,
        RunStatus,
        Signal,
        ToolCall,
    )
    from perdure.core.retry import RetryPolicy
    from perdure.core.seal import IntegrityError, Keyring
    from perdure.core.serde import Limits, OversizeError
    from perdure.core.strategies import (
        CheckpointStrategy,
        hybrid,
        per_effect,
        per_step,
        timed,
    )
    from perdure.core.streams import StreamEntry, StreamEventKind, StreamSink
    from perdure.core.threads import Delivery, ThreadInfo, ThreadPolicy
    from perdure.core.tools import ToolArgumentError, ToolRegistry
    from perdure.core.workflow import (
        Done,
        Fail,
        Next,
        Outcome,
        Sleep,
        WaitApproval,
        WaitChildren,
        WaitSignal,
        Workflow,
        done,
        fail,
        goto,
        sleep,
        sleep_until,
        step,
        wait_for_approval,
        wait_for_children,
        wait_for_signal,
    )
    from perdure.runtime.admin.inspector import RunView
    from perdure.runtime.asyncrt import AsyncRuntime
    from perdure.runtime.runtime import Runtime
    from perdure.runtime.step.context import Context, tool_call
    from perdure.runtime.step.model_calls import ModelReply
    from perdure.runtime.step.parallel import EffectCall, ModelCall
    from perdure.runtime.step.tools import arun_tools, run_tools
    from perdure.runtime.worker import Worker

# Where each public name lives. A name is imported on first use (PEP 562), so `import perdure`
# costs almost nothing and a command loads only the modules it uses.
_WHERE: dict[str, str] = {
    "perdure.core.artifacts": "ArtifactCorruptError ArtifactError ArtifactMissingError ArtifactRef",
    "perdure.core.budget": "Budget",
    "perdure.core.chat": "ChatModel Delta ModelRequest ModelResponse Pricing TokenUsage ToolSpec",
    "perdure.core.children": "ChildRecord",
    "perdure.core.clock": "Clock FakeClock SystemClock",
    "perdure.core.effects": (
        "BudgetExhaustedError EffectConflictError EffectError EffectRecord EffectRejectedError "
        "EffectResult EffectStatus PermanentError Reconciled TransientError UnknownOutcomeError"
    ),
    "perdure.core.errors": (
        "ApprovalStateError ConfigError ConflictingUpdatesError DecodeError DefinitionError "
        "EffectNotFoundError EffectStateError IllegalTransitionError InvalidInputError "
        "LeaseLostError MigrationChecksumError NotAuthorizedError PerdureError RunBusyError "
        "RunClosedError RunNotFoundError SchemaTooNewError StaleStateError StoreError "
        "StoreUnavailableError StreamClosedError ThreadBusyError WorkflowNotFoundError"
    ),
    "perdure.core.fields": "Lazy cache derived lazy",
    "perdure.core.history": "Retention Savepoint",
    "perdure.core.listing": "RunFilter RunPage",
    "perdure.core.memory": "MemoryItem",
    "perdure.core.memory_index": "MemoryIndex",
    "perdure.core.model": (
        "Approval Durability Message Principal Release Run RunStatus Signal ToolCall"
    ),
    "perdure.core.retry": "RetryPolicy",
    "perdure.core.seal": "IntegrityError Keyring",
    "perdure.core.serde": "Limits OversizeError",
    "perdure.core.strategies": "CheckpointStrategy hybrid per_effect per_step timed",
    "perdure.core.streams": "StreamEntry StreamEventKind StreamSink",
    "perdure.core.threads": "Delivery ThreadInfo ThreadPolicy",
    "perdure.core.tools": "ToolArgumentError ToolRegistry",
    "perdure.core.workflow": (
        "Done Fail Next Outcome Sleep WaitApproval WaitChildren WaitSignal Workflow done fail "
        "goto sleep sleep_until step wait_for_approval wait_for_children wait_for_signal"
    ),
    "perdure.runtime.asyncrt": "AsyncRuntime",
    "perdure.runtime.step.context": "Context tool_call",
    "perdure.runtime.step.model_calls": "ModelReply",
    "perdure.runtime.step.parallel": "EffectCall ModelCall",
    "perdure.runtime.runtime": "Runtime",
    "perdure.runtime.admin.inspector": "RunView",
    "perdure.runtime.step.tools": "arun_tools run_tools",
    "perdure.runtime.worker": "Worker",
}
__all__ = [
    "Approval",
    "ApprovalStateError",
    "ArtifactCorruptError",
    "ArtifactError",
    "ArtifactMissingError",
    "ArtifactRef",
    "AsyncRuntime",
    "Budget",
    "BudgetExhaustedError",
    "ChatModel",
    "CheckpointStrategy",
    "ChildRecord",
    "Clock",
    "ConfigError",
    "ConflictingUpdatesError",
    "Context",
    "DecodeError",
    "DefinitionError",
    "Delivery",
    "Delta",
    "Done",
    "Durability",
    "EffectCall",
    "EffectConflictError",
    "EffectError",
    "EffectNotFoundError",
    "EffectRecord",
    "EffectRejectedError",
    "EffectResult",
    "EffectStateError",
    "EffectStatus",
    "Fail",
    "FakeClock",
    "IllegalTransitionError",
    "IntegrityError",
    "InvalidInputError",
    "Keyring",
    "Lazy",
    "LeaseLostError",
    "Limits",
    "MemoryIndex",
    "MemoryItem",
    "Message",
    "MigrationChecksumError",
    "ModelCall",
    "ModelReply",
    "ModelRequest",
    "ModelResponse",
    "Next",
    "NotAuthorizedError",
    "Outcome",
    "OversizeError",
    "PerdureError",
    "PermanentError",
    "Pricing",
    "Principal",
    "Reconciled",
    "Release",
    "Retention",
    "RetryPolicy",
    "Run",
    "RunBusyError",
    "RunClosedError",
    "RunFilter",
    "RunNotFoundError",
    "RunPage",
    "RunStatus",
    "RunView",
    "Runtime",
    "Savepoint",
    "SchemaTooNewError",
    "Signal",
    "Sleep",
    "StaleStateError",
    "StoreError",
    "StoreUnavailableError",
    "StreamClosedError",
    "StreamEntry",
    "StreamEventKind",
    "StreamSink",
    "SystemClock",
    "ThreadBusyError",
    "ThreadInfo",
    "ThreadPolicy",
    "TokenUsage",
    "ToolArgumentError",
    "ToolCall",
    "ToolRegistry",
    "ToolSpec",
    "TransientError",
    "UnknownOutcomeError",
    "WaitApproval",
    "WaitChildren",
    "WaitSignal",
    "Worker",
    "Workflow",
    "WorkflowNotFoundError",
    "arun_tools",
    "cache",
    "derived",
    "done",
    "fail",
    "goto",
    "hybrid",
    "lazy",
    "per_effect",
    "per_step",
    "run_tools",
    "sleep",
    "sleep_until",
    "step",
    "timed",
    "tool_call",
    "wait_for_approval",
    "wait_for_children",
    "wait_for_signal",
]

_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names.split()}


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it in the package namespace."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'perdure' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, loaded or not."""
    return sorted({*globals(), *__all__})
