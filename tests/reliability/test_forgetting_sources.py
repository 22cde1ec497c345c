"""Forgetting a source for real: after `db.forget(source)` and `vacuum()`, no byte remains
of the session's messages, the document's revisions, the facts derived from them (every
version of a keyed fact included), their vectors or their vectors' content hashes; what
was not derived only from the source is still there."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import sqlmem
from sqlmem import Fact, Message
from sqlmem.embedders import HashEmbedder


def _secret() -> str:
    return "zq" + secrets.token_hex(6) + "7"


def _raw_bytes(path: Path) -> bytes:
    data = b""
    for suffix in ("", "-wal"):
        file = Path(f"{path}{suffix}")
        if file.exists():
            data += file.read_bytes()
    return data


def _vector_bytes(db: sqlmem.MemoryDB, fact_ids: list[str]) -> list[bytes]:
    """The stored vector blobs and content hashes of these facts."""
    out: list[bytes] = []
    with db.engine.read() as conn:
        for fact_id in fact_ids:
            rows: list[Any] = conn.execute(
                "SELECT v.vector, v.content_hash FROM fact_vectors AS v"
                " JOIN facts AS f ON f.pk = v.fact_pk WHERE f.id = ?",
                (fact_id,),
            ).fetchall()
            assert rows, fact_id
            out += [bytes(rows[0][0]), str(rows[0][1]).encode()]
    return out


def test_forget_and_vacuum_leave_no_byte_of_sources_or_derived_memory(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    session, doc = f"chat-{_secret()}", f"notes-{_secret()}.md"
    with sqlmem.open(path, embedder=HashEmbedder()) as db:
        gone_words: list[str] = [session, doc]
        for i in range(40):  # kept memory around the secrets: many pages, several segments
            db.facts.remember(Fact(content=f"kept fact {i} about the weather"))
            db.history.append("other", Message(role="user", content=f"kept message {i}"))
        for _ in range(5):
            word = _secret()
            gone_words.append(word)
            db.history.append(session, Message(role="user", content=f"I said {word}"))
        for rev in range(3):
            word = _secret()
            gone_words.append(word)
            db.docs.write(doc, f"# Notes\n\nrevision {rev} holds {word}\n")
        derived: list[str] = []
        for i in range(3):  # a keyed chain: every version derived from the session
            word = _secret()
            gone_words.append(word)
            derived.append(
                db.facts.remember(
                    Fact(
                        content=f"city is {word}",
                        key="user.city",
                        references=[f"msg:{session}#{i + 1}"],
                    )
                )
            )
        word = _secret()
        gone_words.append(word)
        derived.append(
            db.facts.remember(Fact(content=f"doc says {word}", references=[f"doc:{doc}@2"]))
        )
        kept_word = _secret()
        kept = db.facts.remember(
            Fact(content=f"known twice {kept_word}", references=[f"msg:{session}#1", "msg:other#1"])
        )
        gone_bytes = [w.encode() for w in gone_words] + _vector_bytes(db, derived)
        db.checkpoint()
        data = _raw_bytes(path)
        assert all(b in data for b in gone_bytes)

        assert db.forget(session).messages == 5
        report = db.forget(doc)
        assert (report.documents, report.revisions) == (1, 2)  # the earlier revisions
        assert db.facts.history(key="user.city") == []
        db.vacuum()

        data = _raw_bytes(path)
        leaks = [b for b in gone_bytes if b in data]
        assert leaks == []
        assert kept_word.encode() in data
        assert [f.id for f in db.facts.search(kept_word)] == [kept]
        assert len(db.history.get_all("other")) == 40
        assert db.check().ok
