"""`SqlmemSession` under the name and constructor of the SDK's `SQLiteSession`, to run
the OpenAI Agents SDK's own session tests against sqlmem.

Not collected by pytest: `suites.py` beside this file appends to the SDK's
`tests/conftest.py` (from the installed release's sdist) the lines that make
`agents.SQLiteSession` and `agents.memory.SQLiteSession` this class, and runs the
session and compaction tests; `pytest -m frameworks tests/adapters/test_framework_suites.py`
in CI.

`SQLiteSession(session_id)` (the SDK's in-memory default) gets a fresh file in a
temporary folder, removed by `close()`; `session_settings` becomes `limit`. With
`SQLMEM_SHIM_POSTGRES_DSN` set, the session lives in an agent of that PostgreSQL
database instead (`shim_backend`): a fresh one for `":memory:"`, one per file path
otherwise, so sessions given the same file share it as on SQLite.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from agents.memory.session_settings import SessionSettings, coerce_session_settings
from shim_backend import postgres_agent

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
        self._agent = postgres_agent(db_path)
        if self._agent is None and str(db_path) == ":memory:":
            self._scratch = tempfile.mkdtemp(prefix="sqlmem-session-")
            db_path = Path(self._scratch) / "memory.db"
        target = db_path if self._agent is None else self._agent
        super().__init__(session_id, target, limit=settings.limit)
        self.session_settings = settings

    def close(self) -> None:
        super().close()
        if self._agent is not None:
            self._agent.close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
