"""The validator of a tool that takes ``idempotency_key``: the model does not see that parameter
(perdure removes it from the tool's schema), so the arguments it sends are validated with a
placeholder in its place; the effect puts its key there just before the call."""

from __future__ import annotations

import json
from typing import Any

from pydantic_ai.toolsets.abstract import SchemaValidatorProt
from pydantic_core import SchemaValidator

from perdure.core.tools import KEY_PARAMETER

PENDING_KEY = "(the effect's key)"
"""What the validated arguments hold until the call is made."""


class KeyedValidator:
    """A ``SchemaValidatorProt`` around a tool's own validator that fills ``idempotency_key``
    (any value the model sent for it is replaced)."""

    def __init__(self, inner: SchemaValidator | SchemaValidatorProt) -> None:
        self.inner = inner

    def validate_json(self, input: str | bytes | bytearray, **kwargs: Any) -> Any:
        """Validate the model's raw JSON arguments, the key's placeholder added."""
        try:
            data = json.loads(input or "{}")
        except ValueError:
            return self.inner.validate_json(input, **kwargs)  # its error goes to the model
        if not isinstance(data, dict):
            return self.inner.validate_json(input, **kwargs)
        return self.inner.validate_json(json.dumps(_keyed(data)), **kwargs)

    def validate_python(self, input: Any, **kwargs: Any) -> Any:
        """Validate arguments given as a dict, the key's placeholder added."""
        if isinstance(input, dict):
            input = _keyed(input)
        return self.inner.validate_python(input, **kwargs)


def _keyed(arguments: dict[str, Any]) -> dict[str, Any]:
    return {**arguments, KEY_PARAMETER: PENDING_KEY}
