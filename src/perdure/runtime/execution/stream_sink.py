"""The step's side of a durable token stream: a :class:`~perdure.core.streams.StreamSink` that
buffers deltas and writes them to the store in batches, fenced by the run's lease.

A sink is one attempt of one message. Opening it starts a new attempt in the store (writing a
``superseded`` entry first when an earlier attempt was cut). Deltas are buffered and written
``batch`` at a time, one transaction per batch, or sooner when the oldest buffered delta has
waited ``max_delay`` seconds by the runtime's clock (checked at each write, so a slow model's
reader stays close); whatever is buffered is also written when the
step reaches an effect or its boundary, and by :meth:`DurableStream.finish`, which closes the
attempt with a ``finished`` entry. Every write carries the run's fence: a worker that lost the
run gets :class:`~perdure.core.errors.LeaseLostError` and writes nothing.

In an ``async def`` step the sink never makes the event loop wait on the database: each store
write is handed to the run's execution thread (:meth:`~perdure.runtime.aio.Bridge.post`), in
order, and a failure is raised at the next ``write`` or ``finish`` (and at the boundary).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from perdure.core.clock import Clock
from perdure.core.errors import InvalidInputError, StreamClosedError
from perdure.core.streams import DEFAULT_BATCH, DEFAULT_MAX_DELAY
from perdure.runtime.aio import Bridge
from perdure.runtime.execution.claim import Claim
from perdure.runtime.settings import setting
from perdure.store.base import Store

MAX_BATCH = 10_000


class DurableStream:
    """A :class:`~perdure.core.streams.StreamSink` on the store; see the module docstring.

    After it is opened: ``attempt`` is this attempt's number, ``superseded`` whether an earlier
    attempt was cut and marked so, ``complete`` whether the message was already finished (then
    writes are dropped: the stored message stays as it was). ``flushes`` counts the store
    writes made so far.
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        claim: Claim,
        bridge: Bridge,
        message_id: str,
        batch: int = DEFAULT_BATCH,
        reopen: bool = False,
        max_delay: float | None = DEFAULT_MAX_DELAY,
    ) -> None:
        if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_BATCH:
            raise InvalidInputError(
                f"stream batch {batch!r} is out of range", fix=f"give 1 to {MAX_BATCH} deltas"
            )
        if max_delay is not None:
            max_delay = setting("max_delay", max_delay, 0, 3600)
        self.message_id = message_id
        self.batch = batch
        self.reopen = reopen
        self.max_delay = None if max_delay is None else timedelta(seconds=max_delay)
        self._since: datetime | None = None
        self.attempt = 0
        self.superseded = False
        self.complete = False
        self.finished = False
        self.flushes = 0
        self._store = store
        self._clock = clock
        self._claim = claim
        self._bridge = bridge
        self._buffer: list[str] = []
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        self._submit(self._open)

    def write(self, text: str) -> None:
        """Append one delta (buffered; written with the next batch)."""
        if not isinstance(text, str):
            raise InvalidInputError(f"a stream delta must be text, not {type(text).__name__}")
        self.raise_failure()
        if self.finished:
            raise StreamClosedError(f"the stream of message {self.message_id} is finished")
        with self._lock:
            self._buffer.append(text)
            full = len(self._buffer) >= self.batch
            if self.max_delay is not None and not full:
                now = self._clock.now()
                if self._since is None:
                    self._since = now
                full = now - self._since >= self.max_delay
        if full:
            self.flush()

    def flush(self) -> None:
        """Write what is buffered now (one transaction)."""
        texts = self._take()
        if texts:
            self._submit(lambda: self._write(texts, False))

    def finish(self) -> None:
        """Write what is buffered and a ``finished`` entry: the message is whole. A second
        call does nothing."""
        if self.finished:
            return
        self.finished = True
        texts = self._take()
        self._submit(lambda: self._write(texts, True))
        self.raise_failure()

    def raise_failure(self) -> None:
        """Raise the error of a write handed to the execution thread that failed, if any."""
        if self._error is not None:
            raise self._error

    # -- in the execution thread ------------------------------------------------------------------

    def _take(self) -> list[str]:
        with self._lock:
            texts, self._buffer = self._buffer, []
            self._since = None
        return texts

    def _submit(self, job: Callable[[], None]) -> None:
        if not self._bridge.on_loop():
            job()
            return

        def guarded() -> None:
            if self._error is not None:
                return  # a write failed: the later ones of this sink are not attempted
            try:
                job()
            except BaseException as exc:  # raised to the step at its next write or boundary
                self._error = exc

        self._bridge.post(guarded)

    def _open(self) -> None:
        claim = self._claim
        opened = self._store.open_stream(
            claim.tenant_id,
            claim.run_id,
            claim.fence,
            self.message_id,
            self._clock.now(),
            reopen=self.reopen,
        )
        self.attempt = opened.attempt
        self.superseded = opened.superseded
        self.complete = opened.finished

    def _write(self, texts: list[str], finish: bool) -> None:
        if self.complete:
            return
        claim = self._claim
        self._store.write_stream(
            claim.tenant_id,
            claim.run_id,
            claim.fence,
            self.message_id,
            self.attempt,
            texts,
            finish,
            self._clock.now(),
        )
        self.flushes += 1
