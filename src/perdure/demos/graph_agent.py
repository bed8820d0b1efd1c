"""The LangGraph demo's agent: a scripted model (no network, no keys) asks to pay an invoice,
a person approves it (``interrupt``), and the ``pay`` tool pays through a provider that keeps
every payment it is handed, duplicates included (:class:`~perdure.demos.ledger.Ledger`).

``build(saver, approval=...)`` compiles the usual agent loop (``agent`` -> ``tools`` ->
``agent``, what ``create_react_agent`` builds) on a checkpointer. The approval is asked inside
the tool (``approval="tool"``: the human-in-the-loop pattern of LangGraph's docs, so the node
that was interrupted is the one that pays) or by an ``approve`` node before the tool node
(``approval="node"``). With ``durable=True`` the tool is a perdure effect
(:func:`perdure.langgraph.effect_tool`) keyed by the thread and the tool call, with a
reconciler that asks the provider what it did under that key; otherwise it is a plain LangChain
tool.

Every model call appends ``model`` to the ``calls`` file and every approval the code acts on
appends ``approved``, so a test or the demo counts them across processes. Crash points:
``PERDURE_CRASH_AT=approved:pay`` exits just after ``interrupt()`` returned the approval,
``after_call:pay`` just after the provider took the payment (a plain tool calls that point
itself; an effect tool reaches perdure's own ``after_call`` point there).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypedDict

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt

from perdure.core.effects import Reconciled
from perdure.demos.ledger import Ledger
from perdure.langgraph import effect_tool
from perdure.runtime.crashpoints import crashpoint

INVOICE: dict[str, Any] = {"amount": 420, "to": "ACME GmbH"}
"""What the model asks to pay."""
QUESTION = "Please pay ACME's invoice of 420 EUR."

Approval = Literal["tool", "node"]


class State(TypedDict):
    """The conversation."""

    messages: Annotated[list[AnyMessage], add_messages]


def tally(path: str, what: str) -> None:
    """Append ``what`` to the file at ``path`` (one line per event)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(what + "\n")


def counts(path: str) -> dict[str, int]:
    """How many times each event was appended to ``path``."""
    found: dict[str, int] = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                found[line.strip()] = found.get(line.strip(), 0) + 1
    except FileNotFoundError:
        pass
    return found


class ScriptedPayer(BaseChatModel):
    """A chat model that asks to pay :data:`INVOICE`, then reports the tool's answer. Its tool
    call id is a digest of the conversation, so a model called again on the same messages
    asks for the same call."""

    calls: str
    """The file each call appends ``model`` to."""

    @property
    def _llm_type(self) -> str:
        return "scripted-payer"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedPayer:
        """The script knows its one tool."""
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        tally(self.calls, "model")
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=f"Done: {last.content}")
        else:
            text = "\n".join(str(m.content) for m in messages)
            call_id = "call_" + hashlib.sha256(text.encode()).hexdigest()[:16]
            call = {"name": "pay", "args": dict(INVOICE), "id": call_id, "type": "tool_call"}
            reply = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _ask(amount: int, to: str, calls: str) -> bool:
    decision = interrupt({"question": f"Pay {amount} EUR to {to}?", "amount": amount, "to": to})
    tally(calls, "approved")
    crashpoint("approved", "pay")
    return bool(decision == "yes")


def pay_tool(ledger: str, calls: str, *, ask: bool, durable: bool) -> BaseTool:
    """The ``pay`` tool: asks a person first when ``ask``; a perdure effect when ``durable``."""
    provider = Ledger(ledger)

    def payment(amount: int, to: str, key: str) -> dict[str, Any]:
        if ask and not _ask(amount, to, calls):
            return {"paid": False}
        receipt = provider.apply("payment", {"amount": amount, "to": to}, op_id=key)
        return {"paid": True, "receipt": receipt["id"]}

    if durable:

        def pay(amount: int, to: str, idempotency_key: str) -> dict[str, Any]:
            """Pay an invoice of ``amount`` EUR to ``to``."""
            return payment(amount, to, idempotency_key)

        def reconcile(request: Any, key: str) -> Reconciled:
            found = provider.lookup(key)
            if found is None:
                return Reconciled.not_found()
            return Reconciled.confirmed({"paid": True, "receipt": found["id"]})

        return effect_tool(pay, reconcile=reconcile)

    def plain(amount: int, to: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Pay an invoice of ``amount`` EUR to ``to``."""
        out = payment(amount, to, tool_call_id)
        crashpoint("after_call", "pay")
        return out

    return StructuredTool.from_function(plain, name="pay")


def build(
    saver: Any,
    *,
    ledger: str,
    calls: str,
    durable: bool,
    approval: Approval = "tool",
) -> Any:
    """The compiled agent on ``saver`` (see the module's docstring)."""
    model = ScriptedPayer(calls=calls)

    def agent(state: State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def approve(state: State) -> Command[Literal["tools", "__end__"]]:
        if _ask(INVOICE["amount"], INVOICE["to"], calls):
            return Command(goto="tools")
        return Command(goto="__end__", update={"messages": [AIMessage(content="Not paid.")]})

    g = StateGraph(State)
    g.add_node("agent", agent)
    g.add_node(
        "tools", ToolNode([pay_tool(ledger, calls, ask=approval == "tool", durable=durable)])
    )
    g.add_edge(START, "agent")
    if approval == "node":
        g.add_node("approve", approve)
        g.add_conditional_edges("agent", tools_condition, {"tools": "approve", END: END})
    else:
        g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=saver)


def payments(ledger: str) -> int:
    """How many payments the provider made."""
    return Ledger(ledger).count("payment")
