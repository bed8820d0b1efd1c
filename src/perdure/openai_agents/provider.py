"""The run's ``ModelProvider`` with every model it gives recorded (see
:mod:`perdure.openai_agents.model`)."""

from __future__ import annotations

from collections.abc import Callable

from agents.models.interface import Model, ModelProvider


class DurableProvider(ModelProvider):
    """``get_model(name)`` of the wrapped provider, as ``record(model, name)`` wraps it."""

    def __init__(self, wrapped: ModelProvider, record: Callable[[Model, str], Model]) -> None:
        self.wrapped = wrapped
        self._record = record

    def get_model(self, model_name: str | None) -> Model:
        """The wrapped provider's model for ``model_name``, recorded."""
        return self._record(self.wrapped.get_model(model_name), model_name or "default")

    async def aclose(self) -> None:
        """Close the wrapped provider."""
        await self.wrapped.aclose()
