"""Durable OpenAI Agents SDK runs: ``pip install 'perdure[openai-agents]'``.

``PerdureRunner(ctx, side_effects={...})`` is the SDK's ``Runner`` inside a perdure step
(``run``, ``run_sync``, ``run_streamed``): its model requests are recorded model calls (replayed
after a crash, charged to the run's budget, streamed to durable token streams), its
side-effecting function tools run exactly once with their idempotency key, handoffs replay with
the replies that asked for them, and tools that need approval map onto ``wait_for_approval``
(:class:`PendingApproval`). See ``docs/frameworks.md``. This package imports the SDK (``agents``);
``import perdure`` never does.
"""

from perdure.core.errors import ConfigError

try:
    import agents  # noqa: F401
except ImportError as exc:  # pragma: no cover - the extra is installed where this is tested
    raise ConfigError(
        f"perdure.openai_agents needs the OpenAI Agents SDK, which is not installed ({exc.name})",
        fix="pip install 'perdure[openai-agents]'",
    ) from exc

from perdure.openai_agents.approvals import PendingApproval
from perdure.openai_agents.runner import PerdureRunner

__all__ = ["PendingApproval", "PerdureRunner"]
