"""A streamed request as pydantic-ai reads it: the events of the live stream as they arrive
(the request runs as a recorded model call, see :mod:`perdure.pydantic_ai.model`), then the
recorded reply, which is what the run keeps (the same on every execution of the step). A
replayed request has no live events: its recorded reply is given one event per part."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

from pydantic_ai.messages import (
    FinalResultEvent,
    ModelResponse,
    ModelResponseStreamEvent,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
)
from pydantic_ai.models import CompletedStreamedResponse, Model, StreamedResponse
from pydantic_ai.models import ModelRequestParameters as Parameters

from perdure.pydantic_ai.records import reply_from
from perdure.runtime.step.frameworks import Recorded


class RecordedStream(StreamedResponse):
    """See the module docstring."""

    def __init__(
        self,
        model_request_parameters: Parameters,
        events: AsyncIterator[ModelResponseStreamEvent | Recorded],
        model: Model,
        started: datetime,
    ) -> None:
        super().__init__(model_request_parameters)
        self._events = events
        self._model = model
        self._response: ModelResponse | None = None
        self._started = started

    def __aiter__(self) -> AsyncIterator[ModelResponseStreamEvent]:
        if self._event_iterator is None:
            self._event_iterator = self._relay()
        return self._event_iterator

    async def _relay(self) -> AsyncIterator[ModelResponseStreamEvent]:
        live = False
        async for item in self._events:
            if isinstance(item, Recorded):
                self._response = reply_from(item.reply.reply)
                if not live:  # replayed: the record, one event per part
                    async for event in CompletedStreamedResponse(
                        self._response,
                        model_request_parameters=self.model_request_parameters,
                        replay_events=True,
                    ):
                        self._keep(event)
                        yield event
                continue
            live = True
            self._keep(item)
            yield item
        self._finished = True

    def _keep(self, event: ModelResponseStreamEvent) -> None:
        if isinstance(event, FinalResultEvent):
            self.final_result_event = event
        self._parts_manager.apply_event(event)

    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:
        return
        yield  # pragma: no cover - events come through __aiter__

    async def close_stream(self) -> None:
        """Nothing to close here: the recorded call runs to its end either way."""

    def get(self) -> ModelResponse:
        """The recorded reply once the stream is over (the same on every execution), else
        what arrived so far."""
        if self._response is not None:
            return self._response
        return super().get()

    @property
    def usage(self) -> Any:
        """The reply's usage (what arrived so far until the stream is over)."""
        if self._response is not None:
            return self._response.usage
        return super().usage

    @property
    def model_name(self) -> str:
        """The model's name."""
        return self._model.model_name

    @property
    def provider_name(self) -> str | None:
        """The provider's name."""
        return self._model.system

    @property
    def provider_url(self) -> str | None:
        """The provider's base URL."""
        return self._model.base_url

    @property
    def timestamp(self) -> datetime:
        """When the reply was made."""
        return self._response.timestamp if self._response is not None else self._started


def text_of(event: ModelResponseStreamEvent) -> str:
    """The reply text an event adds (written to the durable token stream)."""
    if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
        return event.part.content
    if isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
        return event.delta.content_delta
    return ""
