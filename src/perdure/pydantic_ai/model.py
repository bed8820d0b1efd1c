"""The model that serves each of the agent's requests, as a perdure model call: a
``WrapperModel`` whose ``request`` (and ``request_stream``) is the effect
``<prefix>.model.<n>`` (target ``model``, operation the model id), numbered in call order in the
step occurrence.

A re-executed step gets each recorded reply without a request; a request cut by a crash is made
again; failures are classified as for ``ctx.model_call`` (rate limits, timeouts, 5xx retried
with durable waits); the reply's tokens and cost are charged to the run's budget, and a spent
budget stops the step before the request. A streamed request writes its text to the reply's
durable token stream as it arrives.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelResponse, ModelResponseStreamEvent
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext

from perdure.core.chat import Pricing
from perdure.core.model import JSON
from perdure.core.retry import RetryPolicy
from perdure.pydantic_ai.records import cost_of, fingerprint, reply_from, reply_json, usage_of
from perdure.pydantic_ai.streamed import RecordedStream, text_of
from perdure.runtime.step.frameworks import FrameworkCalls, FrameworkReply


class DurableModel(WrapperModel):
    """See the module docstring."""

    def __init__(
        self,
        wrapped: Any,
        calls: FrameworkCalls,
        *,
        prefix: str = "pydantic_ai",
        pricing: Pricing | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        super().__init__(wrapped)
        self.calls = calls
        self.prefix = prefix
        self.pricing = pricing
        self.retry = retry

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Make (or replay) one request."""
        request = fingerprint(self.model_id, messages, model_settings, model_request_parameters)

        async def call() -> FrameworkReply:
            response = await self.wrapped.request(
                messages, model_settings, model_request_parameters
            )
            return self._reply(response)

        recorded = await self.calls.model_call(
            self.calls.next_name(f"{self.prefix}.model"),
            operation=self.model_name,
            request=request,
            call=call,
            retry=self.retry,
        )
        return reply_from(recorded.reply.reply)

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        """Make (or replay) one streamed request: its events reach the agent as they arrive
        (a replayed one gives its recorded reply as one event per part)."""
        request = fingerprint(self.model_id, messages, model_settings, model_request_parameters)

        async def stream() -> AsyncIterator[ModelResponseStreamEvent | FrameworkReply]:
            async with self.wrapped.request_stream(
                messages, model_settings, model_request_parameters, run_context
            ) as streamed:
                async for event in streamed:
                    yield event
                yield self._reply(streamed.get())

        events = self.calls.stream_model_call(
            self.calls.next_name(f"{self.prefix}.model"),
            operation=self.model_name,
            request=request,
            stream=stream,
            text=text_of,
            retry=self.retry,
        )
        yield RecordedStream(model_request_parameters, events, self, self.calls.now())

    def _reply(self, response: ModelResponse) -> FrameworkReply:
        data: JSON = reply_json(response)
        return FrameworkReply(data, usage_of(response), cost_of(response, self.pricing))
