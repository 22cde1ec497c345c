"""The Google ADK adapter beside ADK's own backends, in the same run (like P4-P6).

Target: at least as fast as the framework's backend ("vs peer" <= 1.0). Each side gets its
own file; every call goes through the services' async API in one event loop.

- P7 `SqlmemSessionService` vs ADK's `DatabaseSessionService` (SQLAlchemy over aiosqlite)
  and `SqliteSessionService` on SQLite: `append_event` with a session-state delta, and
  `get_session` of a session holding every appended event.
- P8 `SqlmemMemoryService` (BM25 in the agent's file) vs ADK's `InMemoryMemoryService`
  (word overlap over Python lists) and its SQLite FTS5 memory service when present:
  `add_session_to_memory` of a 10-event session, and `search_memory`. Adding a session
  to a durable file cannot match appending objects to a list in RAM (a transaction and
  the full-text index cost what they cost), so the add is also set beside the durable
  peer alone, ADK's SQLite file service: the like-for-like figure.

Pydantic AI has no storage backend of its own, so its adapter has no peer row.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from .context import Context
from .harness import (
    Row,
    Skip,
    latency_interleaved,
    median,
    percentile,
    throughput_rounds,
    with_peers,
)
from .peers import _have

__all__ = ["p7_adk_sessions", "p8_adk_memory"]

NAN = float("nan")


def _row(name: str, metric: str, mine: float, peers: dict[str, float], rate: bool) -> Row:
    row = Row(name, metric, mine, NAN, None, "at least as fast as the framework's backend")
    return with_peers(row, peers, rate=rate, limit=1.0)


def _needs_adk() -> None:
    if not (_have("google.adk") and _have("sqlalchemy") and _have("aiosqlite")):
        raise Skip("google-adk (with sqlalchemy and aiosqlite) is not installed")


def p7_adk_sessions(ctx: Context) -> list[Row]:
    _needs_adk()
    from google.adk.events.event import Event
    from google.adk.events.event_actions import EventActions
    from google.adk.sessions.database_session_service import DatabaseSessionService
    from google.adk.sessions.sqlite_session_service import SqliteSessionService
    from google.genai import types

    from sqlmem.adapters.adk import SqlmemSessionService

    loop = asyncio.new_event_loop()
    run: Callable[[Coroutine[Any, Any, Any]], Any] = loop.run_until_complete
    peer_db = ctx.folder("p7-database") / "adk.db"
    services: dict[str, Any] = {
        "sqlmem": SqlmemSessionService(ctx.folder("p7-sqlmem") / "memory.db"),
        "DatabaseSessionService": DatabaseSessionService(f"sqlite+aiosqlite:///{peer_db}"),
        "SqliteSessionService": SqliteSessionService(str(ctx.folder("p7-sqlite") / "adk.db")),
    }
    n = max(ctx.sizes.w1_messages // 20, 40)
    texts = [r.content for r in ctx.corpus.messages(n, 1, seed=71)]
    sessions = {k: run(s.create_session(app_name="bench", user_id="u", session_id="s"))
                for k, s in services.items()}  # fmt: skip
    rounds = ctx.sizes.w1_rounds
    bounds = [n * r // rounds for r in range(rounds + 1)]

    def event(i: int) -> Any:
        return Event(
            invocation_id=f"inv{i}",
            author="user" if i % 2 == 0 else "agent",
            content=types.Content(role="user", parts=[types.Part(text=texts[i])]),
            actions=EventActions(state_delta={"turn": i}),
        )

    def appender(name: str) -> Callable[[int], int]:
        async def append(r: int) -> None:
            for i in range(bounds[r], bounds[r + 1]):
                await services[name].append_event(sessions[name], event(i))

        def go(r: int) -> int:
            run(append(r))
            return bounds[r + 1] - bounds[r]

        return go

    try:
        rates = throughput_rounds({k: appender(k) for k in services}, rounds)
        calls = list(range(max(ctx.sizes.w2_calls // 10, 20)))
        key = {"app_name": "bench", "user_id": "u", "session_id": "s"}
        reads = {k: (lambda _, s=s: run(s.get_session(**key)))
                 for k, s in services.items()}  # fmt: skip
        samples = latency_interleaved(reads, calls)
    finally:
        for service in services.values():
            run(service.close())
        loop.close()
    others = [k for k in services if k != "sqlmem"]
    return [
        _row("P7 SqlmemSessionService.append_event (state delta)", "events/s",
             median(rates["sqlmem"]), {k: median(rates[k]) for k in others}, True),
        _row(f"P7 SqlmemSessionService.get_session ({n:,} events)", "p50 µs",
             percentile(samples["sqlmem"], 50), {k: percentile(samples[k], 50) for k in others},
             False),
    ]  # fmt: skip


def p8_adk_memory(ctx: Context) -> list[Row]:
    _needs_adk()
    from google.adk.events.event import Event
    from google.adk.memory.in_memory_memory_service import InMemoryMemoryService
    from google.adk.sessions.session import Session
    from google.genai import types

    from sqlmem.adapters.adk import SqlmemMemoryService

    loop = asyncio.new_event_loop()
    run: Callable[[Coroutine[Any, Any, Any]], Any] = loop.run_until_complete
    services: dict[str, Any] = {
        "sqlmem": SqlmemMemoryService(ctx.folder("p8-sqlmem") / "memory.db"),
        "InMemoryMemoryService": InMemoryMemoryService(),
    }
    if _have("google.adk.memory") and _have("google.adk.memory._sqlite_memory_service"):
        from google.adk.memory._sqlite_memory_service import SqliteMemoryService

        services["SqliteMemoryService"] = SqliteMemoryService(str(ctx.folder("p8-sqlite") / "m.db"))
    per_session = 10
    n_sessions = max(ctx.sizes.w3c_single // 50, 20)
    texts = [f.content for f in ctx.corpus.facts(n_sessions * per_session, seed=72)]
    rounds = ctx.sizes.w1_rounds
    bounds = [n_sessions * r // rounds for r in range(rounds + 1)]

    def session(k: int) -> Any:
        events = [
            Event(id=f"e{k}-{j}", author="user", timestamp=1000.0 + j,
                  content=types.Content(parts=[types.Part(text=texts[k * per_session + j])]))
            for j in range(per_session)
        ]  # fmt: skip
        return Session(app_name="bench", user_id=f"u{k % 5}", id=f"s{k}", events=events)

    prepared = [session(k) for k in range(n_sessions)]

    def adder(name: str) -> Callable[[int], int]:
        async def add(r: int) -> None:
            for k in range(bounds[r], bounds[r + 1]):
                await services[name].add_session_to_memory(prepared[k])

        def go(r: int) -> int:
            run(add(r))
            return bounds[r + 1] - bounds[r]

        return go

    try:
        rates = throughput_rounds({k: adder(k) for k in services}, rounds)
        queries = [" ".join(t.split()[:3]) for t in texts[: max(ctx.sizes.w3b_queries // 5, 20)]]
        finds = latency_interleaved(
            {k: (lambda q, s=s: run(s.search_memory(app_name="bench", user_id="u1", query=q)))
             for k, s in services.items()}, queries,
        )  # fmt: skip
    finally:
        run(services["sqlmem"].close())
        loop.close()
    others = [k for k in services if k != "sqlmem"]
    total = n_sessions * per_session
    rows = [
        _row(f"P8 SqlmemMemoryService.add_session_to_memory ({per_session} events)", "sessions/s",
             median(rates["sqlmem"]), {k: median(rates[k]) for k in others}, True),
        _row(f"P8 SqlmemMemoryService.search_memory ({total:,} memories, 5 users)", "p50 µs",
             percentile(finds["sqlmem"], 50), {k: percentile(finds[k], 50) for k in others},
             False),
    ]  # fmt: skip
    if "SqliteMemoryService" in rates:
        durable = {"SqliteMemoryService": median(rates["SqliteMemoryService"])}
        rows.insert(1, _row(
            f"P8 SqlmemMemoryService.add_session_to_memory ({per_session} events), "
            "vs ADK's durable SQLite file service", "sessions/s",
            median(rates["sqlmem"]), durable, True,
        ))  # fmt: skip
    return rows
