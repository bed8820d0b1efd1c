"""LangGraph checkpointers on perdure's store: ``pip install 'perdure[langgraph]'``.

``PerdureSaver`` and ``AsyncPerdureSaver`` are ``BaseCheckpointSaver`` subclasses that keep each
LangGraph thread as a perdure run (workflow ``langgraph``) in SQLite or PostgreSQL, with write
ownership (:meth:`PerdureSaver.hold`), quarantine instead of silent restarts, a serializer that
never unpickles, perdure's seals, and bounded history (``prune``, ``keep_last``);
``resume`` answers an interrupt so that no crash loses the answer, and ``effect_tool`` makes a
side-effecting tool's calls perdure effects (called once); ``PerdureStore`` is LangGraph's
long-term memory (``BaseStore``) on perdure's memory, with semantic search and TTL. See
``docs/langgraph.md``. This package imports ``langgraph``; ``import perdure`` never does.
"""

from perdure.langgraph.resume import aresume, resume
from perdure.langgraph.saver import AsyncPerdureSaver, PerdureSaver
from perdure.langgraph.store import PerdureStore
from perdure.langgraph.tools import effect_tool

__all__ = [
    "AsyncPerdureSaver",
    "PerdureSaver",
    "PerdureStore",
    "aresume",
    "effect_tool",
    "resume",
]
