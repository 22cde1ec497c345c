"""Run leases: "one run at a time, and not again before the cooldown", kept in the database
so they hold across processes (the workspace extractor's gate). Written once here; each
backend stores the row (`name`, `holder`, `expires_at`, `started_at`) and applies
`refusal` to it inside a short write transaction of its own.

A lease, not a lock: the run holds the row only by its token and `expires_at`, never by a
transaction, so nothing is held across the model call, and a process killed during its
run stops blocking the others when the lease expires.
"""

from __future__ import annotations

import secrets
from typing import NamedTuple, Protocol

__all__ = ["LeaseRow", "RunLeases", "new_token", "refusal"]


class LeaseRow(NamedTuple):
    """A stored lease: its holder's token and expiry (None when no run is under way) and
    when the last run started (unix ms)."""

    holder: str | None
    expires_at: int | None
    started_at: int


class RunLeases(Protocol):
    """A backend's leases (`MemoryDB.run_leases` on every backend)."""

    def acquire(self, name: str, token: str, lease_ms: int, cooldown_ms: int) -> str | None:
        """Take the lease `name` for `token`: None when taken (its run starts now), else
        why not ("busy" or "cooldown"), with nothing changed."""
        ...

    def release(self, name: str, token: str) -> None:
        """Give back the lease `name` when `token` still holds it."""
        ...


def refusal(row: LeaseRow | None, now_ms: int, cooldown_ms: int) -> str | None:
    """Why a run may not start now ("busy": another holds an unexpired lease; "cooldown":
    the last run started less than `cooldown_ms` ago), or None."""
    if row is None:
        return None
    if row.holder is not None and row.expires_at is not None and row.expires_at > now_ms:
        return "busy"
    if now_ms - row.started_at < cooldown_ms:
        return "cooldown"
    return None


def new_token() -> str:
    return secrets.token_hex(12)
