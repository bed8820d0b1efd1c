"""A deterministic local embedding for semantic-search tests: one dimension per word of a small
vocabulary (how many times the text says it) and one for every other word. No network, no
model: the same text always gives the same vector, and texts sharing words are close."""

from __future__ import annotations

import re
from collections.abc import Sequence

VOCAB = ("python", "rust", "coffee", "tea", "cat", "dog", "red", "blue")
DIMS = len(VOCAB) + 1


def embed_one(text: str) -> list[float]:
    vector = [0.0] * DIMS
    for word in re.findall(r"[a-z]+", text.lower()):
        vector[VOCAB.index(word) if word in VOCAB else len(VOCAB)] += 1.0
    return vector


def embed(texts: Sequence[str]) -> list[list[float]]:
    """The embedding function: one vector per text, in order."""
    return [embed_one(t) for t in texts]
