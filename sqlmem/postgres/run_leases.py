"""Run leases of one agent on PostgreSQL (table `run_leases`, migrations/postgres/
NNNN_run_leases.sql): the rule is `sqlmem.rules.run_leases`; the row is created if
missing and locked (FOR UPDATE) in a short transaction of its own, so processes and
servers agree."""

from __future__ import annotations

from ..rules.encoding import now_ms
from ..rules.run_leases import LeaseRow, refusal
from .engine import Engine

__all__ = ["PostgresRunLeases"]

_KEY = "agent_id = %(agent)s AND name = %(name)s"
#: A free row that started long ago, so the first run is never in a cooldown.
_ENSURE = (
    "INSERT INTO run_leases (agent_id, name, holder, expires_at, started_at)"
    " VALUES (%(agent)s, %(name)s, NULL, NULL, -9223372036854775807)"
    " ON CONFLICT (agent_id, name) DO NOTHING"
)
_READ = f"SELECT holder, expires_at, started_at FROM run_leases WHERE {_KEY} FOR UPDATE"
_TAKE = (
    "UPDATE run_leases SET holder = %(token)s, expires_at = %(expires)s, started_at = %(now)s"
    f" WHERE {_KEY}"
)
_GIVE_BACK = (
    f"UPDATE run_leases SET holder = NULL, expires_at = NULL WHERE {_KEY} AND holder = %(token)s"
)


class PostgresRunLeases:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def acquire(self, name: str, token: str, lease_ms: int, cooldown_ms: int) -> str | None:
        key = {"agent": self._engine.agent_id, "name": name}
        with self._engine.write() as conn:
            conn.execute(_ENSURE, key)
            row = conn.execute(_READ, key).fetchone()
            now = now_ms()
            refused = refusal(LeaseRow(*row) if row else None, now, cooldown_ms)
            if refused is None:
                conn.execute(_TAKE, {**key, "token": token, "expires": now + lease_ms, "now": now})
        return refused

    def release(self, name: str, token: str) -> None:
        key = {"agent": self._engine.agent_id, "name": name, "token": token}
        with self._engine.write() as conn:
            conn.execute(_GIVE_BACK, key)
