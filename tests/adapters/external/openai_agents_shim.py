"""`SqlmemSession` under the name and constructor of the SDK's `SQLiteSession`, to run the
OpenAI Agents SDK's own session tests against sqlmem (issue 20: "the frameworks' own
suites will be run against these classes with the class substituted").

Not collected by pytest (the SDK's tests are not shipped in its wheel). To run them, with
a checkout of openai-agents-python matching the installed version:

    cd openai-agents-python
    # tests/conftest.py, at its end:
    #     import agents, agents.memory
    #     from tests.adapters.external.openai_agents_shim import SQLiteSession
    #     agents.SQLiteSession = agents.memory.SQLiteSession = SQLiteSession
    PYTHONPATH=/path/to/sqlmem python -m pytest tests/memory/test_session.py \
        tests/memory/test_session_limit.py

`SQLiteSession(session_id)` (the SDK's in-memory default) gets a fresh file in a
temporary folder, removed by `close()`; `session_settings` becomes `limit`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from agents.memory.session_settings import SessionSettings, coerce_session_settings

from sqlmem.adapters.openai_agents import SqlmemSession


class SQLiteSession(SqlmemSession):
    def __init__(
        self,
        session_id: str,
        db_path: str | os.PathLike[str] = ":memory:",
        sessions_table: str = "agent_sessions",
        messages_table: str = "agent_messages",
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        settings = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        self._scratch: str | None = None
        if str(db_path) == ":memory:":
            self._scratch = tempfile.mkdtemp(prefix="sqlmem-session-")
            db_path = Path(self._scratch) / "memory.db"
        super().__init__(session_id, db_path, limit=settings.limit)
        self.session_settings = settings

    def close(self) -> None:
        super().close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
