"""Group commit: the writes of different runs, committed by one transaction.

Every run executes in a thread of its own, and a ``sync`` step returns only once its boundary
is durable; a recorded call (an effect) returns only once its intent, and later its outcome,
are. Written one by one, a process's runs queue for the database: SQLite serialises every
fsync, PostgreSQL spends a transaction of client work per write. A :class:`Group` lets those
writes share a transaction; a runtime has three, for the boundaries
(:class:`GroupCommitter`) and for the effects' intents and status moves (:func:`effect_group`):

* an execution that writes while a leader's place is free becomes a *leader* at once;
* executions that arrive while every place is taken wait; when a leader's write is durable it
  hands each member its own answer and its place to the oldest waiting execution, which takes
  every request pending at that moment (up to ``max_batch``) and writes them in one
  transaction (for boundaries, :meth:`~perdure.store.base.Store.commit_many`).

A runtime has ``in_flight`` places (default 1) on a store whose write transactions run side by
side (PostgreSQL), one on SQLite, whose writers take turns. So a lone write adds no wait at all
(it leads at once and goes alone, for a boundary through
:meth:`~perdure.store.base.Store.commit`), and under load the number of transactions falls to
about ``in_flight`` per round of the process's runs, the server working on that many at once.
Groups written at once hold different runs (a run has one write pending at a time), and each
takes its runs' locks in (tenant, run) order, as groups of different processes do.
``max_wait`` (default 0) lets a leader wait that many seconds for company before it writes,
trading latency for bigger groups (one group is then gathered and written at a time).

Nothing is acknowledged before the group's transaction is durable, so ``sync`` keeps a recovery
point of zero and an effect's intent is on disk before its call; each run keeps its own guard,
so one run's refused write (a stale fence, a cancelled run) fails only that run. When the
database cannot be reached, every member gets :class:`~perdure.core.errors.StoreUnavailableError`,
as it would writing alone: a boundary's committer rides out the outage (checking first
whether the group landed).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Generic, TypeVar

from perdure.core.errors import PerdureError
from perdure.runtime.crashpoints import crashpoint
from perdure.runtime.grouping import GroupCommit
from perdure.store.base import Boundary, CommitRequest, Store

R = TypeVar("R")
A = TypeVar("A")


class _Pending(Generic[R, A]):
    """One thread's request, waiting in the group. ``wake`` is set once it has its answer
    (``done``), or once it is made a leader (``leads``): each waiter is woken on its own, never
    all of them at once (a process may hold a thousand runs)."""

    __slots__ = ("answer", "done", "leads", "request", "wake")

    def __init__(self, request: R) -> None:
        self.request = request
        self.answer: A | PerdureError | None = None
        self.done = False
        self.leads = False
        self.wake = threading.Event()


class Group(Generic[R, A]):
    """Writes the requests of many threads together: a request that finds a leader's place
    free (fewer than ``places`` groups being written) goes at once, ``alone``, with no added
    wait; the others wait, and when a leader's write is durable the oldest of them leads the
    next group, taking every request pending at that moment (up to ``max_batch``) into one
    write, ``together``. Each request gets its own answer (``together`` answers a refused one
    with its error, which is raised to its thread). See the module docstring.

    ``places``: how many groups may be written at once (``in_flight`` where the store's
    transactions write side by side, else 1). ``crash_name``: the group's crash points are
    named ``<crash_name>_begin:N`` and ``<crash_name>_durable:N`` (None: it has none).
    ``on_group``: told how many requests each write carried."""

    def __init__(
        self,
        options: GroupCommit,
        alone: Callable[[R, datetime], A],
        together: Callable[[list[R], datetime], Sequence[A | PerdureError]],
        *,
        places: int = 1,
        crash_name: str | None = None,
        on_group: Callable[[int], None] | None = None,
    ) -> None:
        self.options = options
        self.alone = alone
        self.together = together
        self.crash_name = crash_name
        self.on_group = on_group
        self._lock = threading.Lock()
        self._pending: deque[_Pending[R, A]] = deque()
        """Requests waiting for a leader (never a leader's own)."""
        self._leaders = 0
        """Groups being written (or gathered) now: at most :attr:`places`."""
        self.places = 1 if options.max_wait else places
        """How many groups may be written at once (one while leaders wait for company, so
        that the company they wait for is theirs)."""
        self._enough = threading.Event()
        """Set when a leader's group is full (a leader waiting for company stops)."""
        self._groups = 0
        """How many groups of two or more requests were written (names the crash points)."""

    def submit(self, request: R, now: datetime) -> A:
        """Write ``request`` in whatever group is forming; returns its answer once the write
        is durable, or raises its error. With ``max_batch`` 1 (grouping off) every request
        goes alone at once, beside the others, never queued behind them."""
        if self.options.max_batch == 1:
            lone = self.alone(request, now)
            if self.on_group is not None:
                self.on_group(1)
            return lone
        mine: _Pending[R, A] = _Pending(request)
        with self._lock:
            free = self._leaders < self.places
            alone = free and not (self._pending or self.options.max_wait)
            if free:
                self._leaders += 1
                mine.leads = True
            else:
                self._pending.append(mine)
                if len(self._pending) >= self.options.max_batch - 1:
                    self._enough.set()
        if alone:  # nobody to wait for: lead a group of one, straight to the store
            try:
                alone_answer = self.alone(request, now)
                if self.on_group is not None:
                    self.on_group(1)
                return alone_answer
            finally:
                self._step_down()
        if not mine.leads:
            mine.wake.wait()
        if not mine.done:  # made a leader: write what is pending (this request first)
            self._lead(mine, now)
        answer = mine.answer
        if isinstance(answer, PerdureError):
            raise answer
        assert answer is not None
        return answer

    def _lead(self, mine: _Pending[R, A], now: datetime) -> None:
        """Write ``mine`` with the requests pending (up to ``max_batch`` in all), then hand
        the leader's place over."""
        try:
            if self.options.max_wait and not self._enough.is_set():
                self._enough.wait(self.options.max_wait)
            with self._lock:
                group = [mine]
                while self._pending and len(group) < self.options.max_batch:
                    group.append(self._pending.popleft())
                if len(self._pending) < self.options.max_batch - 1:
                    self._enough.clear()
                if len(group) > 1:
                    self._groups += 1
                number = self._groups
            self._write(group, now, number)
        finally:
            self._step_down()

    def _step_down(self) -> None:
        """A leader is done: the oldest pending request, if any, leads next (woken alone);
        else the leader's place is free."""
        with self._lock:
            if self._pending:
                after = self._pending.popleft()
                after.leads = True
                after.wake.set()
            else:
                self._leaders -= 1

    def _write(self, group: list[_Pending[R, A]], now: datetime, number: int) -> None:
        """Write one group and give every member its answer (never raises a PerdureError)."""
        answers: Sequence[A | PerdureError]
        try:
            if len(group) == 1:
                answers = [self.alone(group[0].request, now)]
            else:
                self._crashpoint("begin", number)
                answers = self.together([p.request for p in group], now)
                self._crashpoint("durable", number)
        except PerdureError as exc:
            answers = [exc] * len(group)
        except BaseException as exc:  # not the store's: every member must still be answered
            answers = [PerdureError(f"the group write failed: {exc!r}")] * len(group)
            raise
        finally:
            for member, answer in zip(group, answers, strict=True):
                member.answer = answer
                member.done = True
                member.wake.set()
        if self.on_group is not None:
            self.on_group(len(group))

    def _crashpoint(self, when: str, number: int) -> None:
        if self.crash_name is not None:
            crashpoint(f"{self.crash_name}_{when}", str(number))


class GroupCommitter(Group[CommitRequest, int]):
    """Commits boundaries of many runs of one process together (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        options: GroupCommit,
        on_group: Callable[[int], None] | None = None,
    ) -> None:
        super().__init__(
            options,
            lambda r, now: store.commit(
                r.tenant_id, r.run_id, r.fence, r.expected_version, r.boundaries, now
            ),
            store.commit_many,
            places=options.in_flight if store.parallel_writes else 1,
            crash_name="group",
            on_group=on_group,
        )
        self.store = store

    def commit(
        self,
        tenant_id: str,
        run_id: str,
        fence: int,
        expected_version: int,
        boundaries: Sequence[Boundary],
        now: datetime,
    ) -> int:
        """:meth:`Store.commit <perdure.store.base.Store.commit>` for one run, in whatever
        group is forming: same arguments, same answer, same errors; returns once the
        boundaries are durable."""
        request = CommitRequest(tenant_id, run_id, fence, expected_version, boundaries)
        return self.submit(request, now)


def effect_group(
    option: GroupCommit | bool,
    write: Callable[[list[R], datetime], Sequence[A | PerdureError]],
    *,
    parallel: bool = False,
) -> Group[R, A]:
    """Where a runtime's executions write one kind of effect record (intents with
    :meth:`Store.plan_effects <perdure.store.base.Store.plan_effects>`, status moves with
    :meth:`Store.move_effects <perdure.store.base.Store.move_effects>`), under the same
    ``group_commit`` option as their boundaries: the writes of many runs in one transaction
    (with grouping off, each alone). ``parallel``: the store's write transactions run side
    by side (:attr:`Store.parallel_writes <perdure.store.base.Store.parallel_writes>`), so up
    to ``in_flight`` groups are written at once."""

    def alone(request: R, now: datetime) -> A:
        (answer,) = write([request], now)
        if isinstance(answer, PerdureError):
            raise answer
        return answer

    options = _options(option) or GroupCommit(max_batch=1)
    return Group(options, alone, write, places=options.in_flight if parallel else 1)


def grouper(store: Store, option: GroupCommit | bool) -> GroupCommitter | None:
    """The group committer a runtime with this ``group_commit`` option uses (None: every
    commit alone)."""
    options = _options(option)
    return None if options is None else GroupCommitter(store, options)


def _options(option: GroupCommit | bool) -> GroupCommit | None:
    """The grouping a ``group_commit`` option asks for (None: none)."""
    if option is False:
        return None
    options = GroupCommit() if option is True else option
    return options if options.max_batch > 1 else None
