"""What a drill compares of a run's result: the result with the ids that providers hand out
fresh on every call put aside.

A real provider answers every call with a new id (a charge ``ch_3Mm…``, a completion
``chatcmpl-…``, a message id), so a drill's run and the uninterrupted reference never carry the
same one, although the workflow held. Before two results are compared, every such id in them is
replaced by where it came from: a value that an effect of the same run recorded — its receipt,
a string of its result under an id-like key (``id``, ``*_id``, ``receipt``…) or an id-like
string of its result (no space, at least 8 characters, letters and digits) — becomes
``<STEP/EFFECT receipt>`` or ``<STEP/EFFECT:PATH>``, and the run's own id becomes ``<run>``.
Numbers, words and every value no effect recorded are compared as they are, so a light that
moved twice or an amount charged twice still shows; whether a provider was paid twice is told
by the effects' call counts, never by the ids.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

from perdure.core.effects import EffectRecord
from perdure.core.model import JSON

ID_KEY = re.compile(r"(^|_)(id|ids|receipt|receipt_id|key)$|Id$", re.IGNORECASE)
"""Keys under which a provider's result holds an id."""

ID_VALUE = re.compile(r"^(?=.*[A-Za-z])(?=.*\d)\S{8,}$")
"""A string that looks like an id: no space, 8 characters or more, letters and digits."""

RUN = "<run>"
"""What the run's own id is replaced by."""


def provider_values(records: Sequence[EffectRecord]) -> dict[str, str]:
    """The provider ids the run's effects recorded (``records``, oldest first), each with the
    placeholder that names where it came from; the first effect that recorded a value names
    it."""
    found: dict[str, str] = {}
    for record in records:
        where = f"{record.step}/{record.name}"
        if isinstance(record.receipt, str) and record.receipt:
            found.setdefault(record.receipt, f"<{where} receipt>")
        for path, key, value in _strings(record.result, "$", None):
            if (key is not None and ID_KEY.search(key)) or ID_VALUE.match(value):
                found.setdefault(value, f"<{where}:{path}>")
    return found


def normalised(result: JSON, values: Mapping[str, str], run_id: str) -> JSON:
    """``result`` with every provider id of ``values`` (and ``run_id``) in its strings replaced
    by its placeholder; the shape and every other value are kept."""
    replacements = sorted({**values, run_id: RUN}.items(), key=lambda kv: -len(kv[0]))
    pattern = re.compile("|".join(re.escape(value) for value, _ in replacements if value))
    by_value = dict(replacements)

    def walk(value: JSON) -> JSON:
        if isinstance(value, str):
            return pattern.sub(lambda m: by_value[m.group(0)], value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    return walk(result)


def _strings(value: JSON, path: str, key: str | None) -> Iterator[tuple[str, str | None, str]]:
    """Every string leaf of ``value``: its path, the key it sits under and the string."""
    if isinstance(value, str):
        yield path, key, value
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _strings(item, f"{path}[{n}]", key)
    elif isinstance(value, dict):
        for k, item in value.items():
            yield from _strings(item, f"{path}.{k}", k)
