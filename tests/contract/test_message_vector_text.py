"""What a message's vector is computed from, alike on every backend and on every path
(append, append_many, embed_pending): the text after the speaker's name and the day it
was said, so that a question naming a person or a time finds the turn by meaning."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import sqlmem
from sqlmem import Message
from sqlmem.embedders import HashEmbedder
from sqlmem.rules.history_modes import vector_text

WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


class RecordingEmbedder:
    def __init__(self) -> None:
        self.inner = HashEmbedder(32)
        self.model = "recording"
        self.texts: list[str] = []
        self.fail = False

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.fail:
            raise ConnectionError("model down")
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def open_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    opened: list[Any] = []

    def build(embedder: Any) -> Any:
        if request.param == "memory":
            db = sqlmem.inmemory.open(embedder=embedder)
        elif request.param == "postgres":
            from pgserver import new_agent_id

            from sqlmem import postgres

            db = postgres.open(
                request.getfixturevalue("pg_dsn"), new_agent_id(), embedder=embedder, pool_size=2
            )
        else:
            db = sqlmem.open(tmp_path / "m.db", embedder=embedder)
        opened.append(db)
        return db

    yield build
    for db in opened:
        db.close()


def test_the_rule() -> None:
    assert (
        vector_text("I went hiking.", "Caroline", WHEN) == "Caroline (8 May 2023): I went hiking."
    )
    assert vector_text("hi", "", WHEN) == "(8 May 2023): hi"
    assert vector_text("hi", "", None) == "hi"
    assert vector_text("", "Caroline", WHEN) == ""  # no text, no vector


def test_every_path_embeds_the_same_text(open_db: Any) -> None:
    embedder = RecordingEmbedder()
    db = open_db(embedder)
    db.history.append(
        "s", Message(role="user", content="I went hiking.", name="Caroline", created_at=WHEN)
    )
    db.history.append_many(
        "s", [Message(role="assistant", content="Where to?", name="Melanie", created_at=WHEN)]
    )
    embedder.fail = True
    db.history.append(
        "s", Message(role="user", content="The lake.", name="Caroline", created_at=WHEN)
    )
    embedder.fail = False
    assert db.history.embed_pending() == 1
    assert embedder.texts == [
        "Caroline (8 May 2023): I went hiking.",
        "Melanie (8 May 2023): Where to?",
        "Caroline (8 May 2023): The lake.",
    ]


def test_a_message_without_a_time_is_dated_when_it_is_stored(open_db: Any) -> None:
    embedder = RecordingEmbedder()
    db = open_db(embedder)
    db.history.append("s", Message(role="user", content="hello"))
    (stored,) = db.history.get_all("s")
    assert embedder.texts == [vector_text("hello", "", stored.created_at)]


def test_an_imported_vector_is_found_by_the_text_it_was_made_of(tmp_path: Path) -> None:
    """Regression: import keyed a message vector by the message's bare content, so the
    same turn appended again (same speaker, same day) was embedded a second time instead
    of reusing the stored vector, as appends do."""
    from sqlmem.sqlite.transfer.export import export_records
    from sqlmem.sqlite.transfer.importer import import_records

    turn = Message(role="user", content="I went hiking.", name="Caroline", created_at=WHEN)
    with sqlmem.open(tmp_path / "a.db", embedder=RecordingEmbedder()) as db:
        db.history.append("s", turn)
        records = list(export_records(db))
    fresh = RecordingEmbedder()
    with sqlmem.open(tmp_path / "b.db", embedder=fresh) as db:
        import_records(db, records)
        db.history.append("t", turn)
        assert fresh.texts == []  # the imported vector was reused
        assert db.stats()["messages_without_vectors"] == 0
