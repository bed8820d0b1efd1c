"""LangGraph's own checkpointer conformance suite (langgraph-checkpoint-conformance), every
capability, base and extended, for both savers on both databases: once through the async API
the suite calls, and once through the sync methods (a thin saver whose async methods call
them)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from perdure.langgraph import AsyncPerdureSaver, PerdureSaver

SUITE_SIZE = 81
"""Tests in langgraph-checkpoint-conformance 0.0.2, all capabilities together."""


class SyncThrough(BaseCheckpointSaver[str]):
    """Sends every async call of the suite to the sync method of ``inner``."""

    def __init__(self, inner: PerdureSaver) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.inner.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for tup in self.inner.list(config, filter=filter, before=before, limit=limit):
            yield tup

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self.inner.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.inner.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.inner.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.inner.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.inner.prune(thread_ids, strategy=strategy)

    def get_next_version(self, current: str | None, channel: None = None) -> str:
        return self.inner.get_next_version(current, channel)


def run_suite(name: str, factory: Any) -> dict[str, tuple[int, int]]:
    registered = checkpointer_test(name=name)(factory)
    report = asyncio.run(validate(registered))
    counts = {cap: (r.tests_passed, r.tests_failed) for cap, r in report.results.items()}
    failures = [f for r in report.results.values() for f in r.failures]
    assert not failures, "\n".join(failures)
    assert {c.value for c in ALL_CAPABILITIES} == {
        cap for cap, r in report.results.items() if r.detected and r.passed
    }, f"not every capability was detected and passed: {report.to_dict()}"
    assert sum(p for p, _ in counts.values()) == SUITE_SIZE
    print(f"{name}: {report.conformance_level()} {counts}")
    return counts


@pytest.mark.parametrize("kind", ["PerdureSaver", "AsyncPerdureSaver"])
def test_the_async_api_passes_every_capability_of_the_conformance_suite(
    graph_url: str, kind: str
) -> None:
    async def factory() -> AsyncIterator[BaseCheckpointSaver[str]]:
        if kind == "AsyncPerdureSaver":
            async with AsyncPerdureSaver.from_conn_string(graph_url) as saver:
                await saver.asetup()
                yield saver
        else:
            with PerdureSaver.from_conn_string(graph_url) as sync_saver:
                sync_saver.setup()
                yield sync_saver

    run_suite(f"{kind}-async-api", factory)


@pytest.mark.parametrize("kind", ["PerdureSaver", "AsyncPerdureSaver"])
def test_the_sync_api_passes_every_capability_of_the_conformance_suite(
    graph_url: str, kind: str
) -> None:
    def opened() -> Iterator[PerdureSaver]:
        with PerdureSaver.from_conn_string(graph_url) as saver:
            saver.setup()
            yield saver

    async def factory() -> AsyncIterator[BaseCheckpointSaver[str]]:
        if kind == "AsyncPerdureSaver":
            async with AsyncPerdureSaver.from_conn_string(graph_url) as saver:
                await saver.asetup()
                yield SyncThrough(saver)
        else:
            for saver in opened():
                yield SyncThrough(saver)

    run_suite(f"{kind}-sync-api", factory)
