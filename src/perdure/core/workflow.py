"""Workflow definitions: named steps, their allowed successors, and step outcomes.

A workflow is declared once, at import time, and checked then::

    @step(next=["act", "reply"])
    def think(ctx, state): ...

    agent = Workflow("agent", version=1, state=AgentState, steps=[think, act, reply])

A step is a function ``(ctx, state) -> outcome``. It may change ``state`` in place or hand back a
new state in the outcome. The outcome says what comes next: :func:`goto` another step, :func:`done`
with a result, :func:`fail` with a typed reason, or a wait that holds no process:
:func:`wait_for_approval`, :func:`wait_for_signal`, :func:`sleep` / :func:`sleep_until`. Loops are
just transitions (think -> act -> think). A step can only continue with steps it declared in
``next``. The outcomes live in :mod:`perdure.core.outcomes` and are importable from here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from perdure.core.errors import DecodeError, DefinitionError
from perdure.core.outcomes import (
    NAME,
    Done,
    Fail,
    Next,
    Outcome,
    Sleep,
    WaitApproval,
    WaitChildren,
    WaitSignal,
    continuations,
    done,
    fail,
    goto,
    sleep,
    sleep_until,
    wait_for_approval,
    wait_for_children,
    wait_for_signal,
)
from perdure.core.reducers import Reducer, declared
from perdure.core.serde import StateCodec
from perdure.core.strategies import CheckpointStrategy, per_step
from perdure.core.versions import Compatibility

if TYPE_CHECKING:
    from perdure.core.budget import Budget
    from perdure.core.retry import RetryPolicy

ESCALATIONS = frozenset({"fail", "needs_attention"})
"""The ``on_exhausted`` values that are not step names."""

S = TypeVar("S")


StepFn = Callable[[Any, Any], "Outcome | Coroutine[Any, Any, Outcome]"]
"""A step function: ``(ctx, state) -> outcome``, plain or ``async def``, where ``ctx`` is the
runtime's :class:`~perdure.runtime.step.context.Context` (the core does not import the runtime)."""


@dataclass(frozen=True, slots=True)
class StepDef:
    """A declared step: its name, its function, the steps it may go to, its retry policy
    (a :class:`perdure.core.retry.RetryPolicy`, or None for no retries) and its checkpoint
    strategy (:mod:`perdure.core.strategies`; None: the workflow's)."""

    name: str
    fn: StepFn
    next: frozenset[str]
    retry: RetryPolicy | None = None
    checkpoint: CheckpointStrategy | None = None

    def __post_init__(self) -> None:
        if _yields(self.fn):
            raise DefinitionError(
                f"step {self.name!r} is a generator: a step returns one outcome",
                fix="return goto(...), done(...) or another outcome instead of yielding",
            )
        if not callable(self.fn):
            raise DefinitionError(f"step {self.name!r} is not callable")
        _check_strategy(self.checkpoint, f"step {self.name!r}")

    def __call__(self, ctx: Any, state: Any) -> Outcome | Coroutine[Any, Any, Outcome]:
        return self.fn(ctx, state)


@overload
def step(fn: StepFn, /) -> StepDef: ...
@overload
def step(
    *,
    name: str | None = None,
    next: Iterable[str] = (),
    retry: RetryPolicy | None = None,
    checkpoint: CheckpointStrategy | None = None,
) -> Callable[[StepFn], StepDef]: ...
def step(
    fn: StepFn | None = None,
    /,
    *,
    name: str | None = None,
    next: Iterable[str] = (),
    retry: RetryPolicy | None = None,
    checkpoint: CheckpointStrategy | None = None,
) -> StepDef | Callable[[StepFn], StepDef]:
    """Declare a step. ``next`` lists the steps it may :func:`goto`; ``name`` defaults to the
    function's name. A step with no ``next`` can only end the run (done or fail). ``retry``
    re-runs the step after a retryable error it raises (:class:`perdure.core.retry.RetryPolicy`);
    when it is exhausted, its ``on_exhausted`` may name a declared failure step.
    ``checkpoint`` overrides the workflow's checkpoint strategy for this step's boundaries and
    effects (:mod:`perdure.core.strategies`)."""
    targets = frozenset([next] if isinstance(next, str) else next)

    def wrap(f: StepFn) -> StepDef:
        return StepDef(name or f.__name__, f, targets, retry, checkpoint)

    return wrap(fn) if fn is not None else wrap


def _check_defaults(name: str, codec: StateCodec) -> None:
    """Refuse a state type whose defaults a worker could not decode (say ``items: list =
    None``): the default state, when the type builds one without arguments, goes through the
    codec both ways, as every run's state does."""
    try:
        default = codec.state_type()
    except Exception:  # required fields: the input gives them, and start checks the whole state
        return
    try:
        codec.from_fields(codec.to_fields(default))
    except DecodeError as exc:
        raise DefinitionError(
            f"workflow {name}: its default state would not decode: {exc.message}",
            fix="give each state field a default of its declared type, e.g. "
            "`items: list[str] = field(default_factory=list)` or `items: list[str] | None = None`",
        ) from exc


class Workflow(Generic[S]):
    """A named, versioned set of steps over a typed state, validated when constructed.

    ``version`` is the workflow version and ``state_schema`` the version of the state's shape;
    both are recorded on every run started from this definition. ``start`` names the first step
    (default: the first in ``steps``). ``compensators`` lists the functions effects may name as
    ``compensate=``; they must be declared here so a new process can run them after a crash.
    ``budget`` is the default :class:`perdure.core.budget.Budget` of its runs (limits and the
    no-progress guard; None: no limits, no guard). ``delete_messages_on_cancel`` removes the
    thread messages a run added when it is cancelled (default: keep them).

    Old runs under new code: the definition runs stored runs of workflow versions
    ``min_version`` to ``version``; a run of a newer version or state schema is quarantined
    (``schema_too_new``) until that code is back. Older state schemas are brought up to date by
    the functions registered with :meth:`migration`. ``renamed={"old": "new"}`` and
    ``removed={"old": "successor"}`` map steps a stored run may still point at.
    ``retired={"model": {"old-model": "new-model"}, "tools": {"v1": None}}`` replaces a retired
    model or tool set named in a run's release manifest, or (None) quarantines such runs.
    ``model`` is the model id recorded in the release manifest of runs started without one.
    ``reducers`` maps state fields to how updates from parallel branches or child runs combine
    (:mod:`perdure.core.reducers`: ``append``, ``merge``, ``max``, ``min``, ``sum`` or a
    function); a field that is not a field of ``state`` is refused here.
    ``checkpoint`` is when its runs' step boundaries become durable
    (:mod:`perdure.core.strategies`: ``per_step()``, the default, ``per_effect()``,
    ``timed(seconds)`` or ``hybrid(seconds)``); a step may override it. It applies to runs
    started with the default ``sync`` durability; a run started with ``exit`` or ``async``
    keeps the mode it asked for.
    Raises :class:`DefinitionError` for an empty step list, duplicate or malformed names, an
    unknown start step, a ``next`` naming an unknown step, or a retry policy whose
    ``on_exhausted`` names an unknown step.
    """

    def __init__(
        self,
        name: str,
        *,
        state: type[S],
        steps: Sequence[StepDef | StepFn],
        version: int = 1,
        state_schema: int = 1,
        start: str | None = None,
        compensators: Sequence[Callable[..., Any]] = (),
        budget: Budget | None = None,
        delete_messages_on_cancel: bool = False,
        min_version: int = 1,
        renamed: dict[str, str] | None = None,
        removed: dict[str, str] | None = None,
        retired: dict[str, dict[str, str | None]] | None = None,
        model: str | None = None,
        reducers: dict[str, Reducer | str] | None = None,
        checkpoint: CheckpointStrategy | None = None,
    ) -> None:
        if not NAME.match(name):
            raise DefinitionError(
                f"workflow name {name!r} is not valid",
                fix="use letters, digits, '_', '-' or '.', starting with a letter",
            )
        if version < 1 or state_schema < 1:
            raise DefinitionError(f"workflow {name}: version and state_schema must be >= 1")
        defs = [s if isinstance(s, StepDef) else step(s) for s in steps]
        if not defs:
            raise DefinitionError(f"workflow {name} has no steps, so it has no start step")
        self.steps: dict[str, StepDef] = {}
        for d in defs:
            if not NAME.match(d.name):
                raise DefinitionError(f"workflow {name}: step name {d.name!r} is not valid")
            if d.name in self.steps:
                raise DefinitionError(f"workflow {name}: step {d.name!r} is declared twice")
            self.steps[d.name] = d
        self.start = start if start is not None else defs[0].name
        if self.start not in self.steps:
            raise DefinitionError(f"workflow {name}: start step {self.start!r} is not declared")
        for d in defs:
            unknown = sorted(d.next - self.steps.keys())
            if unknown:
                raise DefinitionError(
                    f"workflow {name}: step {d.name!r} goes to undeclared steps {unknown}"
                )
            target = d.retry.on_exhausted if d.retry is not None else "fail"
            if target not in ESCALATIONS and target not in self.steps:
                raise DefinitionError(
                    f"workflow {name}: step {d.name!r} retry on_exhausted={target!r} is neither "
                    f"'fail', 'needs_attention' nor a declared step"
                )
        self.compensators: dict[str, Callable[..., Any]] = {}
        for fn in compensators:
            cname = getattr(fn, "__name__", "")
            if not cname or cname == "<lambda>" or cname in self.compensators:
                raise DefinitionError(
                    f"workflow {name}: compensator {fn!r} needs a unique name",
                    fix="declare it with def (a lambda cannot be found again after a restart)",
                )
            self.compensators[cname] = fn
        self.budget = budget
        self.delete_messages_on_cancel = delete_messages_on_cancel
        if not 1 <= min_version <= version:
            raise DefinitionError(f"workflow {name}: min_version must be in 1..{version}")
        self.min_version = min_version
        self.renamed = dict(renamed or {})
        self.removed = dict(removed or {})
        for table, mapping in (("renamed", self.renamed), ("removed", self.removed)):
            for old, new in mapping.items():
                if old in self.steps:
                    raise DefinitionError(
                        f"workflow {name}: {table} step {old!r} is still declared"
                    )
                if new not in self.steps:
                    raise DefinitionError(
                        f"workflow {name}: {table}[{old!r}] = {new!r} is not a declared step"
                    )
        self.retired = {k: dict(v) for k, v in (retired or {}).items()}
        unknown_kinds = sorted(set(self.retired) - {"model", "tools"})
        if unknown_kinds:
            raise DefinitionError(
                f"workflow {name}: retired kinds {unknown_kinds} are unknown",
                fix="use 'model' and 'tools' (the release ids they replace)",
            )
        self.migrations: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}
        self.model = model
        self.reducers = declared(reducers or {}, state)
        self.name, self.version, self.state_schema = name, version, state_schema
        self.state_type = state
        self.codec = StateCodec(state)
        _check_defaults(name, self.codec)
        self.checkpoint = _check_strategy(checkpoint, f"workflow {name}") or per_step()

    def strategy(self, step: str) -> CheckpointStrategy:
        """The checkpoint strategy of ``step``'s boundaries and effects: its own, or the
        workflow's."""
        declared = self.steps.get(step)
        if declared is not None and declared.checkpoint is not None:
            return declared.checkpoint
        return self.checkpoint

    def migration(
        self, *, from_schema: int
    ) -> Callable[
        [Callable[[dict[str, Any]], dict[str, Any]]], Callable[[dict[str, Any]], dict[str, Any]]
    ]:
        """Register a pure function that turns stored state of schema ``from_schema`` (a dict
        of fields) into schema ``from_schema + 1``. Migrations chain: a run stored at schema 1
        under code at schema 3 goes through 1->2 and 2->3 when a worker claims it."""

        def register(
            fn: Callable[[dict[str, Any]], dict[str, Any]],
        ) -> Callable[[dict[str, Any]], dict[str, Any]]:
            if not 1 <= from_schema < self.state_schema:
                raise DefinitionError(
                    f"workflow {self.name}: a migration from schema {from_schema} does not lead "
                    f"to the current schema {self.state_schema}"
                )
            if from_schema in self.migrations:
                raise DefinitionError(
                    f"workflow {self.name}: two migrations from schema {from_schema}"
                )
            self.migrations[from_schema] = fn
            return fn

        return register

    @property
    def compat(self) -> Compatibility:
        """What this definition can read (for :func:`perdure.core.versions.plan`)."""
        return Compatibility(
            self.name,
            self.version,
            self.state_schema,
            self.min_version,
            frozenset(self.steps),
            dict(self.migrations),
            self.renamed,
            self.removed,
            self.retired,
        )

    def __repr__(self) -> str:
        return f"Workflow({self.name!r}, version={self.version}, steps={list(self.steps)})"


def _check_strategy(strategy: object, where: str) -> CheckpointStrategy | None:
    if strategy is not None and not isinstance(strategy, CheckpointStrategy):
        raise DefinitionError(
            f"{where}: checkpoint={strategy!r} is not a checkpoint strategy",
            fix="use per_step(), per_effect(), timed(seconds) or hybrid(seconds)",
        )
    return strategy


__all__ = [
    "ESCALATIONS",
    "Done",
    "Fail",
    "Next",
    "Outcome",
    "Sleep",
    "StepDef",
    "StepFn",
    "WaitApproval",
    "WaitChildren",
    "WaitSignal",
    "Workflow",
    "continuations",
    "done",
    "fail",
    "goto",
    "sleep",
    "sleep_until",
    "step",
    "wait_for_approval",
    "wait_for_children",
    "wait_for_signal",
]


_GENERATOR_FLAGS = 0x20 | 0x200
"""``CO_GENERATOR | CO_ASYNC_GENERATOR``: a function whose code has either is a generator."""


def _yields(fn: object) -> bool:
    """Whether ``fn`` is a generator or async generator function (as ``inspect`` says, through
    ``functools.partial`` and bound methods; read from the code flags so that defining a
    workflow does not import ``inspect``)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    return code is not None and bool(getattr(code, "co_flags", 0) & _GENERATOR_FLAGS)
