"""Message vectors in the export and import: kept as base64 (a restored file searches its
conversations by meaning without calling a model), checked on the way in, format version 3
only when the file holds some (so a version-2 reader refuses the header instead of
importing half the file), on SQLite and through the PostgreSQL transfer."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem import Message, ToolCall
from sqlmem.embedders import HashEmbedder
from sqlmem.rules import export_format
from sqlmem.rules.export_format import ExportFormatError
from sqlmem.rules.history_modes import vector_text
from sqlmem.search.vectors import checked_rows, content_key
from sqlmem.sqlite.transfer.export import export_records
from sqlmem.sqlite.transfer.importer import import_lines, import_records


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(32)
        self.texts: list[str] = []
        self.fail = False

    def embed(self, texts: Any) -> Any:
        self.texts.extend(texts)
        if self.fail:
            raise ConnectionError("embedding API down")
        return super().embed(texts)


def _fill(db: Any, embedder: CountingEmbedder) -> None:
    db.history.append_many(
        "chat",
        [
            Message(role="user", content="green tea please"),
            Message(
                role="assistant",
                content="",
                tool_calls=[ToolCall(id="1", name="f", arguments="{}")],
            ),
            Message(role="tool", content="the sea is blue", tool_call_id="1"),
        ],
    )
    db.history.compact("chat", keep_last=1, summary="tea talk")
    embedder.fail = True
    db.history.append("other", Message(role="user", content="no vector yet"))
    embedder.fail = False


def _dump(db: Any) -> list[dict[str, Any]]:
    return [json.loads(json.dumps(r)) for r in export_records(db)]


def test_message_vectors_travel_in_the_export(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    with sqlmem.open(tmp_path / "a.db", embedder=embedder) as db:
        _fill(db, embedder)
        records = _dump(db)
    assert records[0]["format_version"] == 3
    kinds = [r["type"] for r in records[1:]]
    assert kinds == ["message"] * 4 + ["summary", "message_vector", "message_vector"]
    vectors = [r for r in records[1:] if r["type"] == "message_vector"]
    assert [(r["session_id"], r["seq"]) for r in vectors] == [("chat", 1), ("chat", 3)]
    assert all(len(base64.b64decode(r["data"])) == 4 * r["dim"] == 128 for r in vectors)

    calls = len(embedder.texts)
    with sqlmem.open(tmp_path / "b.db", embedder=embedder) as db:
        counts = import_records(db, records)
        assert (counts.message_vectors, counts.message_vectors_skipped) == (2, 0)
        (missing,) = [m for m in db.history.get_all("other") if m.content == "no vector yet"]
        # only the missing one embedded (its text after its day: rules.history_modes)
        assert embedder.texts[calls:] == [vector_text(missing.content, "", missing.created_at)]
        assert db.stats()["messages_without_vectors"] == 0
        top = db.history.search("blue sea", mode="vector", top_k=1)
        assert [(m.session_id, m.seq) for m in top] == [("chat", 3)]
        again = import_records(db, records)
        assert (again.message_vectors, again.message_vectors_skipped) == (0, 2)
        assert _dump(db)[1:6] == records[1:6]  # messages and summary as they were
    with sqlmem.open(tmp_path / "c.db") as db:  # no embedder: the vectors are kept
        import_records(db, records)
    with sqlmem.open(tmp_path / "c.db", embedder=embedder) as db:  # the one left is missing
        assert db.stats()["messages_without_vectors"] == 1
        assert [r for r in _dump(db)[1:] if r["type"] == "message_vector"] == vectors


def test_an_export_without_message_vectors_stays_version_2(tmp_path: Path) -> None:
    with sqlmem.open(tmp_path / "a.db") as db:
        db.history.append("s", Message(role="user", content="hello"))
        records = _dump(db)
    assert records[0]["format_version"] == 2
    assert not any(r["type"] == "message_vector" for r in records[1:])


def test_a_version_2_reader_refuses_the_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = CountingEmbedder()
    with sqlmem.open(tmp_path / "a.db", embedder=embedder) as db:
        _fill(db, embedder)
        records = _dump(db)
    monkeypatch.setattr(export_format, "READABLE_FORMAT_VERSION", 2)  # as 0.2 reads
    with sqlmem.open(tmp_path / "b.db") as db:
        with pytest.raises(ExportFormatError, match="newer"):
            import_records(db, records)
        assert db.history.sessions() == []  # nothing imported


def _header(version: int = 3) -> str:
    return json.dumps({"format": "sqlmem-export", "format_version": version})


#: When the imported test message was said: its vector is of its text after that day
#: (`rules.history_modes.vector_text`).
SAID = datetime(2025, 1, 31, 9, 14, 55, tzinfo=timezone.utc)


def _message_line(seq: int = 1) -> str:
    return json.dumps(
        {
            "type": "message",
            "session_id": "s",
            "seq": seq,
            "role": "user",
            "content": "hi",
            "created_at": SAID.isoformat(),
        }
    )


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"data": "!!"}, "base64"),
        ({"dim": 3}, "4 \\* dim"),
        ({"seq": 0}, "seq"),
        ({"session_id": ""}, "session"),
        ({"model": ""}, "model"),
        ({"extra": 1}, "unknown field"),
        ({"content_hash": "ABC"}, "content_hash"),
        ({"content_hash": None}, "content_hash"),
    ],
)
def test_bad_message_vector_records_are_refused_with_their_line(
    tmp_path: Path, fields: dict[str, Any], error: str
) -> None:
    record = {
        "type": "message_vector",
        "session_id": "s",
        "seq": 1,
        "model": "m",
        "dim": 2,
        "content_hash": content_key("m", "hi"),
        "data": base64.b64encode(b"\0" * 8).decode(),
    }
    record.update(fields)
    with sqlmem.open(tmp_path / "a.db") as db:
        with pytest.raises(ExportFormatError, match=f"line 3: .*{error}"):
            import_lines(db, [_header(), _message_line(), json.dumps(record)])
        assert db.history.sessions() == []  # the batch was validated before any write


def test_unusable_or_orphan_vectors_are_skipped(tmp_path: Path) -> None:
    def vector(seq: int, values: list[float], text: str = vector_text("hi", "", SAID)) -> str:
        import numpy as np

        data = np.array(values, dtype="<f4").tobytes()
        return json.dumps(
            {
                "type": "message_vector",
                "session_id": "s",
                "seq": seq,
                "model": "m",
                "dim": len(values),
                "content_hash": content_key("m", text),
                "data": base64.b64encode(data).decode(),
            }
        )

    lines = [
        _header(),
        _message_line(),
        vector(1, [0.0, 0.0]),  # no length
        vector(2, [1.0, 0.0]),  # no such message
        vector(1, [1.0, 0.0], text=vector_text("bye", "", SAID)),  # from another text
        vector(1, [1.0, 0.0], text="hi"),  # from the bare content: not what is embedded
    ]
    with sqlmem.open(tmp_path / "a.db") as db:
        counts = import_lines(db, lines)
        assert (counts.messages, counts.message_vectors, counts.message_vectors_skipped) == (
            1,
            0,
            4,
        )
        with db.engine.read() as conn:  # none of the file's vectors was stored
            assert conn.execute("SELECT count(*) FROM message_vectors").fetchall()[0][0] == 0
    lines[2] = vector(1, [3.0, 4.0])  # stored at unit length
    with sqlmem.open(tmp_path / "b.db") as db:
        assert import_lines(db, lines).message_vectors == 1
        with db.engine.read() as conn:
            blob = conn.execute("SELECT vector FROM message_vectors").fetchall()[0][0]
    import numpy as np

    assert np.frombuffer(blob, dtype="<f4").tolist() == pytest.approx([0.6, 0.8])


def test_postgres_transfer_keeps_message_vectors(tmp_path: Path, pg_dsn: str) -> None:
    from pgserver import new_agent_id

    from sqlmem import postgres
    from sqlmem.postgres import transfer

    embedder = CountingEmbedder()
    with sqlmem.open(tmp_path / "a.db", embedder=embedder) as db:
        _fill(db, embedder)
        records = _dump(db)
    with postgres.open(pg_dsn, new_agent_id(), pool_size=1) as pg:
        counts = transfer.import_records(pg, records)
        assert (counts.message_vectors, counts.message_vectors_skipped) == (2, 0)
        again = transfer.import_records(pg, records)
        assert (again.message_vectors, again.message_vectors_skipped) == (0, 2)
        exported = [json.loads(json.dumps(r)) for r in transfer.export_records(pg)]
        agent = pg.agent_id
    assert exported[0]["format_version"] == 3
    assert exported[1:] == records[1:]
    with postgres.open(pg_dsn, agent, embedder=embedder, pool_size=1) as pg:
        assert pg.stats()["messages_without_vectors"] == 1  # the one the file lacked
        calls = len(embedder.texts)
        top = pg.history.search("blue sea", mode="vector", top_k=1)
        assert [(m.session_id, m.seq) for m in top] == [("chat", 3)]
        assert embedder.texts[calls:] == ["blue sea"]  # the query only: vectors came along
    with postgres.open(pg_dsn, new_agent_id(), embedder=embedder, pool_size=1) as pg:
        transfer.import_records(pg, records)  # with an embedder: the missing one filled
        assert pg.stats()["messages_without_vectors"] == 0


def test_a_vector_is_never_attached_to_another_text(tmp_path: Path) -> None:
    """An import keeps a message the target already holds at the same (session, seq): the
    file's vector of a different text must not be stored on it."""
    embedder = CountingEmbedder()
    with sqlmem.open(tmp_path / "a.db", embedder=embedder) as db:
        db.history.append("chat", Message(role="user", content="green tea please"))
        records = _dump(db)
    with sqlmem.open(tmp_path / "b.db", embedder=embedder) as db:
        db.history.append("chat", Message(role="user", content="fast red car"))
        counts = import_records(db, records)
        assert (counts.messages_skipped, counts.message_vectors_skipped) == (1, 1)
        top = db.history.search("fast red car", mode="vector", top_k=1)
        own = vector_text(top[0].content, top[0].name, top[0].created_at)
        query, stored = checked_rows(embedder.embed(["fast red car", own]), 2)
        assert query is not None and stored is not None
        assert top[0].score == pytest.approx(float(query @ stored))  # its own text's vector
        other = checked_rows(embedder.embed([records[1]["content"]]), 1)[0]
        assert other is not None and float(query @ other) != pytest.approx(top[0].score)
