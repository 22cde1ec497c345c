"""Run leases of the in-memory twin: the same rule (`sqlmem.rules.run_leases`) over a dict,
shared by every extractor on one twin database."""

from __future__ import annotations

import threading

from ..rules.encoding import now_ms
from ..rules.run_leases import LeaseRow, refusal

__all__ = ["InMemoryRunLeases"]


class InMemoryRunLeases:
    def __init__(self) -> None:
        self._rows: dict[str, LeaseRow] = {}
        self._lock = threading.Lock()

    def acquire(self, name: str, token: str, lease_ms: int, cooldown_ms: int) -> str | None:
        with self._lock:
            now = now_ms()
            refused = refusal(self._rows.get(name), now, cooldown_ms)
            if refused is None:
                self._rows[name] = LeaseRow(token, now + lease_ms, now)
            return refused

    def release(self, name: str, token: str) -> None:
        with self._lock:
            row = self._rows.get(name)
            if row is not None and row.holder == token:
                self._rows[name] = LeaseRow(None, None, row.started_at)
