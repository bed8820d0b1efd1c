"""The serializer a LangGraph saver is given after construction is the one it stores with: an
``EncryptedSerializer`` assigned as LangGraph's own encrypted fixtures assign it, and the
strict-mode allow-list a compiled graph hands its checkpointer (``with_allowlist``). LangGraph's
``InMemorySaver`` is the oracle, in the same test, on both databases."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from pathlib import Path
from typing import Any, TypedDict

import psycopg
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde import _msgpack
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from perdure import FakeClock, Runtime
from perdure.core.errors import GraphCheckpointUnreadableError
from perdure.langgraph import PerdureSaver

SECRET = "card 4111-1111-1111-1111 belongs to Ada"


class AesGcm:
    """LangGraph's ``CipherProtocol`` on AES-GCM (``cryptography``): a random nonce per value."""

    def __init__(self, key: bytes) -> None:
        self.aead = AESGCM(key)

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        nonce = os.urandom(12)
        return "aesgcm", nonce + self.aead.encrypt(nonce, plaintext, None)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        assert ciphername == "aesgcm"
        return self.aead.decrypt(ciphertext[:12], ciphertext[12:], None)


class Note(TypedDict):
    text: str


def secret_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    def remember(state: Note) -> dict[str, Any]:
        return {"text": state["text"] + " (kept)"}

    builder = StateGraph(Note)
    builder.add_node("remember", remember)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", END)
    return builder.compile(checkpointer=saver)


def tables_holding(graph_url: str, needle: bytes) -> dict[str, int]:
    """For every table of the database, read behind the store's back: how many rows hold
    ``needle`` in a column's bytes (``bytea``/BLOB as stored, anything else as its text)."""
    if graph_url.startswith("sqlite:///"):
        conn = sqlite3.connect(graph_url.removeprefix("sqlite:///"))
        query = "SELECT name FROM sqlite_master WHERE type = 'table'"
        tables = {
            t: conn.execute(f'SELECT * FROM "{t}"').fetchall() for (t,) in conn.execute(query)
        }
        conn.close()
    else:
        with psycopg.connect(graph_url) as pg:
            query = (
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'perdure'"
            )
            names = [t for (t,) in pg.execute(query).fetchall()]
            tables = {t: pg.execute(f'SELECT * FROM perdure."{t}"').fetchall() for t in names}
    found = {}
    for table, rows in tables.items():
        hits = sum(1 for row in rows if any(needle in _bytes(v) for v in row))
        if hits:
            found[table] = hits
    return found


def _bytes(value: object) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return str(value).encode()


def stored_bytes(graph_url: str) -> bytes:
    """Every byte of a SQLite database as it lies on disk: the file and its write-ahead log."""
    path = Path(graph_url.removeprefix("sqlite:///"))
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists())


def test_an_encrypted_serializer_assigned_after_construction_keeps_the_secret_out_of_the_database(
    graph_url: str, clock: FakeClock
) -> None:
    cipher = AesGcm(os.urandom(32))
    config = {"configurable": {"thread_id": "t1"}}
    with Runtime(graph_url, clock=clock) as rt:
        saver = PerdureSaver(rt, renew=False)
        saver.serde = EncryptedSerializer(cipher, JsonPlusSerializer())  # as LangGraph's fixture
        graph = secret_graph(saver)
        with saver.hold(config) as held:
            assert graph.invoke({"text": SECRET}, held) == {"text": f"{SECRET} (kept)"}
        assert graph.get_state(config).values == {"text": f"{SECRET} (kept)"}
        stored = rt.store.graphs.list_checkpoints("default", thread_id="t1")
        types = {b.type for c in stored for b in c.blobs if b.type != "empty"}
        types |= {c.checkpoint_type for c in stored}
        assert tables_holding(graph_url, b"belongs to Ada") == {}
        assert tables_holding(graph_url, b"t1"), "the tables were read"
        # the same data cannot be read without the cipher
        plain = PerdureSaver(rt, renew=False)
        with pytest.raises(GraphCheckpointUnreadableError, match="cannot be read"):
            plain.get_tuple(config)
    if graph_url.startswith("sqlite:///"):
        raw = stored_bytes(graph_url)
        assert b"t1" in raw, "the database file was read"
        assert b"4111-1111" not in raw and b"belongs to Ada" not in raw
    assert types and all(t.endswith("+aesgcm") for t in types), types


class Person(BaseModel):
    name: str


@dataclasses.dataclass
class Point:
    x: int


class Typed(TypedDict):
    person: Person
    point: Point


def typed_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    def move(state: Typed) -> dict[str, Any]:
        return {
            "person": Person(name=state["person"].name + "!"),
            "point": Point(state["point"].x + 1),
        }

    builder = StateGraph(Typed)
    builder.add_node("move", move)
    builder.add_edge(START, "move")
    builder.add_edge("move", END)
    return builder.compile(checkpointer=saver)


@pytest.fixture
def strict_msgpack(monkeypatch: pytest.MonkeyPatch) -> None:
    """The process ``LANGGRAPH_STRICT_MSGPACK=true`` makes (LangGraph reads it at import)."""
    monkeypatch.setattr(_msgpack, "STRICT_MSGPACK_ENABLED", True)
    monkeypatch.setattr("langgraph._internal._serde.STRICT_MSGPACK_ENABLED", True)


def typed_round_trip(saver: BaseCheckpointSaver[Any], config: Any) -> dict[str, Any]:
    graph = typed_graph(saver)
    graph.invoke({"person": Person(name="ada"), "point": Point(1)}, config)
    values: dict[str, Any] = graph.get_state(config).values
    return values


@pytest.mark.usefixtures("strict_msgpack")
def test_a_pydantic_model_and_a_dataclass_in_state_come_back_typed_as_on_langgraphs_saver(
    saver: PerdureSaver,
) -> None:
    config = {"configurable": {"thread_id": "t1"}}
    expected = {"person": Person(name="ada!"), "point": Point(2)}
    oracle = typed_round_trip(InMemorySaver(serde=JsonPlusSerializer()), config)
    assert oracle == expected and type(oracle["person"]) is Person
    with saver.hold(config) as held:
        ours = typed_round_trip(saver, held)
    assert ours == oracle
    assert type(ours["person"]) is Person and type(ours["point"]) is Point


@pytest.mark.usefixtures("strict_msgpack")
def test_a_class_the_graph_does_not_declare_stays_refused_as_on_langgraphs_saver(
    saver: PerdureSaver,
) -> None:
    class Loose(TypedDict):
        blob: Any

    def keep(state: Loose) -> dict[str, Any]:
        return {"blob": Point(7)}

    builder = StateGraph(Loose)
    builder.add_node("keep", keep)
    builder.add_edge(START, "keep")
    builder.add_edge("keep", END)
    config = {"configurable": {"thread_id": "t1"}}
    found = []
    for checkpointer in (InMemorySaver(serde=JsonPlusSerializer()), saver):
        graph = builder.compile(checkpointer=checkpointer)
        with saver.hold(config) as held:
            graph.invoke({"blob": None}, held if checkpointer is saver else config)
        found.append(graph.get_state(config).values["blob"])
    assert found == [{"x": 7}, {"x": 7}], "an undeclared class is not rebuilt by either saver"
