"""The async half of the checkpointer contract: each ``a``-method runs its sync twin in a worker
thread (``asyncio.to_thread``), so there is one implementation of every method; a write that
carries a person's answer is committed before ``aput_writes`` returns (see there)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.types import RESUME


class ThreadedAsync(BaseCheckpointSaver[str]):
    """``aget_tuple``, ``alist``, ``aput``, ``aput_writes``, ``adelete_thread``,
    ``adelete_for_runs``, ``acopy_thread`` and ``aprune`` on top of the sync methods."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """:meth:`get_tuple`, from async code."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """:meth:`list`, from async code."""
        found = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for tup in found:
            yield tup

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """:meth:`put`, from async code."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> Coroutine[Any, Any, None]:
        """:meth:`put_writes`, from async code. Writes that carry a person's answer (channel
        ``__resume__``: a ``Command(resume=...)``, or the task that consumed it) are committed
        before this returns its awaitable, on the caller's thread: LangGraph's loop asks for
        them where it would only schedule them, and runs the interrupted node right after, so
        no node can act on an answer that is not durable yet. Other writes go to a worker
        thread when awaited."""
        if any(channel == RESUME for channel, _ in writes):
            self.put_writes(config, writes, task_id, task_path)
            return _done()
        return asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """:meth:`delete_thread`, from async code."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """:meth:`delete_for_runs`, from async code."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """:meth:`copy_thread`, from async code."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """:meth:`prune`, from async code."""
        await asyncio.to_thread(lambda: self.prune(thread_ids, strategy=strategy))


async def _done() -> None:
    """An awaitable of a write that is committed already."""
