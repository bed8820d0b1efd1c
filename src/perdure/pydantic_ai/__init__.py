"""Durable pydantic-ai agents: ``pip install 'perdure[pydantic-ai]'``.

Run any ``pydantic_ai.Agent`` inside a perdure step with
``capabilities=[PerdureDurability(ctx, side_effects={...})]``: its model requests are recorded
model calls (replayed after a crash, charged to the run's budget, streamed to durable token
streams), its side-effecting tools run exactly once with their idempotency key, and a tool that
needs a person's approval maps onto ``wait_for_approval`` (:class:`PendingApproval`), a call
deferred to an external system onto ``wait_for_signal`` (:class:`PendingCalls`). See
``docs/frameworks.md``. This package imports pydantic-ai; ``import perdure`` never does.
"""

from perdure.core.errors import ConfigError

try:
    import pydantic_ai  # noqa: F401
except ImportError as exc:  # pragma: no cover - the extra is installed where this is tested
    raise ConfigError(
        f"perdure.pydantic_ai needs pydantic-ai, which is not installed ({exc.name})",
        fix="pip install 'perdure[pydantic-ai]'",
    ) from exc

from perdure.pydantic_ai.approvals import PendingApproval
from perdure.pydantic_ai.deferred import PendingCalls
from perdure.pydantic_ai.durability import PerdureDurability

__all__ = ["PendingApproval", "PendingCalls", "PerdureDurability"]
