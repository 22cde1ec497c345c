"""sqlmem behind Google ADK: `SqlmemSessionService` (ADK's `BaseSessionService`) and
`SqlmemMemoryService` (its `BaseMemoryService`), over any sqlmem database: a SQLite file,
the in-memory twin, or PostgreSQL.

    pip install 'sqlmem[adk]'

    from sqlmem.adapters.adk import SqlmemMemoryService, SqlmemSessionService
    db = sqlmem.open("agent.db")
    runner = Runner(agent=agent, app_name="app",
                    session_service=SqlmemSessionService(db),
                    memory_service=SqlmemMemoryService(db))
"""

from __future__ import annotations

try:
    import google.adk  # noqa: F401
except ImportError as exc:  # the extra is optional: name it
    from ..errors import SqlmemError

    raise SqlmemError("sqlmem.adapters.adk needs Google ADK: pip install 'sqlmem[adk]'") from exc

from .adk_memory import SqlmemMemoryService
from .adk_sessions import SqlmemSessionService

__all__ = ["SqlmemMemoryService", "SqlmemSessionService"]
