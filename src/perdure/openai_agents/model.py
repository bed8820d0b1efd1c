"""Each model request of the agent loop as a perdure model call: a ``Model`` around the real one
whose ``get_response`` is the effect ``<prefix>.model.<n>`` (target ``model``, operation the
model's name), numbered in call order in the step occurrence.

A re-executed step gets each recorded reply without a request, so the tool calls and handoffs
the model asked for are the same ones; a request cut by a crash is made again; failures are
classified as for ``ctx.model_call``; tokens and cost are charged to the run's budget, and a
spent budget stops the step before the request. ``stream_response`` streams the request's
events as they arrive and writes its text to the reply's durable token stream; a replayed one
gives its recorded ``response.completed`` event.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agents.agent_output import AgentOutputSchemaBase
from agents.handoffs import Handoff
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.model_settings import ModelSettings
from agents.models.interface import Model, ModelTracing
from agents.tool import Tool
from openai.types.responses import ResponseCompletedEvent, ResponseTextDeltaEvent
from openai.types.responses.response_prompt_param import ResponsePromptParam

from perdure.core.chat import Pricing, TokenUsage
from perdure.core.retry import RetryPolicy
from perdure.openai_agents.records import cost_of, fingerprint, reply_from, reply_json, usage_of
from perdure.runtime.step.frameworks import FrameworkCalls, FrameworkReply, Recorded


class DurableModel(Model):
    """See the module docstring."""

    def __init__(
        self,
        wrapped: Model,
        name: str,
        calls: FrameworkCalls,
        *,
        prefix: str = "openai_agents",
        pricing: Pricing | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.wrapped = wrapped
        self.name = name
        self.calls = calls
        self.prefix = prefix
        self.pricing = pricing
        self.retry = retry

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        """Make (or replay) one request."""
        request = fingerprint(
            self.name, system_instructions, input, model_settings, tools, output_schema, handoffs
        )

        async def call() -> FrameworkReply:
            response = await self.wrapped.get_response(
                system_instructions,
                input,
                model_settings,
                tools,
                output_schema,
                handoffs,
                tracing,
                previous_response_id=previous_response_id,
                conversation_id=conversation_id,
                prompt=prompt,
            )
            return FrameworkReply(
                reply_json(response), usage_of(response), cost_of(response, self.pricing)
            )

        recorded = await self.calls.model_call(
            self.calls.next_name(f"{self.prefix}.model"),
            operation=self.name,
            request=request,
            call=call,
            retry=self.retry,
        )
        return reply_from(recorded.reply.reply)

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        """Stream (or replay) one request."""
        request = fingerprint(
            self.name, system_instructions, input, model_settings, tools, output_schema, handoffs
        )

        async def stream() -> AsyncIterator[TResponseStreamEvent | FrameworkReply]:
            completed: ResponseCompletedEvent | None = None
            async for event in self.wrapped.stream_response(
                system_instructions,
                input,
                model_settings,
                tools,
                output_schema,
                handoffs,
                tracing,
                previous_response_id=previous_response_id,
                conversation_id=conversation_id,
                prompt=prompt,
            ):
                if isinstance(event, ResponseCompletedEvent):
                    # the SDK reads the reply from this event: give it as a replay will
                    completed = ResponseCompletedEvent.model_validate(_dumped(event))
                    yield completed
                    continue
                yield event
            if completed is None:
                raise ConnectionError("the model's stream ended before response.completed")
            usage = completed.response.usage
            tokens = TokenUsage(
                usage.input_tokens if usage else 0, usage.output_tokens if usage else 0
            )
            cost = self.pricing.cost(tokens) if self.pricing is not None else 0.0
            yield FrameworkReply(_dumped(completed), tokens, cost)

        async for item in self.calls.stream_model_call(
            self.calls.next_name(f"{self.prefix}.model"),
            operation=self.name,
            request=request,
            stream=stream,
            text=_text_of,
            retry=self.retry,
        ):
            if isinstance(item, Recorded):
                if item.replayed:
                    yield ResponseCompletedEvent.model_validate(item.reply.reply)
                continue
            yield item

    async def close(self) -> None:
        """Close the wrapped model."""
        await self.wrapped.close()


def _dumped(event: ResponseCompletedEvent) -> dict[str, Any]:
    """The event as it is recorded (by alias, the fields that were set)."""
    return event.model_dump(mode="json", by_alias=True, exclude_unset=True)


def _text_of(event: Any) -> str:
    return event.delta if isinstance(event, ResponseTextDeltaEvent) else ""
