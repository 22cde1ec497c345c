"""Run leases in the SQLite file (table `run_leases`, migrations/NNNN_run_leases.sql): the
rule is `sqlmem.rules.run_leases`; each acquire and release is one short write
transaction of its own, so every process on the file sees the same lease."""

from __future__ import annotations

from typing import Any

from ...rules.encoding import now_ms
from ...rules.run_leases import LeaseRow, refusal
from ..core.engine import Engine

__all__ = ["SQLiteRunLeases"]

_READ = "SELECT holder, expires_at, started_at FROM run_leases WHERE name = ?"
_TAKE = (
    "INSERT INTO run_leases (name, holder, expires_at, started_at) VALUES (?1, ?2, ?3, ?4)"
    " ON CONFLICT (name) DO UPDATE SET holder = ?2, expires_at = ?3, started_at = ?4"
)
_GIVE_BACK = "UPDATE run_leases SET holder = NULL, expires_at = NULL WHERE name = ? AND holder = ?"


class SQLiteRunLeases:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def acquire(self, name: str, token: str, lease_ms: int, cooldown_ms: int) -> str | None:
        with self._engine.write() as conn:
            now = now_ms()
            rows: list[Any] = conn.execute(_READ, (name,)).fetchall()
            refused = refusal(LeaseRow(*rows[0]) if rows else None, now, cooldown_ms)
            if refused is None:
                conn.execute(_TAKE, (name, token, now + lease_ms, now))
        return refused

    def release(self, name: str, token: str) -> None:
        with self._engine.write() as conn:
            conn.execute(_GIVE_BACK, (name, token))
