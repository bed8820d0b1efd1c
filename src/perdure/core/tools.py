"""Tools a model may call: typed functions with a JSON schema, in a small registry; pure.

A tool's schema comes from its type hints (``str``, ``int``, ``float``, ``bool``, ``list[...]``,
``dict``, ``Literal[...]``, ``X | None``, defaults make a parameter optional) or, when its one
parameter is a pydantic model, from that model. ``side_effect=True`` marks a tool that changes
the world: the round runner (:mod:`perdure.runtime.step.tools`) makes it an effect, so a re-executed
step never repeats it; ``reconcile=`` may say what happened after a crash during the call, and
``retry=`` (a :class:`~perdure.core.retry.RetryPolicy`) sends a call that failed transiently (a
timeout, a rate limit) again after a durable wait instead of asking a person.
Read-only tools run directly, or once per distinct arguments with ``cache=True``.

A tool run as an effect (``side_effect=True`` or ``cache=True``) may declare a parameter named
``idempotency_key`` (:data:`KEY_PARAMETER`): it receives the effect's key, stable across
crashes and re-executions of the step and distinct for every call, to pass to the provider as
its idempotency key (and to find the call again in ``reconcile(request, key)``). The model
never sees that parameter and cannot set it.

Arguments arrive as the model wrote them: a JSON object, or (OpenAI) the raw text of one, which
may be malformed. :func:`lenient_json` reads what can be read (code fences, trailing commas,
a missing closing brace); what cannot becomes a :class:`ToolArgumentError` whose message goes
back to the model as the tool's result, so the model can try again and the run goes on.
"""

from __future__ import annotations

import json
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args, get_origin, overload

from perdure.core.chat import ToolSpec
from perdure.core.errors import DefinitionError, PerdureError
from perdure.core.retry import RetryPolicy
from perdure.core.values import JSON

F = TypeVar("F", bound=Callable[..., Any])
_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")

KEY_PARAMETER = "idempotency_key"
"""The parameter by which a tool run as an effect receives its effect's key."""


class ToolArgumentError(PerdureError):
    """The model's arguments for a tool cannot be read or do not fit its schema."""

    code = "tool_arguments_invalid"
    fix = "the message goes back to the model as the tool's result; it may call again"


def lenient_json(text: str) -> JSON:
    """Parse a model's argument text: strict JSON first, then without code fences, trailing
    commas or missing closing brackets. Raises :class:`ToolArgumentError`."""
    body = text.strip()
    if not body:
        return {}
    try:
        return typing.cast(JSON, json.loads(body))
    except (ValueError, RecursionError):
        pass
    body = re.sub(r"^```(?:json)?\s*|\s*```$", "", body)
    body = re.sub(r",\s*([}\]])", r"\1", body)
    for tail in ("", "}", "]}", '"}', "}}"):
        try:
            return typing.cast(JSON, json.JSONDecoder().raw_decode(body + tail)[0])
        except (ValueError, RecursionError):
            continue
    raise ToolArgumentError(f"the arguments are not JSON: {text[:120]!r}"[:300])


def schema_of(tp: Any) -> dict[str, JSON]:
    """The JSON schema of a type hint."""
    if tp in _TYPES:
        return {"type": _TYPES[tp]}
    origin = get_origin(tp)
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin in (types.UnionType, typing.Union):
        options = [a for a in get_args(tp) if a is not type(None)]
        if len(options) == 1:
            return schema_of(options[0])
        return {"anyOf": [schema_of(a) for a in options]}
    if origin in (list, tuple, set, frozenset) or tp in (list, tuple):
        args = get_args(tp)
        return {"type": "array", **({"items": schema_of(args[0])} if args else {})}
    if origin is dict or tp is dict:
        return {"type": "object"}
    if hasattr(tp, "model_json_schema"):
        return typing.cast(dict[str, JSON], tp.model_json_schema())
    raise DefinitionError(f"a tool parameter of type {tp!r} has no JSON schema here")


@dataclass(frozen=True, slots=True)
class Tool:
    """One tool: see the module docstring. ``model`` is the pydantic model of the single
    parameter, when the tool takes one."""

    name: str
    description: str
    parameters: dict[str, JSON]
    fn: Callable[..., Any]
    side_effect: bool = False
    cache: bool = False
    reconcile: Callable[..., Any] | None = None
    model: Any = None
    takes_key: bool = False
    """The function declares :data:`KEY_PARAMETER` and is given its effect's key."""
    retry: RetryPolicy | None = None
    """How a side-effecting call that failed transiently is tried again (None: a person
    decides)."""

    @property
    def spec(self) -> ToolSpec:
        """The tool as the model sees it."""
        return ToolSpec(self.name, self.description, self.parameters)

    def bind(self, arguments: JSON) -> dict[str, JSON]:
        """The arguments as a checked JSON object (from an object or raw text)."""
        found = lenient_json(arguments) if isinstance(arguments, str) else arguments
        if found is None:
            found = {}
        if not isinstance(found, dict):
            raise ToolArgumentError(f"the arguments must be a JSON object, not {found!r}"[:300])
        if self.model is not None:
            try:
                self.model.model_validate(found)
            except ValueError as exc:  # pydantic's ValidationError is a ValueError
                raise ToolArgumentError(f"tool {self.name}: {exc}"[:1000]) from None
            return found
        props = self.parameters.get("properties")
        props = props if isinstance(props, dict) else {}
        required = self.parameters.get("required")
        missing = [k for k in required or () if isinstance(k, str) and k not in found]
        if missing:
            raise ToolArgumentError(f"tool {self.name} is missing arguments {missing}")
        unknown = sorted(set(found) - set(props))
        if unknown:
            raise ToolArgumentError(f"tool {self.name} has no parameters {unknown}")
        for key, value in found.items():
            expected = props[key].get("type") if isinstance(props[key], dict) else None
            if expected and not _fits(value, str(expected)):
                raise ToolArgumentError(f"tool {self.name}: {key} must be a {expected}")
        return found

    def invoke(self, arguments: dict[str, JSON], key: str | None = None) -> Any:
        """Call the function with arguments from :meth:`bind` (the result may be awaitable),
        and its effect's ``key`` when it declares :data:`KEY_PARAMETER`."""
        given: dict[str, Any] = {KEY_PARAMETER: key} if self.takes_key else {}
        if self.model is not None:
            return self.fn(self.model.model_validate(arguments), **given)
        return self.fn(**arguments, **given)


def _fits(value: JSON, expected: str) -> bool:
    match expected:
        case "string":
            return isinstance(value, str)
        case "integer":
            return isinstance(value, int) and not isinstance(value, bool)
        case "number":
            return isinstance(value, int | float) and not isinstance(value, bool)
        case "boolean":
            return isinstance(value, bool)
        case "array":
            return isinstance(value, list)
        case "object":
            return isinstance(value, dict)
    return True


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    side_effect: bool = False,
    cache: bool = False,
    reconcile: Callable[..., Any] | None = None,
    retry: RetryPolicy | None = None,
) -> Tool:
    """A :class:`Tool` from a typed function (see the module docstring)."""
    tool_name = name or fn.__name__
    if not _NAME.match(tool_name):
        raise DefinitionError(f"tool name {tool_name!r} is not valid", fix="use [A-Za-z0-9_-]")
    if side_effect and cache:
        raise DefinitionError(f"tool {tool_name}: a side-effecting tool cannot be cached")
    if retry is not None and not side_effect:
        raise DefinitionError(
            f"tool {tool_name}: only a side-effecting tool has a retry= policy",
            fix="mark it side_effect=True, or drop retry= (a read-only tool's error goes to "
            "the model)",
        )
    import inspect  # defining a tool loads it; a process that only resumes runs does not

    hints = typing.get_type_hints(fn)
    params = [p for p in inspect.signature(fn).parameters.values() if p.name != "return"]
    takes_key = any(p.name == KEY_PARAMETER for p in params)
    if takes_key and not (side_effect or cache):
        raise DefinitionError(
            f"tool {tool_name}: only a tool run as an effect has a key ({KEY_PARAMETER})",
            fix="mark it side_effect=True (or cache=True), or drop the parameter",
        )
    params = [p for p in params if p.name != KEY_PARAMETER]
    doc = inspect.getdoc(fn) or ""
    text = description if description is not None else doc.split("\n\n")[0].strip()
    if len(params) == 1 and hasattr(hints.get(params[0].name), "model_json_schema"):
        model = hints[params[0].name]
        found = typing.cast(dict[str, JSON], model.model_json_schema())
        return Tool(
            tool_name, text, found, fn, side_effect, cache, reconcile, model, takes_key, retry
        )
    props: dict[str, JSON] = {}
    required: list[JSON] = []
    for p in params:
        if p.name not in hints:
            raise DefinitionError(f"tool {tool_name}: parameter {p.name!r} has no type hint")
        props[p.name] = schema_of(hints[p.name])
        if p.default is inspect.Parameter.empty:
            required.append(p.name)
    schema: dict[str, JSON] = {"type": "object", "properties": props, "required": required}
    return Tool(tool_name, text, schema, fn, side_effect, cache, reconcile, None, takes_key, retry)


class ToolRegistry:
    """The tools an agent offers, by name: ``tools = ToolRegistry()``, then ``@tools.tool`` or
    ``@tools.tool(side_effect=True, reconcile=...)`` on typed functions."""

    def __init__(self, *tools: Tool) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, tool: Tool) -> Tool:
        """Register ``tool``; a name used twice is refused."""
        if tool.name in self._tools:
            raise DefinitionError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool
        return tool

    @overload
    def tool(self, fn: F, /) -> F: ...
    @overload
    def tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        side_effect: bool = False,
        cache: bool = False,
        reconcile: Callable[..., Any] | None = None,
        retry: RetryPolicy | None = None,
    ) -> Callable[[F], F]: ...
    def tool(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        side_effect: bool = False,
        cache: bool = False,
        reconcile: Callable[..., Any] | None = None,
        retry: RetryPolicy | None = None,
    ) -> Any:
        """Register a typed function as a tool; the function itself is returned unchanged."""

        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            made = make_tool(
                f,
                name=name,
                description=description,
                side_effect=side_effect,
                cache=cache,
                reconcile=reconcile,
                retry=retry,
            )
            self.add(made)
            return f

        return register(fn) if fn is not None else register

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def specs(self) -> tuple[ToolSpec, ...]:
        """What the model is told about every tool, in registration order."""
        return tuple(t.spec for t in self._tools.values())

    def __iter__(self) -> typing.Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)
