"""A small agent memory with something on every inspector page: sessions with a tool
call, an archive boundary and a summary; facts of every layer with references, one of
them superseded; a document with revisions."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sqlmem import Fact, Message
from sqlmem.protocols import Database
from sqlmem.records import ToolCall

SESSION = "chat:alice"
CITY_KEY = "user.city"
#: When the user moved to Lisbon (the Porto fact is valid until then).
MOVED = datetime(2026, 3, 1, tzinfo=timezone.utc)


def fill(db: Database) -> None:
    _conversations(db)
    _facts(db)
    _moves(db)
    _documents(db)


def _conversations(db: Database) -> None:
    history = db.history
    turns = [
        Message(role="user", content="Hi! I'm Alice. I live in Lisbon and I'm vegetarian."),
        Message(role="assistant", content="Nice to meet you, Alice. Noted: vegetarian."),
        Message(role="user", content="What's the weather tomorrow?"),
        Message(
            role="assistant",
            content="",
            tool_calls=[ToolCall(id="call_1", name="weather", arguments='{"city": "Lisbon"}')],
        ),
        Message(role="tool", content='{"forecast": "sunny, 24C"}', tool_call_id="call_1"),
        Message(role="assistant", content="Sunny and 24°C in Lisbon tomorrow."),
        Message(role="user", content="Book me a table somewhere nice on Friday."),
        Message(role="assistant", content="Booked Ao 26 Vegan Food Project for Friday 20:00."),
    ]
    history.append_many(SESSION, turns)
    history.compact(SESSION, keep_last=4, summary="Alice (Lisbon, vegetarian) asked about weather.")
    for n in range(3):
        history.append_many(
            f"chat:bob-{n}",
            [
                Message(role="user", content=f"Question {n} about the quarterly report"),
                Message(role="assistant", content=f"Answer {n}: the report is due Monday."),
            ],
        )


def _facts(db: Database) -> None:
    soon = datetime.now(timezone.utc) + timedelta(days=30)
    past = datetime.now(timezone.utc) - timedelta(days=1)
    db.facts.index_many(
        [
            Fact(
                content="The user is vegetarian.",
                layer="semantic",
                kind="preference",
                category="food",
                tags=["diet", "profile"],
                confidence=0.95,
                references=[f"msg:{SESSION}#1", "doc:MEMORY.md@1"],
            ),
            Fact(
                content="Booked a table at Ao 26 for Friday 20:00.",
                layer="episodic",
                kind="event",
                category="plans",
                tags=["booking"],
                confidence=0.8,
                expires_at=soon,
                references=[f"msg:{SESSION}#8"],
            ),
            Fact(
                content="Asked about tomorrow's weather.",
                layer="episodic",
                kind="event",
                confidence=0.4,
                expires_at=past,
            ),
            Fact(
                content="To book a restaurant, check the diet first.",
                layer="procedural",
                kind="howto",
                category="food",
                confidence=0.7,
            ),
        ]
    )


def _moves(db: Database) -> None:
    """A fact that changed: the user's city, a chain of two under the key "user.city"."""
    db.facts.remember(
        Fact(
            content="The user lives in Porto.",
            key=CITY_KEY,
            kind="profile",
            category="location",
            tags=["profile"],
            confidence=0.9,
            source="onboarding form",
            valid_from=MOVED - timedelta(days=400),
        )
    )
    db.facts.remember(
        Fact(
            content="The user lives in Lisbon.",
            key=CITY_KEY,
            kind="profile",
            category="location",
            tags=["profile"],
            confidence=0.9,
            references=[f"msg:{SESSION}#1"],
            valid_from=MOVED,
        )
    )


def _documents(db: Database) -> None:
    db.docs.write("MEMORY.md", "# Memory\n\n- Alice lives in Lisbon.\n")
    db.docs.write("MEMORY.md", "# Memory\n\n- Alice lives in Lisbon.\n- Alice is vegetarian.\n")
    db.docs.write(
        "MEMORY.md",
        "# Memory\n\n- Alice lives in Lisbon (Alfama).\n- Alice is vegetarian.\n"
        "- Likes quiet restaurants.\n",
    )
    db.docs.write("notes/2026-11-27.md", "Booked Ao 26 for Friday.\n")
