"""``PerdureSaver``: a LangGraph checkpointer on perdure's store (SQLite or PostgreSQL).

Every method is written once, synchronously, on :class:`~perdure.store.base.Store` calls; the
``a``-methods run the same code in a worker thread (``asyncio.to_thread``), so the sync and the
async API cannot drift apart. :class:`AsyncPerdureSaver` is the same saver with an async
``from_conn_string``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Self, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.types import INTERRUPT, RESUME

from perdure.core.errors import (
    GraphCheckpointUnreadableError,
    GraphInterruptAnsweredError,
    GraphNotInterruptedError,
    InvalidInputError,
)
from perdure.core.graph import (
    GraphBlob,
    GraphCheckpoint,
    GraphPut,
    GraphWrite,
    PruneStrategy,
)
from perdure.core.ids import checked_id
from perdure.langgraph.aio import ThreadedAsync
from perdure.langgraph.answers import (
    NULL_TASK_ID,
    needs_write,
    pending_interrupts,
    recorded_answer,
)
from perdure.langgraph.calls import Calls
from perdure.langgraph.codec import EMPTY, Codec, default_serde, json_bytes, json_object, preview
from perdure.langgraph.hold import Held, Holds, held_by, where
from perdure.langgraph.recorder import with_recorder
from perdure.runtime.admin.parts import DEFAULT_TENANT, Tenant, tenant_of
from perdure.runtime.runtime import Runtime
from perdure.store.base import Store


class PerdureSaver(ThreadedAsync):
    """A LangGraph checkpointer that stores each thread as a perdure run.

    ``runtime`` gives the store, the clock, the lease length and the keyring (seals apply as
    for perdure runs). ``tenant`` scopes every thread. ``serde`` is LangGraph's serializer
    protocol (default: strict ``JsonPlusSerializer``, never pickle; widen msgpack types with
    ``allowed_msgpack_modules``). ``keep_last`` is the retention setting: each namespace of a
    thread keeps its newest ``keep_last`` checkpoints, trimmed in the same transaction as each
    put (None keeps all). ``renew`` keeps a held thread's lease alive in the background.
    """

    def __init__(
        self,
        runtime: Runtime,
        *,
        tenant: Tenant = DEFAULT_TENANT,
        serde: SerializerProtocol | None = None,
        allowed_msgpack_modules: Iterable[tuple[str, ...]] = (),
        allow_pickle: bool = False,
        keep_last: int | None = None,
        renew: bool = True,
    ) -> None:
        super().__init__(serde=serde or default_serde(allowed_msgpack_modules))
        if keep_last is not None and keep_last < 1:
            raise InvalidInputError(
                f"keep_last must be at least 1 (got {keep_last})",
                fix="pass keep_last=None to keep every checkpoint",
            )
        self.runtime = runtime
        self.store: Store = runtime.store
        self.tenant = tenant = tenant_of(tenant)
        self.keep_last = keep_last
        self.allow_pickle = allow_pickle
        self._codec: tuple[SerializerProtocol, Codec] | None = None
        """The codec :attr:`codec` made last, with the serializer it was made with."""
        self.holds = Holds(runtime, tenant, renew=renew)
        self.calls = Calls()
        """Every call into the store in flight, from any thread: :meth:`close` waits for them."""
        self.owns_runtime = False
        """Whether :meth:`close` closes the runtime too (a saver of ``from_conn_string``)."""

    @property
    def codec(self) -> Codec:
        """How values are stored and read: always through the serializer the saver has *now*.
        LangGraph assigns ``serde`` after construction (``saver.serde = EncryptedSerializer(...)``,
        and a compiled graph's strict-mode allow-list through :meth:`with_allowlist`, which
        clones the saver with a new ``serde``), so the codec is made again whenever ``serde``
        is another object than the one it was made with."""
        serde = self.serde
        made = self._codec
        if made is None or made[0] is not serde:
            keyring = self.runtime.parts.keyring
            codec = Codec(serde, keyring, self.tenant, allow_pickle=self.allow_pickle)
            made = self._codec = (serde, codec)
        return made[1]

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    @contextmanager
    def from_conn_string(cls, url: str, **options: Any) -> Iterator[PerdureSaver]:
        """A saver on a new runtime for database ``url`` (``sqlite:///path`` or
        ``postgresql://...``), closed when the block ends. Call :meth:`setup` once."""
        saver = cls._owning(Runtime(url, migrate=False), options)
        try:
            yield saver
        finally:
            saver.close()

    @classmethod
    def _owning(cls, runtime: Runtime, options: dict[str, Any]) -> Self:
        """A saver that closes ``runtime`` when it is closed (``runtime`` closed at once when
        the options are refused)."""
        try:
            saver = cls(runtime, **options)
        except BaseException:
            runtime.close()
            raise
        saver.owns_runtime = True
        return saver

    def close(self) -> None:
        """Refuse new calls (:class:`~perdure.langgraph.closed.SaverClosedError`), wait for the
        calls in flight to end — a write LangGraph left running in a worker thread when a
        graph run was cancelled commits or fails first — and then close the runtime when the
        saver opened it (``from_conn_string``). Idempotent."""
        self.calls.close()
        if self.owns_runtime:
            self.owns_runtime = False
            self.runtime.close()

    async def aclose(self) -> None:
        """:meth:`close`, from async code (the wait happens in a worker thread)."""
        await asyncio.to_thread(self.close)

    @classmethod
    def from_store(cls, store: Store, **options: Any) -> PerdureSaver:
        """A saver on an open store (not migrated here; see :meth:`setup`)."""
        return cls(Runtime(store, migrate=False), **options)

    def setup(self) -> None:
        """Apply perdure's migrations (idempotent), the graph checkpoint tables among them."""
        with self.calls.one():
            self.store.migrate(self.runtime.clock.now())

    async def asetup(self) -> None:
        """:meth:`setup`, from async code."""
        await asyncio.to_thread(self.setup)

    # -- ownership ------------------------------------------------------------------------------

    @contextmanager
    def hold(self, config: RunnableConfig) -> Iterator[RunnableConfig]:
        """Hold the config's thread for one invocation: ``with saver.hold(cfg) as cfg:
        graph.invoke(x, cfg)``. A second invocation on a held thread gets
        :class:`~perdure.core.errors.GraphThreadBusyError`; once another invocation took the
        thread over, this one's writes get :class:`~perdure.core.errors.LeaseLostError`.
        ``graph.invoke(Command(resume=value), cfg)`` on the held config commits the answer
        (:meth:`record_resume`) before the graph starts."""
        held, lease = self._take(config)
        try:
            yield with_recorder(held, self.record_resume)
        finally:
            self._give_back(lease)

    @asynccontextmanager
    async def ahold(self, config: RunnableConfig) -> AsyncIterator[RunnableConfig]:
        """:meth:`hold` for ``await graph.ainvoke(x, cfg)``."""
        held, lease = await asyncio.to_thread(self._take, config)
        try:
            yield with_recorder(held, self.record_resume)
        finally:
            await asyncio.to_thread(self._give_back, lease)

    def _take(self, config: RunnableConfig) -> tuple[RunnableConfig, Held]:
        with self.calls.one():
            return self.holds.take(config)

    def _give_back(self, lease: Held) -> None:
        with self.calls.one():
            self.holds.give_back(lease)

    # -- the checkpointer contract --------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint the config names (the thread's newest without ``checkpoint_id``).
        Raises :class:`~perdure.core.errors.GraphThreadQuarantinedError` for a quarantined
        thread and :class:`~perdure.core.errors.GraphCheckpointUnreadableError` (quarantining
        the thread) for a checkpoint that cannot be read: never None for those."""
        thread, ns, checkpoint_id = where(config)
        with self.calls.one():
            found = self.store.graphs.get_checkpoint(self.tenant, thread, ns, checkpoint_id)
            return None if found is None else self._tuple(found)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of the config's thread (and namespace, when the config
        names one), whose metadata matches ``filter``, older than ``before``."""
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise InvalidInputError(f"limit must be a whole number >= 0, not {limit!r}")
        conf = (config or {}).get("configurable", {})
        thread = (
            None if conf.get("thread_id") is None else checked_id(str(conf["thread_id"]), "thread")
        )
        ns = conf.get("checkpoint_ns")
        if thread is not None and conf.get("checkpoint_id"):
            one = self.get_tuple(cast(RunnableConfig, config))
            yield from [] if one is None else [one]
            return
        with self.calls.one():  # read and decoded here: no call stays open across a yield
            found = [
                self._tuple(row)
                for row in self.store.graphs.list_checkpoints(
                    self.tenant,
                    thread_id=thread,
                    checkpoint_ns=ns,
                    metadata_filter=None if filter is None else json_bytes(filter, "filter"),
                    before=(before or {}).get("configurable", {}).get("checkpoint_id"),
                    limit=limit,
                )
            ]
        yield from found

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint with the values of the channels in ``new_versions`` (the others
        are read from the blobs of their versions). Guarded by the thread's hold."""
        thread, ns, parent = where(config)
        body = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        values = checkpoint.get("channel_values", {})
        codec = self.codec
        blobs = []
        for channel, version in new_versions.items():
            v = str(version)
            if channel in values:
                place = codec.blob_place(ns, channel, v)
                blobs.append(GraphBlob(channel, v, *codec.dump(place, values[channel])))
            else:
                blobs.append(GraphBlob(channel, v, EMPTY, None))
        ctype, cbytes = codec.dump(codec.checkpoint_place(ns, checkpoint["id"]), body)
        meta = get_serializable_checkpoint_metadata(config, metadata)
        conf = config.get("configurable", {})
        graph_run = meta.get("run_id")
        versions = {k: str(v) for k, v in checkpoint.get("channel_versions", {}).items()}
        put = GraphPut(
            tenant_id=self.tenant,
            thread_id=thread,
            checkpoint_ns=ns,
            checkpoint_id=checkpoint["id"],
            parent_id=parent,
            graph_run=None if graph_run is None else str(graph_run),
            checkpoint_type=ctype,
            checkpoint=cbytes,
            metadata=json_bytes(meta, "metadata"),
            channel_versions=json_bytes(versions, "channel versions"),
            blobs=tuple(blobs),
            keep_last=self.keep_last,
            event={
                "checkpoint_id": checkpoint["id"],
                "step": _int(meta.get("step")),
                "source": _str(meta.get("source")),
                "durability": _durability(conf, meta),
            },
        )
        with self.calls.one():
            self.store.graphs.put_checkpoint(put, held_by(config), self.runtime.clock.now())
        return {
            "configurable": {
                "thread_id": thread,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes on the config's checkpoint. Idempotent per (task,
        index); writes of special channels (errors, interrupts, resumes) replace earlier ones.
        An interrupt is recorded on the thread's run (``perdure show``)."""
        replace = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        with self.calls.one():
            self._put_writes(config, writes, task_id, task_path, replace=replace)

    def record_resume(
        self, config: RunnableConfig, value: Any, *, interrupt_id: str | None = None
    ) -> bool:
        """Record ``value`` as the answer to the interrupt the config's thread waits for, and
        return once it is durable: the write LangGraph makes for ``Command(resume=value)``
        (null task, channel ``__resume__``) on the thread's newest checkpoint, so the next
        ``graph.invoke(None, config)`` — in this process or another after a crash — hands it
        to the interrupt. Returns True when written, False when this answer was recorded
        already. The first answer stands: another one raises
        :class:`~perdure.core.errors.GraphInterruptAnsweredError`; a thread that waits for no
        answer (or whose waiting interrupt is not ``interrupt_id``, when given) raises
        :class:`~perdure.core.errors.GraphNotInterruptedError`. Guarded by the config's hold
        like every write."""
        with self.calls.one():
            return self._record_resume(config, value, interrupt_id)

    def _record_resume(self, config: RunnableConfig, value: Any, interrupt_id: str | None) -> bool:
        thread, ns, checkpoint_id = where(config)
        if ns:
            raise InvalidInputError(
                "an answer is recorded on the thread, not on a subgraph's namespace",
                fix="drop checkpoint_ns from the config: the answer reaches subgraphs",
            )
        found = self.get_tuple({"configurable": {"thread_id": thread}})
        if found is None:
            raise GraphNotInterruptedError(f"thread {thread} has no checkpoint to answer")
        newest = found.config["configurable"]["checkpoint_id"]
        if checkpoint_id is not None and checkpoint_id != newest:
            raise InvalidInputError(
                f"checkpoint {checkpoint_id} is not thread {thread}'s newest ({newest})",
                fix="drop checkpoint_id: an answer goes to the newest checkpoint",
            )
        if not needs_write(found.pending_writes or [], value, self._same, interrupt_id):
            return False
        conf = {**(config.get("configurable") or {}), **found.config["configurable"]}
        self._put_writes({**config, "configurable": conf}, [(RESUME, value)], NULL_TASK_ID)
        # the first answer stands: the write above kept an answer recorded meanwhile
        again = self.get_tuple(found.config)
        _, stored = recorded_answer(again.pending_writes or [] if again is not None else [])
        if not self._same(stored, value):
            raise GraphInterruptAnsweredError(
                f"thread {thread}: another answer ({stored!r}) was recorded first"
            )
        return True

    def waiting(self, config: RunnableConfig) -> tuple[Sequence[Any], bool]:
        """What the config's thread waits for: the interrupts of its newest checkpoint that
        wait for an answer (LangGraph's ``Interrupt``: ``id``, ``value``), and whether an
        answer is recorded for them already (the next run hands it over)."""
        thread, _, _ = where(config)
        found = self.get_tuple({"configurable": {"thread_id": thread}})
        writes = [] if found is None else found.pending_writes or []
        return pending_interrupts(writes), recorded_answer(writes)[0]

    def _same(self, a: Any, b: Any) -> bool:
        """Whether two answers are the same once stored (a tuple reads back as a list)."""
        return bool(a == b) or self.serde.dumps_typed(a) == self.serde.dumps_typed(b)

    def _put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
        *,
        replace: bool = False,
    ) -> None:
        thread, ns, checkpoint_id = where(config)
        if checkpoint_id is None:
            raise InvalidInputError("put_writes needs a config with a checkpoint_id")
        records = []
        interrupts: list[Any] = []
        codec = self.codec
        for idx, (channel, value) in enumerate(writes):
            i = WRITES_IDX_MAP.get(channel, idx)
            place = codec.write_place(ns, checkpoint_id, task_id, i)
            records.append(GraphWrite(task_id, i, channel, *codec.dump(place, value), task_path))
            if channel == INTERRUPT:
                interrupts.extend(value if isinstance(value, (list, tuple)) else [value])
        self.store.graphs.put_writes(
            self.tenant,
            thread,
            ns,
            checkpoint_id,
            records,
            held_by(config),
            self.runtime.clock.now(),
            replace=replace,
            interrupts=[_interrupt(x) for x in interrupts] if interrupts else None,
        )

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint, blob and write of the thread (the run row stays). A
        quarantined thread is set RUNNING again: deleting it is the decision to start over."""
        thread = checked_id(str(thread_id), "thread")
        with self.calls.one():
            self.store.graphs.delete_thread(self.tenant, thread, self.runtime.clock.now())
            self.holds.reopen(thread)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) made by these LangGraph runs."""
        ids = [checked_id(str(r), "run id") for r in run_ids]
        with self.calls.one():
            self.store.graphs.delete_runs(self.tenant, ids, self.runtime.clock.now())

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's whole history (every namespace, blobs, writes) to another thread."""
        source = checked_id(str(source_thread_id), "thread")
        target = checked_id(str(target_thread_id), "thread")
        with self.calls.one():
            self.store.graphs.copy_thread(self.tenant, source, target, self.runtime.clock.now())

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep the newest checkpoint of each namespace (``keep_latest``) or none (``delete``)
        of each thread, with the writes and blobs they still need."""
        try:
            chosen = PruneStrategy(strategy)
        except ValueError as exc:
            raise InvalidInputError(
                f"unknown prune strategy {strategy!r}", fix="use 'keep_latest' or 'delete'"
            ) from exc
        threads = [checked_id(str(t), "thread") for t in thread_ids]
        with self.calls.one():
            self.store.graphs.prune_threads(self.tenant, threads, chosen, self.runtime.clock.now())

    def get_next_version(self, current: str | None, channel: None = None) -> str:
        """The next channel version: a zero-padded counter (so versions sort as text) and a
        random tie-breaker, as LangGraph's PostgreSQL saver makes them."""
        if current is None:
            counter = 0
        elif isinstance(current, int):
            counter = current
        else:
            counter = int(str(current).split(".")[0])
        return f"{counter + 1:032}.{random.random():016}"

    # -- reading --------------------------------------------------------------------------------

    def _tuple(self, found: GraphCheckpoint) -> CheckpointTuple:
        try:
            return self._decode(found)
        except GraphCheckpointUnreadableError as exc:
            self.holds.quarantine(found.thread_id, found.checkpoint_ns, found.checkpoint_id, exc)
            raise

    def _decode(self, found: GraphCheckpoint) -> CheckpointTuple:
        c, ns = self.codec, found.checkpoint_ns
        place = c.checkpoint_place(ns, found.checkpoint_id)
        checkpoint = c.load(place, found.checkpoint_type, found.checkpoint)
        if not isinstance(checkpoint, dict):
            raise GraphCheckpointUnreadableError(f"{place} does not hold a checkpoint")
        checkpoint["channel_values"] = {
            b.channel: c.load(c.blob_place(ns, b.channel, b.version), b.type, b.data)
            for b in found.blobs
            if b.type != EMPTY
        }
        writes = [
            (
                w.task_id,
                w.channel,
                c.load(c.write_place(ns, found.checkpoint_id, w.task_id, w.idx), w.type, w.data),
            )
            for w in found.writes
        ]
        try:
            metadata = json_object(found.metadata)
        except ValueError as exc:
            raise GraphCheckpointUnreadableError(f"{place}: metadata is not JSON") from exc
        conf = {"thread_id": found.thread_id, "checkpoint_ns": ns}
        parent = None
        if found.parent_id:
            parent = cast(
                RunnableConfig, {"configurable": {**conf, "checkpoint_id": found.parent_id}}
            )
        return CheckpointTuple(
            config={"configurable": {**conf, "checkpoint_id": found.checkpoint_id}},
            checkpoint=cast(Checkpoint, checkpoint),
            metadata=cast(CheckpointMetadata, metadata),
            parent_config=parent,
            pending_writes=writes,
        )


class AsyncPerdureSaver(PerdureSaver):
    """:class:`PerdureSaver` built from async code: ``async with
    AsyncPerdureSaver.from_conn_string(url) as saver: await saver.asetup()``."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(  # type: ignore[override]
        cls, url: str, **options: Any
    ) -> AsyncIterator[AsyncPerdureSaver]:
        """A saver on a new runtime for database ``url``, closed when the block ends."""
        runtime = await asyncio.to_thread(Runtime, url, migrate=False)
        saver = cls._owning(runtime, options)
        try:
            yield saver
        finally:
            await saver.aclose()


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _durability(conf: Mapping[str, Any], meta: Mapping[str, Any]) -> str | None:
    """The durability mode of the invocation that put a checkpoint: LangGraph passes it only
    when ``invoke``/``stream`` was given ``durability=``; otherwise the mode is its default,
    ``async``. A checkpoint of ``update_state`` was written by no invocation (None)."""
    mode = _str(conf.get("__pregel_durability"))
    if mode is None and meta.get("source") != "update":
        return "async"
    return mode


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _interrupt(value: Any) -> dict[str, Any]:
    return {
        "id": _str(getattr(value, "id", None)),
        "value": preview(getattr(value, "value", value)),
    }
