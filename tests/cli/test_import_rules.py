"""Import rules pinned by issue 23: how far imported seqs may go (item 7), and which of
several records of one fact id wins, whatever the order and the batching (item 16)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem import Fact, Message
from sqlmem.rules.export_format import MAX_IMPORTED_SEQ, ExportFormatError
from sqlmem.sqlite.stores.history import MAX_SEQ
from sqlmem.sqlite.transfer import importer as transfer
from sqlmem.sqlite.transfer.importer import import_records

HEADER = {"format": "sqlmem-export", "format_version": 1}
UTC = timezone.utc
T0 = datetime(2024, 1, 1, tzinfo=UTC)


def message(seq: int, content: str = "x", session_id: str = "s") -> dict[str, Any]:
    return {
        "type": "message",
        "session_id": session_id,
        "seq": seq,
        "role": "user",
        "content": content,
    }


def set_last_seq(db: sqlmem.MemoryDB, session_id: str, value: int) -> None:
    """What a 0.1 import of a huge seq left behind (0.1 accepted up to 2**63-1)."""
    conn = apsw.Connection(str(db.path))
    try:
        conn.execute("UPDATE sessions SET last_seq = ? WHERE session_id = ?", (value, session_id))
    finally:
        conn.close()


def non_integer_seqs(db: sqlmem.MemoryDB) -> int:
    with db._engine.read() as conn:
        return int(
            conn.execute(
                "SELECT (SELECT count(*) FROM messages WHERE typeof(seq) != 'integer')"
                " + (SELECT count(*) FROM sessions WHERE typeof(last_seq) != 'integer')"
            ).get
        )


# -- item 7: imported seqs leave room for appends ---------------------------------------------


@pytest.mark.parametrize("field", ["seq", "archived_seq"])
def test_import_refuses_a_seq_past_the_documented_maximum(db: sqlmem.MemoryDB, field: str) -> None:
    """Issue 23 item 7: an imported seq of 2**63-1 passed, and the next append committed a
    float seq, then raised TypeError (and every later append failed)."""
    for value in (2**63 - 1, MAX_IMPORTED_SEQ + 1):
        record: dict[str, Any] = (
            message(value)
            if field == "seq"
            else {"type": "summary", "session_id": "s", "summary": "", "archived_seq": value}
        )
        with pytest.raises(ExportFormatError, match=f"record 2: {field} must be .* 2\\*\\*62"):
            import_records(db, [HEADER, record])
    assert db.history.sessions() == []


def test_an_import_at_the_maximum_leaves_room_for_appends(db: sqlmem.MemoryDB) -> None:
    """Issue 23 item 7: the largest accepted seq is followed by ordinary appends."""
    import_records(db, [HEADER, message(MAX_IMPORTED_SEQ, "last imported")])
    assert db.history.append("s", Message(role="user", content="a")) == MAX_IMPORTED_SEQ + 1
    assert db.history.append_many("s", [Message(role="user", content="b")] * 2) == [
        MAX_IMPORTED_SEQ + 2,
        MAX_IMPORTED_SEQ + 3,
    ]
    assert non_integer_seqs(db) == 0


@pytest.mark.parametrize("search", [True, False])
def test_an_exhausted_session_refuses_appends_and_commits_nothing(
    open_db: Callable[..., sqlmem.MemoryDB], search: bool
) -> None:
    """Issue 23 item 7: past 2**63-1 the seq upsert made a float; now the append raises a
    sqlmem error inside its transaction, nothing is stored, and the session stays readable
    and usable up to the last integer seq."""
    db = open_db(history_search=search)
    db.history.append("s", Message(role="user", content="first"))
    set_last_seq(db, "s", MAX_SEQ - 2)

    assert db.history.append("s", Message(role="user", content="fits")) == MAX_SEQ - 1
    with pytest.raises(sqlmem.InvalidArgumentError, match="seq counter") as caught:
        db.history.append_many("s", [Message(role="user", content="two")] * 2)
    assert isinstance(caught.value.__cause__, apsw.ConstraintError)
    assert db.history.append("s", Message(role="user", content="last")) == MAX_SEQ
    for _ in range(2):  # and it keeps refusing the same way, never a TypeError
        with pytest.raises(sqlmem.InvalidArgumentError, match="nothing was stored"):
            db.history.append("s", Message(role="user", content="one too many"))

    assert non_integer_seqs(db) == 0
    assert [m.content for m in db.history.get_all("s")] == ["first", "fits", "last"]
    assert [m.seq for m in db.history.get_recent("s", 2)] == [MAX_SEQ - 1, MAX_SEQ]
    assert db.history.count("s") == MAX_SEQ
    assert db.history.append("other", Message(role="user", content="fine")) == 1
    assert db.check().ok


# -- item 16: the newer updated_at wins, whatever the order and the batching --------------------


def fact(content: str, updated: datetime | None, fact_id: str = "f") -> dict[str, Any]:
    record: dict[str, Any] = {"type": "fact", "id": fact_id, "content": content}
    if updated is not None:
        record["updated_at"] = updated.isoformat()
    return record


@pytest.mark.parametrize("batch_size", [1, 2, 1000])
def test_the_newer_record_of_a_fact_wins_in_and_across_batches(
    open_db: Callable[..., sqlmem.MemoryDB],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    batch_size: int,
) -> None:
    """Issue 23 item 16: with the newer record first, the older text won within a batch
    and the newer across a batch boundary."""
    monkeypatch.setattr(transfer, "BATCH_SIZE", batch_size)
    newer, older = fact("newer text", T0 + timedelta(days=1)), fact("older text", T0)
    for name, records in (("a", [newer, older]), ("b", [older, newer])):
        db = open_db(tmp_path / f"{name}.db")
        counts = import_records(db, [HEADER, *records])
        assert db.facts.get("f").content == "newer text"  # type: ignore[union-attr]
        assert counts.facts + counts.facts_skipped == 2


@pytest.mark.parametrize("batch_size", [1, 1000])
def test_ties_go_to_the_later_line(
    open_db: Callable[..., sqlmem.MemoryDB],
    monkeypatch: pytest.MonkeyPatch,
    batch_size: int,
) -> None:
    """Issue 23 item 16: equal updated_at, in one batch or two: the later line wins."""
    monkeypatch.setattr(transfer, "BATCH_SIZE", batch_size)
    db = open_db()
    import_records(db, [HEADER, fact("earlier line", T0), fact("later line", T0)])
    assert db.facts.get("f").content == "later line"  # type: ignore[union-attr]
    import_records(db, [HEADER, fact("earlier line", T0), fact("later line", T0)])
    assert db.facts.get("f").content == "later line"  # type: ignore[union-attr]


# A model of the rule: the target's fact first, then the file's records in order; the one
# with the greatest updated_at wins, the later one on a tie. A record without updated_at
# counts as older than every dated one (it only fills an id nobody else gives).
def expected_winner(stored: tuple[str, int] | None, records: list[tuple[str, int | None]]) -> str:
    best: tuple[float, int] | None = None
    winner = None
    if stored is not None:
        best, winner = (stored[1], -1), stored[0]
    for position, (content, updated) in enumerate(records):
        key = (float("-inf") if updated is None else updated, position)
        if stored is not None and updated is None:
            continue  # an undated record never replaces a fact that was there before
        if best is None or key >= best:
            best, winner = key, content
    assert winner is not None
    return winner


@settings(max_examples=60)
@given(
    stored=st.none() | st.integers(0, 3),
    days=st.lists(st.none() | st.integers(0, 3), min_size=1, max_size=6),
    batch_size=st.integers(1, 7),
)
def test_the_winner_does_not_depend_on_batching(
    tmp_path_factory: pytest.TempPathFactory,
    stored: int | None,
    days: list[int | None],
    batch_size: int,
) -> None:
    """Issue 23 item 16, as a property: any batch size gives the model's winner."""
    records = [(f"line {i}", d) for i, d in enumerate(days)]
    path = tmp_path_factory.mktemp("rule") / "memory.db"
    with sqlmem.open(path) as db:
        if stored is not None:
            db.facts.index(Fact(id="f", content="target", updated_at=T0 + timedelta(stored)))
        original = transfer.BATCH_SIZE
        transfer.BATCH_SIZE = batch_size
        try:
            import_records(
                db,
                [HEADER] + [fact(c, None if d is None else T0 + timedelta(d)) for c, d in records],
            )
        finally:
            transfer.BATCH_SIZE = original
        want = expected_winner(None if stored is None else ("target", stored), records)
        assert db.facts.get("f").content == want  # type: ignore[union-attr]
