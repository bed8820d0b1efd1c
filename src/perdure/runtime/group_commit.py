"""Group commit: the step boundaries of different runs, committed by one transaction.

Every run executes in a thread of its own, and a ``sync`` step returns only once its boundary
is durable. Committed one by one, a process's runs queue for the database: SQLite serialises
every fsync, PostgreSQL spends a transaction of client work per step. A :class:`GroupCommitter`
(one per :class:`~perdure.runtime.runtime.Runtime`) lets those commits share a transaction:

* the first execution to commit becomes the *leader*: it takes every commit pending at that
  moment (up to ``max_batch``), writes them with :meth:`~perdure.store.base.Store.commit_many`,
  hands each execution its own answer and steps down;
* executions that arrive while a leader writes wait for it; the next leader takes all of them.

So a lone commit adds no wait at all (it leads at once and goes alone, through
:meth:`~perdure.store.base.Store.commit`), and under load the number of transactions falls
to one per group. ``max_wait`` (default 0) lets a leader wait that many seconds for company
before it writes, trading latency for bigger groups.

Nothing is acknowledged before the group's transaction is durable, so ``sync`` keeps a recovery
point of zero; each run keeps its own guard, so one run's refused commit (a stale fence, a
cancelled run) fails only that run. When the database cannot be reached, every member gets
:class:`~perdure.core.errors.StoreUnavailableError` and its committer rides out the outage as a
lone commit would (checking first whether the group landed).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from perdure.core.errors import ConfigError, PerdureError
from perdure.runtime.base import setting
from perdure.runtime.crashpoints import crashpoint
from perdure.store.base import Boundary, CommitRequest, Store


@dataclass(frozen=True, slots=True)
class GroupCommit:
    """How a runtime groups its runs' commits (``Runtime(group_commit=...)``).

    ``max_batch``: the most runs one transaction carries (1 turns grouping off).
    ``max_wait``: seconds a leader waits for more commits before it writes (0: never waits;
    a commit that finds nobody else pending goes at once).
    """

    max_batch: int = 64
    max_wait: float = 0.0

    def __post_init__(self) -> None:
        setting("group_commit max_batch", self.max_batch, 1, 10_000, unit="runs")
        setting("group_commit max_wait", self.max_wait, 0, 1)
        if not isinstance(self.max_batch, int):
            raise ConfigError(
                f"group_commit max_batch {self.max_batch!r} is not a whole number of runs",
                fix="give max_batch a whole number from 1 to 10000",
            )


class _Pending:
    """One execution's commit, waiting in the group. ``wake`` is set once it has its answer
    (``done``), or once it is made the next leader: each waiter is woken on its own, never all
    of them at once (a process may hold a thousand runs)."""

    __slots__ = ("answer", "done", "request", "wake")

    def __init__(self, request: CommitRequest) -> None:
        self.request = request
        self.answer: int | PerdureError | None = None
        self.done = False
        self.wake = threading.Event()


class GroupCommitter:
    """Commits boundaries of many runs of one process together (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        options: GroupCommit,
        on_group: Callable[[int], None] | None = None,
    ) -> None:
        self.store = store
        self.options = options
        self.on_group = on_group
        """Told how many runs each transaction carried."""
        self._lock = threading.Lock()
        self._pending: list[_Pending] = []
        self._leading = False
        self._enough = threading.Event()
        """Set when ``max_batch`` commits are pending (a leader waiting for company stops)."""
        self._groups = 0
        """How many groups of two or more runs were written (names the group crash points)."""

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
        mine = _Pending(CommitRequest(tenant_id, run_id, fence, expected_version, boundaries))
        with self._lock:
            alone = not (self._leading or self._pending or self.options.max_wait)
            if alone:
                self._leading = True
            else:
                self._pending.append(mine)
                if len(self._pending) >= self.options.max_batch:
                    self._enough.set()
                if not self._leading:  # nobody leads: this one does, at once
                    self._leading = True
                    mine.wake.set()
        if alone:  # nobody to wait for: lead a group of one, straight to the store
            try:
                version = self.store.commit(
                    tenant_id, run_id, fence, expected_version, boundaries, now
                )
                if self.on_group is not None:
                    self.on_group(1)
                return version
            finally:
                self._step_down()
        mine.wake.wait()
        if not mine.done:  # made the leader: write what is pending (this commit first)
            try:
                if self.options.max_wait and not self._enough.is_set():
                    self._enough.wait(self.options.max_wait)
                with self._lock:
                    group = self._pending[: self.options.max_batch]
                    del self._pending[: len(group)]
                    self._enough.clear()
                self._write(group, now)
            finally:
                self._step_down()
        answer = mine.answer
        if isinstance(answer, PerdureError):
            raise answer
        assert answer is not None
        return answer

    def _step_down(self) -> None:
        """The leader is done: the oldest pending commit, if any, leads next (woken alone)."""
        with self._lock:
            self._leading = bool(self._pending)
            if self._pending:
                self._pending[0].wake.set()

    def _write(self, group: list[_Pending], now: datetime) -> None:
        """Write one group and give every member its answer (never raises a PerdureError)."""
        answers: Sequence[int | PerdureError]
        try:
            if len(group) == 1:
                r = group[0].request
                answers = [
                    self.store.commit(
                        r.tenant_id, r.run_id, r.fence, r.expected_version, r.boundaries, now
                    )
                ]
            else:
                self._groups += 1
                crashpoint("group_begin", str(self._groups))
                answers = self.store.commit_many([p.request for p in group], now)
                crashpoint("group_durable", str(self._groups))
        except PerdureError as exc:
            answers = [exc] * len(group)
        except BaseException as exc:  # not the store's: every member must still be answered
            answers = [PerdureError(f"the group commit failed: {exc!r}")] * len(group)
            raise
        finally:
            for member, answer in zip(group, answers, strict=True):
                member.answer = answer
                member.done = True
                member.wake.set()
        if self.on_group is not None:
            self.on_group(len(group))


def grouper(store: Store, option: GroupCommit | bool) -> GroupCommitter | None:
    """The group committer a runtime with this ``group_commit`` option uses (None: every
    commit alone)."""
    if option is False:
        return None
    options = GroupCommit() if option is True else option
    return GroupCommitter(store, options) if options.max_batch > 1 else None
