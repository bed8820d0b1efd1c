"""Semantic search over long-term memory: which fields of an item are embedded, by which
function, and how close an item is to a query.

A :class:`MemoryIndex` names an embedding function the application supplies (any model, local
or remote: perdure never calls a network by itself), the vectors' dimension and the fields to
embed. A put given an index stores one vector per text found at those fields beside the item,
in the same write; a search given a query embeds it and orders the items by cosine similarity,
an item's score being the best of its vectors. Paths follow LangGraph's index config:
``"$"`` (the whole value as JSON), ``"text"``, ``"doc.title"``, ``"tags[*]"``, ``"tags[0]"``.
"""

from __future__ import annotations

import json
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from perdure.core.errors import InvalidInputError
from perdure.core.memory import MemoryVector
from perdure.core.values import JSON

Embed = Callable[[list[str]], Sequence[Sequence[float]]]
"""An embedding function: texts in, one vector of ``dims`` numbers per text out, in order."""

MAX_DIMS = 65_536
"""The most dimensions a vector may have."""

_TOKEN = re.compile(r"[^.\[\]]+|\[[^\]]*\]")


@dataclass(frozen=True, slots=True)
class MemoryIndex:
    """How memory items are embedded for semantic search (``ctx.memory.put(..., index=)``,
    ``ctx.memory.search(..., query=, index=)``, ``PerdureStore(index=)``).

    ``embed`` is called with a list of texts and returns one vector per text; ``dims`` is the
    vectors' length (a vector of another length is refused); ``fields`` are the paths whose
    text is embedded (default ``("$",)``: the whole value)."""

    embed: Embed
    dims: int
    fields: tuple[str, ...] = field(default=("$",))

    def __post_init__(self) -> None:
        if not callable(self.embed):
            raise InvalidInputError(
                "a memory index needs an embedding function",
                fix="pass embed=fn, a function from a list of texts to a list of vectors",
            )
        dims = self.dims
        if isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= MAX_DIMS:
            raise InvalidInputError(
                f"a memory index's dims must be 1 to {MAX_DIMS}, not {dims!r}",
                fix="pass the length of the vectors the embedding function returns",
            )
        fields = self.fields
        if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
            raise InvalidInputError(
                f"a memory index's fields must be a list of paths, not {fields!r}",
                fix='pass fields=["text"] or fields=["$"] for the whole value',
            )
        object.__setattr__(self, "fields", tuple(fields))

    def vectors(self, value: JSON, fields: Sequence[str] | None = None) -> tuple[MemoryVector, ...]:
        """The vectors of ``value``'s texts at ``fields`` (default: the index's), embedded in
        one call; none when no field holds text."""
        found = texts_at(value, self.fields if fields is None else tuple(fields))
        if not found:
            return ()
        vectors = self.embedded([text for _, text in found])
        return tuple(MemoryVector(path, v) for (path, _), v in zip(found, vectors, strict=True))

    def query(self, text: str) -> tuple[float, ...]:
        """The vector of a search's query text."""
        if not isinstance(text, str) or not text:
            raise InvalidInputError(
                "a memory search query must be non-empty text",
                fix="pass query='what to look for', or no query for a plain search",
            )
        return self.embedded([text])[0]

    def embedded(self, texts: list[str]) -> list[tuple[float, ...]]:
        """The embedding function's vectors for ``texts``, checked: as many as texts, each of
        ``dims`` finite numbers."""
        got = list(self.embed(list(texts)))
        if len(got) != len(texts):
            raise InvalidInputError(
                f"the embedding function returned {len(got)} vectors for {len(texts)} texts",
                fix="return one vector per text, in the order given",
            )
        return [checked_vector(v, self.dims) for v in got]


def checked_vector(vector: Sequence[float], dims: int) -> tuple[float, ...]:
    """``vector`` as a tuple of floats when it has ``dims`` finite numbers."""
    try:
        out = tuple(float(x) for x in vector)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"an embedding is not a list of numbers: {exc}",
            fix="return each vector as a list of floats",
        ) from exc
    if len(out) != dims:
        raise InvalidInputError(
            f"an embedding has {len(out)} dimensions where the index says {dims}",
            fix="set dims= to the length of the vectors the embedding function returns",
        )
    if not all(math.isfinite(x) for x in out):
        raise InvalidInputError(
            "an embedding holds NaN or infinity", fix="return finite numbers from the embedding"
        )
    return out


def texts_at(value: JSON, fields: Sequence[str]) -> list[tuple[str, str]]:
    """``(path, text)`` for each text of ``value`` at ``fields``: a string as it is, a number
    or boolean as text, an object or list as JSON, nothing for a missing field or null; a path
    that finds several texts (``tags[*]``) names them ``path.0``, ``path.1``..."""
    out: list[tuple[str, str]] = []
    for path in fields:
        if path == "$":
            out.append((path, _json(value)))
            continue
        texts = _at(value, _TOKEN.findall(path))
        if len(texts) == 1:
            out.append((path, texts[0]))
        else:
            out.extend((f"{path}.{i}", text) for i, text in enumerate(texts))
    return out


def _at(value: JSON, tokens: list[str]) -> list[str]:
    if not tokens:
        if isinstance(value, bool):
            return [str(value)]
        if isinstance(value, str | int | float):
            return [str(value)]
        return [] if value is None else [_json(value)]
    token, rest = tokens[0], tokens[1:]
    if token.startswith("["):
        if not isinstance(value, list):
            return []
        inner = token[1:-1]
        if inner == "*":
            return [t for v in value for t in _at(v, rest)]
        try:
            i = int(inner)
        except ValueError:
            return []
        i = i + len(value) if i < 0 else i
        return _at(value[i], rest) if 0 <= i < len(value) else []
    if not isinstance(value, dict) or token not in value:
        return []
    return _at(value[token], rest)


def _json(value: JSON) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine similarity of two vectors of one length (0 when either is all zeros)."""
    if len(a) != len(b):
        raise ValueError(f"vectors of {len(a)} and {len(b)} numbers cannot be compared")
    na, nb = math.hypot(*a), math.hypot(*b)
    return sum(map(operator.mul, a, b)) / (na * nb) if na > 0 and nb > 0 else 0.0


def best_score(query: Sequence[float], vectors: Sequence[Sequence[float]]) -> float | None:
    """The best cosine similarity of ``query`` with ``vectors`` (None when there are none, or
    when their length differs from the query's: an item indexed by another index)."""
    qn = math.hypot(*query)
    best: float | None = None
    for v in vectors:
        if len(v) != len(query):
            continue
        vn = math.hypot(*v)
        score = sum(map(operator.mul, query, v)) / (qn * vn) if qn > 0 and vn > 0 else 0.0
        if best is None or score > best:
            best = score
    return best
