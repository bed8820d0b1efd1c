"""How an agent framework's tools run inside a step: declared by name, since the framework
defines the tools (a function, an MCP server) and perdure only sees their calls.

* a **side-effecting** tool's call is an effect named by its call id: a re-executed step gets the
  recorded result, a call cut by a crash is reconciled (``reconcile[name](request, key)``) or
  handed to a person, never repeated blindly;
* a **cached** read-only tool's call is an effect named by its arguments: the same call in the
  step (or in a re-execution of it) runs once;
* any other tool simply runs again when the step runs again.

A side-effecting or cached tool may take a parameter named ``idempotency_key``
(:data:`~perdure.core.tools.KEY_PARAMETER`): it receives the effect's key, and the model neither
sees it in the tool's schema nor sets it. This is the convention of perdure's own tools.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from perdure.core.effect_calls import Reconcile
from perdure.core.errors import DefinitionError
from perdure.core.model import JSON
from perdure.core.tools import KEY_PARAMETER


class ToolKind(StrEnum):
    """How one tool's calls are recorded."""

    SIDE_EFFECT = "side_effect"
    CACHED = "cached"
    PLAIN = "plain"


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """Which of an agent's tools are side-effecting (with their reconcilers) and which are
    cached; the others are plain read-only tools. Build it with :meth:`of`."""

    side_effects: frozenset[str] = frozenset()
    cached: frozenset[str] = frozenset()
    reconcile: Mapping[str, Reconcile] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        side_effects: Iterable[str] = (),
        cached: Iterable[str] = (),
        reconcile: Mapping[str, Reconcile] | None = None,
    ) -> ToolPolicy:
        """The policy for tool names given as a framework integration takes them; a name that is
        both side-effecting and cached, or a reconciler for a tool that is not side-effecting,
        is refused."""
        effects, reads = _names(side_effects, "side_effects"), _names(cached, "cached")
        both = effects & reads
        if both:
            raise DefinitionError(
                f"tools {sorted(both)} are declared both side-effecting and cached",
                fix="a tool with a side effect cannot be cached: keep it in side_effects only",
            )
        found = dict(reconcile or {})
        stray = set(found) - effects
        if stray:
            raise DefinitionError(
                f"reconcilers given for {sorted(stray)}, which are not side-effecting tools",
                fix="add those tools to side_effects, or drop their reconcilers",
            )
        return cls(effects, reads, found)

    def kind(self, tool: str) -> ToolKind:
        """How calls of ``tool`` are recorded."""
        if tool in self.side_effects:
            return ToolKind.SIDE_EFFECT
        if tool in self.cached:
            return ToolKind.CACHED
        return ToolKind.PLAIN

    def keyed_schema(self, tool: str, schema: Mapping[str, Any]) -> dict[str, Any] | None:
        """``schema`` (a tool's JSON schema of arguments) without the ``idempotency_key``
        parameter, or None when the tool does not take one. A plain tool that takes one is
        refused: only an effect has a key."""
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or KEY_PARAMETER not in properties:
            return None
        if self.kind(tool) is ToolKind.PLAIN:
            raise DefinitionError(
                f"tool {tool!r} takes {KEY_PARAMETER!r} but is neither side-effecting nor cached",
                fix=f"declare {tool!r} in side_effects (or cached) to give it an effect's key",
            )
        out = dict(schema)
        out["properties"] = {k: v for k, v in properties.items() if k != KEY_PARAMETER}
        required = schema.get("required")
        if isinstance(required, list):
            out["required"] = [r for r in required if r != KEY_PARAMETER]
        return out


def without_key(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Tool arguments without the ``idempotency_key`` a call receives (what is recorded)."""
    return {k: v for k, v in arguments.items() if k != KEY_PARAMETER}


def call_request(tool: str, arguments: JSON) -> dict[str, JSON]:
    """The recorded request of one tool call."""
    return {"tool": tool, "arguments": arguments}


def _names(names: Iterable[str], what: str) -> frozenset[str]:
    if isinstance(names, str):
        raise DefinitionError(
            f"{what} must be a collection of tool names, not the string {names!r}",
            fix=f"write {what}={{{names!r}}}",
        )
    found = frozenset(names)
    bad = [n for n in found if not isinstance(n, str) or not n]
    if bad:
        raise DefinitionError(f"{what} holds {bad!r}, which are not tool names")
    return found
