"""State codecs on seed 003's 3.2 MB agent state: orjson (perdure's codec) against ormsgpack,
with the standard library's json (the seed's JSON row) and pickle as references only.

Workload: the state of seed 003 §1.2 — 1,000 dialog messages, 15 tool calls and 200 variable
bindings — built to about 3.2 MB of JSON (messages of ~3 KB, a mix of ASCII and CJK text,
timestamps as ISO strings, nested tool arguments and results). For each codec it prints the
median of ``--runs`` encodes and decodes of the whole state, the encoded size, and whether
decoding untrusted bytes is safe (can it run code or build arbitrary objects?). The perdure row
is the real write path: :class:`perdure.core.serde.StateCodec` encoding the state's top-level
fields (canonical orjson, sorted keys) and decoding them back into the typed state.

Pickle is printed for comparison with the seed's table only: it runs code on decode and is
never a storage format here. A codec is worth adopting only if it beats orjson on both encode
and decode at this size and decodes safely.

Run: ``python benchmarks/codecs.py [--runs 30]`` (ormsgpack comes with the ``bench`` extra;
a codec that is not installed prints "not installed"). Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from perdure.core.serde import StateCodec

SEED = {  # seed 003 §1.2, 3.2 MB state: encode ms, decode ms, size MB
    "json (stdlib)": (215, 180, 3.8),
    "msgpack": (98, 82, 2.9),
    "pickle": (65, 55, 3.1),
    "protobuf": (110, 95, 2.1),
}


@dataclass
class AgentState:
    session_id: str = ""
    dialog_history: list[dict[str, Any]] = field(default_factory=list)
    tool_call_stack: list[dict[str, Any]] = field(default_factory=list)
    execution_stack: list[dict[str, Any]] = field(default_factory=list)
    variable_bindings: dict[str, Any] = field(default_factory=dict)
    memory_snapshot: dict[str, Any] = field(default_factory=dict)
    token_budget: dict[str, int] = field(default_factory=dict)
    updated_at: str = ""


def seed_state() -> AgentState:
    """About 3.2 MB of JSON: 1,000 messages, 15 tool calls, 200 variables."""
    en = "The agent checked the order history and found two refunds pending review. "
    zh = "智能体检查了订单历史并发现两笔待审核的退款。"
    body = (en * 28 + zh * 20)[:2900]
    dialog = [
        {
            "role": "user" if i % 2 else "assistant",
            "content": f"{i}: {body}",
            "timestamp": f"2026-09-18T00:{i // 60 % 60:02d}:{i % 60:02d}+00:00",
            "tokens": 700 + i % 50,
        }
        for i in range(1000)
    ]
    tools = [
        {
            "id": f"call_{i}",
            "name": ["search", "lookup_order", "refund", "send_email"][i % 4],
            "arguments": {"query": f"order {1000 + i}", "filters": {"status": "open", "limit": 20}},
            "result": {"rows": [{"id": j, "amount": 12.5 * j, "note": en} for j in range(8)]},
            "status": "done",
        }
        for i in range(15)
    ]
    variables = {
        f"var_{i}": [i, f"value {i}", {"nested": i * 1.5, "flag": i % 2 == 0}] for i in range(200)
    }
    return AgentState(
        session_id="s-0001",
        dialog_history=dialog,
        tool_call_stack=tools,
        execution_stack=[{"frame": "plan", "line": 42}, {"frame": "act", "line": 7}],
        variable_bindings=variables,
        memory_snapshot={"short": dialog[-5:], "long": [{"fact": en}] * 20},
        token_budget={"used": 712_000, "remaining": 288_000},
        updated_at="2026-09-18T00:00:00+00:00",
    )


def median_ms(fn: Callable[[Any], Any], inputs: list[Any]) -> float:
    """Median time of ``fn`` over ``inputs``, a fresh input each time: a string encoded once
    keeps its UTF-8 form, so encoding the same objects again would be unfairly cheap."""
    times = []
    for value in inputs:
        began = time.perf_counter()
        fn(value)
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def as_dict(state: AgentState) -> dict[str, Any]:
    return {k: getattr(state, k) for k in state.__dataclass_fields__}


Codec = tuple[Callable[[Any], bytes], Callable[[bytes], Any], str]


def codecs() -> dict[str, Codec]:
    """The codecs measured: name -> (encode, decode, whether decoding is safe)."""
    found: dict[str, Codec] = {
        "json (stdlib)": (lambda d: json.dumps(d, ensure_ascii=False).encode(), json.loads, "safe"),
        "orjson": (orjson.dumps, orjson.loads, "safe"),
    }
    try:
        import ormsgpack

        found["ormsgpack"] = (ormsgpack.packb, ormsgpack.unpackb, "safe")
    except ImportError:
        print("ormsgpack: not installed")
    found["pickle (reference)"] = (pickle.dumps, pickle.loads, "UNSAFE: runs code")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    size = len(orjson.dumps(as_dict(seed_state())))
    found = codecs()
    codec = StateCodec(AgentState)
    fields = codec.to_fields(seed_state())
    best: dict[str, tuple[float, float]] = {}
    sizes: dict[str, int] = {}
    for _ in range(args.rounds):  # codecs interleaved, best median of the rounds kept
        for name, (encode, decode, _safety) in found.items():
            raw = encode(as_dict(seed_state()))
            sizes[name] = len(raw)
            enc = median_ms(encode, [as_dict(seed_state()) for _ in range(args.runs)])
            dec = median_ms(decode, [raw] * args.runs)
            old = best.get(name, (enc, dec))
            best[name] = (min(old[0], enc), min(old[1], dec))
        enc = median_ms(codec.to_fields, [seed_state() for _ in range(args.runs)])
        dec = median_ms(codec.from_fields, [fields] * args.runs)
        old = best.get("perdure", (enc, dec))
        best["perdure"] = (min(old[0], enc), min(old[1], dec))
    print(
        f"seed 003 state: {size / 1e6:.2f} MB as JSON; best of {args.rounds} medians of "
        f"{args.runs} runs, ms"
    )
    print(
        f"{'codec':<36}{'encode':>8}{'decode':>8}{'size MB':>9}{'x orjson':>12}  {'decoding':<18}"
        "  seed: encode, decode, size"
    )
    base = best["orjson"]
    for name, (_e, _d, safety) in found.items():
        enc, dec = best[name]
        seed = SEED.get({"ormsgpack": "msgpack", "pickle (reference)": "pickle"}.get(name, name))
        shown = f"{seed[0]} ms, {seed[1]} ms, {seed[2]} MB" if seed else ""
        ratio = f"{enc / base[0]:.2f}/{dec / base[1]:.2f}"
        mb = sizes[name] / 1e6
        print(f"{name:<36}{enc:>8.1f}{dec:>8.1f}{mb:>9.2f}{ratio:>12}  {safety:<18}  {shown}")
    enc, dec = best["perdure"]
    stored = sum(len(v) for v in fields.values()) / 1e6
    ratio = f"{enc / base[0]:.2f}/{dec / base[1]:.2f}"
    label = "perdure StateCodec (orjson, typed)"
    print(f"{label:<36}{enc:>8.1f}{dec:>8.1f}{stored:>9.2f}{ratio:>12}  {'safe':<18}")
    print(f"{'protobuf':<36}{'':>8}{'':>8}{'':>9}{'':>12}  {'(not measured)':<18}  110, 95, 2.1")


if __name__ == "__main__":
    main()
