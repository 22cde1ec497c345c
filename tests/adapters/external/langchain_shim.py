"""`SqlmemChatMessageHistory` under the name and constructor of LangChain's
`InMemoryChatMessageHistory`, to run langchain-core's own chat history and
`RunnableWithMessageHistory` tests against sqlmem.

Not collected by pytest: `tests/adapters/test_framework_suites.py` substitutes it into the
suite from the langchain-core sdist (`from langchain_core.chat_history import
InMemoryChatMessageHistory` becomes `from langchain_shim import ...`).

`InMemoryChatMessageHistory(messages=[...])` gets a fresh file in a temporary folder
(removed at exit), or with `SQLMEM_SHIM_POSTGRES_DSN` set a fresh agent of that
PostgreSQL database (`shim_backend`); the given messages are its first ones. Two
histories are equal when their messages are (the suite compares stores of histories
with `==`, as pydantic compares LangChain's own).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from shim_backend import postgres_agent

from sqlmem.adapters.langchain import SqlmemChatMessageHistory

_scratch = tempfile.mkdtemp(prefix="sqlmem-langchain-")
atexit.register(shutil.rmtree, _scratch, True)
_count = 0


class InMemoryChatMessageHistory(SqlmemChatMessageHistory):
    def __init__(self, *, messages: Sequence[BaseMessage] | None = None, **_: Any) -> None:
        global _count
        _count += 1
        agent = postgres_agent()
        if agent is not None:
            atexit.register(agent.close)
        target = Path(_scratch) / f"history-{_count}.db" if agent is None else agent
        super().__init__("session", target)
        if messages:
            self.add_messages(messages)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SqlmemChatMessageHistory):
            return NotImplemented
        return self.messages == other.messages

    __hash__ = None  # type: ignore[assignment]
