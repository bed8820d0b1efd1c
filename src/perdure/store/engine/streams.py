"""Durable token streams: open an attempt, append a batch of entries, read them back.
:class:`StreamsEngine`, a part of the kernel's :class:`~perdure.store.engine.engine.Engine`;
contracts in
:class:`~perdure.store.base.Store`.

Every write first updates the stream's head row (``streams``), guarded by the run's fence, the
attempt and an unfinished stream: that one conditional update hands out the sequence numbers,
fences the write and, on PostgreSQL, makes writers of one message take turns on its row. The
entries of a batch then go in with one statement, whatever their number.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from perdure.core.errors import StreamClosedError
from perdure.core.model import JSON, RunStatus
from perdure.core.records import EventType
from perdure.core.stream_state import StreamInfo, StreamOpened
from perdure.core.streams import StreamEntry, StreamEventKind
from perdure.store.driver import Tx
from perdure.store.engine.base import EngineBase
from perdure.store.engine.tx import event, fetch
from perdure.store.rows import guard_failure
from perdure.store.watch import Watch


def _announce(tx: Tx, ids: dict[str, str], fence: int, attempt: int, at: Any) -> None:
    """A ``message_stream`` event of the run: its reply's stream opened (in the transaction
    that opens it, so a reader of the run's events learns the message id before any token)."""
    data: JSON = {"message_id": ids["message_id"], "attempt": attempt}
    event(tx, ids, EventType.MESSAGE_STREAM, None, fence, data, at)


class StreamsEngine(EngineBase):
    """Durable token streams. Part of :class:`~perdure.store.engine.engine.Engine`."""

    def open_stream(
        self,
        tenant_id: str,
        run_id: str,
        fence: int,
        message_id: str,
        now: datetime,
        *,
        reopen: bool = False,
    ) -> StreamOpened:
        """See :meth:`StreamsStore.open_stream`."""
        at = self.driver.stamp(now)
        ids = {"tenant_id": tenant_id, "message_id": message_id, "run_id": run_id}
        with self.driver.write() as tx:
            if tx.one("insert_stream", {**ids, "fence": fence, "now": at}) is not None:
                _announce(tx, ids, fence, 1, at)
                return StreamOpened(1, superseded=False, finished=False)
            head = tx.one("lock_stream", ids)
            if head is None:  # no stream, and the insert was refused: the run is not ours
                raise _refused(tx, ids, fence, None)
            if head["run_id"] != run_id:
                raise StreamClosedError(
                    f"message {message_id} is streamed by run {head['run_id']}, not {run_id}",
                    fix="give each message its own id",
                )
            finished = bool(head["finished"])
            if finished and not reopen:
                return StreamOpened(int(head["attempt"]), superseded=False, finished=True)
            cut = int(head["attempt"])
            kinds = [StreamEventKind.SUPERSEDED]
            array = self.driver.array
            _append(
                tx, array, ids, fence, cut, cut + 1, kinds, [""], False, at, was_finished=finished
            )
            attempt = cut + 1
            _announce(tx, ids, fence, attempt, at)
        return StreamOpened(attempt, superseded=True, finished=False)

    def write_stream(
        self,
        tenant_id: str,
        run_id: str,
        fence: int,
        message_id: str,
        attempt: int,
        texts: Sequence[str],
        finish: bool,
        now: datetime,
    ) -> int:
        """See :meth:`StreamsStore.write_stream`."""
        kinds = [StreamEventKind.DELTA] * len(texts)
        texts = list(texts)
        if finish:
            kinds.append(StreamEventKind.FINISHED)
            texts.append("")
        ids = {"tenant_id": tenant_id, "message_id": message_id, "run_id": run_id}
        at = self.driver.stamp(now)
        with self.driver.write() as tx:
            return _append(
                tx, self.driver.array, ids, fence, attempt, attempt, kinds, texts, finish, at
            )

    def stream_entries(
        self, tenant_id: str, message_id: str, *, after: int = 0, limit: int = 1000
    ) -> list[StreamEntry]:
        """See :meth:`StreamsStore.stream_entries`."""
        params = {"tenant_id": tenant_id, "message_id": message_id, "after": after, "limit": limit}
        return [
            StreamEntry(
                message_id,
                int(r["seq"]),
                int(r["attempt"]),
                StreamEventKind(r["kind"]),
                r["text"],
            )
            for r in fetch(self.driver, "list_stream_entries", params)
        ]

    def stream_info(self, tenant_id: str, message_id: str) -> StreamInfo | None:
        """See :meth:`StreamsStore.stream_info`."""
        found = fetch(self.driver, "get_stream", {"tenant_id": tenant_id, "message_id": message_id})
        if not found:
            return None
        r = found[0]
        return StreamInfo(
            tenant_id,
            message_id,
            r["run_id"],
            int(r["attempt"]),
            int(r["last_seq"]),
            bool(r["finished"]),
            RunStatus(r["run_status"]).terminal,
        )

    def watch_streams(self) -> Watch:
        """See :meth:`StreamsStore.watch_streams`: PostgreSQL LISTEN on ``perdure_stream`` (the
        payload is ``tenant/message``); on SQLite a watch that never waits."""
        return self.driver.watch("listen_streams")


def _append(
    tx: Tx,
    array: Callable[[Sequence[str]], Any],
    ids: dict[str, str],
    fence: int,
    attempt: int,
    new_attempt: int,
    kinds: Sequence[StreamEventKind],
    texts: Sequence[str],
    finish: bool,
    at: Any,
    *,
    was_finished: bool = False,
) -> int:
    """Take numbers for ``kinds`` (under the fence and the attempt) and insert the entries."""
    if not kinds:
        head = tx.one("get_stream", ids)
        return 0 if head is None else int(head["last_seq"])
    params = {
        **ids,
        "fence": fence,
        "attempt": attempt,
        "new_attempt": new_attempt,
        "count": len(kinds),
        "finish": finish,
        "was_finished": was_finished,
        "now": at,
    }
    row = tx.one("advance_stream", params)
    if row is None:
        raise _refused(tx, ids, fence, attempt)
    last = int(row["last_seq"])
    tx.run(
        "insert_stream_entries",
        {
            "tenant_id": ids["tenant_id"],
            "message_id": ids["message_id"],
            "first": last - len(kinds) + 1,
            "attempt": new_attempt,
            "kinds": array([str(k) for k in kinds]),
            "texts": array(list(texts)),
        },
    )
    return last


def _refused(tx: Tx, ids: dict[str, str], fence: int, attempt: int | None) -> Exception:
    """Why a stream write matched no row: the run's lease or end first, then the stream."""
    run = tx.one("get_run", {"tenant_id": ids["tenant_id"], "run_id": ids["run_id"]})
    if run is None or run["fence"] != fence or RunStatus(run["status"]).terminal:
        return guard_failure(run, ids, fence, -1)
    head = tx.one("get_stream", ids)
    message = ids["message_id"]
    if head is None:
        return StreamClosedError(f"message {message} has no stream; open it first")
    if head["run_id"] != ids["run_id"]:
        return StreamClosedError(f"message {message} is streamed by run {head['run_id']}")
    if head["finished"]:
        return StreamClosedError(f"message {message} is finished; its stream takes no writes")
    return StreamClosedError(
        f"attempt {attempt} of message {message} was superseded by attempt {head['attempt']}"
    )
