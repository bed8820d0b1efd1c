"""What a step context offers for the agent layer: model calls (``model_call``,
``amodel_call``), the context window to send (``context``, ``acontext``) and ``tool_call``.
A part of :class:`~perdure.runtime.context.Context`; ``docs/agents.md`` tells the whole."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast, overload

from perdure.core.errors import DefinitionError
from perdure.core.model import JSON, Message, ToolCall
from perdure.runtime.stream_sink import DEFAULT_BATCH

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from perdure.core.chat import ChatModel, Pricing, ToolSpec
    from perdure.core.retry import RetryPolicy
    from perdure.core.streams import StreamSink
    from perdure.core.tokens import TokenCounter
    from perdure.core.tools import ToolRegistry
    from perdure.runtime.context import Context, StepHost
    from perdure.runtime.model_calls import AsyncModelStream, CallSpec, ModelReply, ModelStream


class AgentCalls:
    """Model calls and context windows for a step (mixed into ``Context``)."""

    _host: StepHost
    step: str
    _model_calls: int

    @overload
    def model_call(
        self,
        model: ChatModel,
        messages: Sequence[Message] | None = None,
        *,
        stream: Literal[False] = False,
        tools: ToolRegistry | Iterable[ToolSpec] = (),
        name: str | None = None,
        params: dict[str, JSON] | None = None,
        retry: RetryPolicy | None = None,
        pricing: Pricing | None = None,
    ) -> ModelReply: ...
    @overload
    def model_call(
        self,
        model: ChatModel,
        messages: Sequence[Message] | None = None,
        *,
        stream: Literal[True],
        tools: ToolRegistry | Iterable[ToolSpec] = (),
        name: str | None = None,
        params: dict[str, JSON] | None = None,
        retry: RetryPolicy | None = None,
        pricing: Pricing | None = None,
    ) -> ModelStream: ...
    def model_call(
        self,
        model: ChatModel,
        messages: Sequence[Message] | None = None,
        *,
        stream: bool = False,
        tools: ToolRegistry | Iterable[ToolSpec] = (),
        name: str | None = None,
        params: dict[str, JSON] | None = None,
        retry: RetryPolicy | None = None,
        pricing: Pricing | None = None,
    ) -> ModelReply | ModelStream:
        """Call a model as a recorded effect and return its :class:`ModelReply`.

        ``messages`` defaults to :attr:`messages` (pass :meth:`context` to send less). The
        request (model id, messages, tool specs, ``params``) is hashed and recorded under the
        effect key of ``name`` (default ``model.1``, ``model.2``… in call order), the reply
        with its token usage and cost (``pricing``, or the model's own) after the call. A
        re-executed step gets the recorded reply without calling the model; a call cut short by
        a crash is made again and the lost attempt's estimated cost is added. The cost and
        tokens are charged to the run's budget; an exhausted budget stops the step *before* the
        call. Rate limits, timeouts and 5xx are retried with durable waits under ``retry``
        (default :data:`perdure.runtime.model_calls.MODEL_RETRY`), honouring ``Retry-After``.

        ``stream=True`` returns a :class:`~perdure.runtime.model_calls.ModelStream`: iterate it
        for the deltas, then read ``.reply``. The reply's message id is fixed before the call.
        """
        if self._host.bridge.on_loop():
            raise DefinitionError(
                f"step {self.step!r} is async def: ctx.model_call would block every run",
                fix="write `await ctx.amodel_call(...)` in async steps",
            )
        from perdure.runtime.model_calls import ModelStream, call_steps, drain

        spec = self._call_spec(model, messages, stream, tools, name, params, retry, pricing)
        steps = call_steps(self._host, spec, self._stream_sink)
        return ModelStream(steps) if stream else drain(steps)

    @overload
    def amodel_call(
        self,
        model: ChatModel,
        messages: Sequence[Message] | None = None,
        *,
        stream: Literal[False] = False,
        tools: ToolRegistry | Iterable[ToolSpec] = (),
        name: str | None = None,
        params: dict[str, JSON] | None = None,
        retry: RetryPolicy | None = None,
        pricing: Pricing | None = None,
    ) -> Coroutine[Any, Any, ModelReply]: ...
    @overload
    def amodel_call(
        self,
        model: ChatModel,
        messages: Sequence[Message] | None = None,
        *,
        stream: Literal[True],
        tools: ToolRegistry | Iterable[ToolSpec] = (),
        name: str | None = None,
        params: dict[str, JSON] | None = None,
        retry: RetryPolicy | None = None,
        pricing: Pricing | None = None,
    ) -> AsyncModelStream: ...
    def amodel_call(
        self,
        model: ChatModel,
        messages: Sequence[Message] | None = None,
        *,
        stream: bool = False,
        tools: ToolRegistry | Iterable[ToolSpec] = (),
        name: str | None = None,
        params: dict[str, JSON] | None = None,
        retry: RetryPolicy | None = None,
        pricing: Pricing | None = None,
    ) -> Coroutine[Any, Any, ModelReply] | AsyncModelStream:
        """:meth:`model_call` for ``async def`` steps: ``reply = await ctx.amodel_call(...)``,
        or ``async for delta in ctx.amodel_call(..., stream=True)``. Same records; the
        bookkeeping runs in the run's execution thread, an async client on the event loop."""
        if not self._host.bridge.active:
            raise DefinitionError(
                f"ctx.amodel_call is for async def steps; step {self.step!r} is a plain function",
                fix="write `ctx.model_call(...)` in plain steps",
            )
        from perdure.runtime.model_calls import AsyncModelStream, call_steps, drain

        spec = self._call_spec(model, messages, stream, tools, name, params, retry, pricing)
        bridge, host, sink = self._host.bridge, self._host, self._stream_sink
        if stream:
            return AsyncModelStream(bridge, lambda: call_steps(host, spec, sink))
        return bridge.call(lambda: drain(call_steps(host, spec, sink)))

    def context(
        self,
        *,
        recent: int = 20,
        max_tokens: int | None = None,
        summarize: ChatModel | None = None,
        counter: TokenCounter | None = None,
    ) -> list[Message]:
        """The messages to send to a model: the thread's prompt (leading system messages), the
        latest summary, the ``recent`` messages (whole tool rounds; this round's tool results
        always), within ``max_tokens`` by ``counter`` (default: ``tiktoken`` if installed, else
        an estimate). With ``summarize``, messages that fall out of the window are summarized
        by that model (a recorded model call, so a crash never summarizes twice) and the
        summary is appended to the thread, marked with the range it covers."""
        if self._host.bridge.on_loop():
            raise DefinitionError(
                "ctx.context would block the event loop in an async def step",
                fix="write `await ctx.acontext(...)` in async steps",
            )
        from perdure.runtime.rebuild import rebuild_context

        return rebuild_context(cast("Context", self), recent, max_tokens, summarize, counter)

    async def acontext(
        self,
        *,
        recent: int = 20,
        max_tokens: int | None = None,
        summarize: ChatModel | None = None,
        counter: TokenCounter | None = None,
    ) -> list[Message]:
        """:meth:`context` for ``async def`` steps."""
        from perdure.runtime.rebuild import rebuild_context

        return await self._host.bridge.call(
            lambda: rebuild_context(cast("Context", self), recent, max_tokens, summarize, counter)
        )

    def _call_spec(
        self,
        model: ChatModel,
        messages: Sequence[Message] | None,
        stream: bool,
        tools: ToolRegistry | Iterable[ToolSpec],
        name: str | None,
        params: dict[str, JSON] | None,
        retry: RetryPolicy | None,
        pricing: Pricing | None,
    ) -> CallSpec:
        """The next model call of this step, named ``name`` or ``model.N`` in call order (what
        :meth:`model_call` and :meth:`amodel_call` share)."""
        from perdure.runtime.model_calls import call_spec

        self._model_calls += 1
        label = name or f"model.{self._model_calls}"
        ctx = cast("Context", self)
        return call_spec(ctx, model, messages, stream, tools, label, params, retry, pricing)

    def _stream_sink(self, message_id: str) -> StreamSink:
        """Where a streamed model call writes its deltas: a new attempt of the reply's durable
        token stream. An earlier attempt is superseded, even a finished one: a call that
        crashed after its reply was streamed, before its outcome was recorded, is made again."""
        return self._host.open_stream(message_id, DEFAULT_BATCH, reopen=True)


def tool_call(id: str, name: str, arguments: JSON = None) -> ToolCall:
    """Shorthand for :class:`perdure.core.model.ToolCall`."""
    return ToolCall(id, name, arguments)
