"""A held invocation records a ``Command(resume=value)`` before its graph starts.

LangGraph calls a run's callbacks (``on_chain_start``, with the input) on the caller's thread
before its loop loads the checkpoint, and waits for a handler that runs inline. The config a
hold returns carries a :class:`ResumeRecorder`, so ``graph.invoke(Command(resume=value),
held)`` commits the answer (:meth:`~perdure.langgraph.PerdureSaver.record_resume`) before any
node can act on it — what :func:`~perdure.langgraph.resume` does, through the plain call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from perdure.core.errors import GraphNotInterruptedError, InvalidInputError

Record = Callable[[RunnableConfig, Any], bool]
"""Records an answer for the thread a config names (``PerdureSaver.record_resume``)."""


class ResumeRecorder(BaseCallbackHandler):
    """Commits the answer of the ``Command(resume=value)`` a held invocation starts with.

    An answer LangGraph would not file as the thread's one pending answer (nothing waits,
    several interrupts wait, answers keyed by interrupt id) is left to LangGraph, as without a
    hold. Any other refusal (a different answer recorded first, a hold taken over) stops the
    invocation before it starts."""

    raise_error = True
    run_inline = True

    def __init__(self, record: Record, config: RunnableConfig) -> None:
        self.record = record
        self.config = config

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Record the answer when the run is a graph started with ``Command(resume=...)``."""
        if not isinstance(inputs, Command) or inputs.resume is None:
            return
        try:
            self.record(self.config, inputs.resume)
        except (GraphNotInterruptedError, InvalidInputError):
            return


def with_recorder(config: RunnableConfig, record: Record) -> RunnableConfig:
    """``config`` whose callbacks also hold a :class:`ResumeRecorder` for its thread."""
    recorder = ResumeRecorder(record, config)
    given = config.get("callbacks")
    callbacks: Any
    if given is None:
        callbacks = [recorder]
    elif isinstance(given, BaseCallbackManager):
        callbacks = given.copy()
        callbacks.add_handler(recorder, inherit=True)
    else:
        callbacks = [*given, recorder]
    return {**config, "callbacks": callbacks}
