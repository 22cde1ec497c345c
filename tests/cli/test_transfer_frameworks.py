"""Export format 2: the frameworks' tables (kv rows, LangGraph checkpoints and pending
writes) survive `sqlmem export` / `sqlmem import` byte for byte, import stays an idempotent
merge, version-1 files still import, `stats()` counts them; bad records name their line."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem import Fact, Message
from sqlmem.cli import main
from sqlmem.rules.export_format import FORMAT_VERSION, ExportFormatError
from sqlmem.sqlite.frameworks.checkpoints import SQLiteCheckpointStore
from sqlmem.sqlite.frameworks.kv import SQLiteKeyValueStore
from sqlmem.sqlite.transfer.export import export_records
from sqlmem.sqlite.transfer.importer import import_lines, import_records

ALL_BYTES = bytes(range(256))


def _fill(db: sqlmem.MemoryDB) -> None:
    kv = SQLiteKeyValueStore(db.engine)
    kv.set_many("langchain.bytes:default", [("all", ALL_BYTES), ("", b""), ("é/\x00.", b"\x00")])
    kv.set_many("langgraph:ns", [("ttl", b"soon")], ttl_ms=3_600_000)
    saver = SQLiteCheckpointStore(db.engine)
    for i in range(3):
        parent = None if i == 0 else f"c{i - 1}"
        saver.put(("t1", "", f"c{i}"), parent, ("msgpack", bytes([i]) * 9), ("json", b"{}"), None)
    saver.put(("t2", "inner", "x"), None, ("bytes", ALL_BYTES), ("msgpack", b"\x80"), "run-1")
    saver.put_writes(
        ("t1", "", "c2"), [("task", 0, "ch", "msgpack", b"\x01\x02")], "", replace=False
    )
    saver.put_writes(
        ("t1", "", "c2"), [("task", -1, "__error__", "json", b'"x"')], "p", replace=True
    )
    db.history.append("s", Message(role="user", content="hello"))
    db.facts.index(Fact(id="f", content="a fact"))


def _dump(db: sqlmem.MemoryDB) -> dict[str, list[Any]]:
    """Every row of the frameworks' tables, as stored."""
    with db.engine.read() as conn:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3").fetchall()
            for table in ("kv", "lg_checkpoints", "lg_writes")
        }


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_frameworks_tables_round_trip_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, target, dump = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "a.jsonl"
    with sqlmem.open(source) as db:
        _fill(db)
        before = _dump(db)
        stats = db.stats()
    assert (stats["kv_entries"], stats["checkpoints"], stats["checkpoint_writes"]) == (4, 4, 2)

    _cli(capsys, "export", str(source), "-o", str(dump))
    lines = [json.loads(line) for line in dump.read_bytes().splitlines()]
    assert lines[0]["format_version"] == FORMAT_VERSION == 2
    kinds = [line.get("type") for line in lines[1:]]
    assert kinds == ["message", "fact", *["kv"] * 4, *["checkpoint"] * 4, *["checkpoint_write"] * 2]
    everything = next(line for line in lines if line.get("key") == "all")
    assert everything["namespace"] == "langchain.bytes:default"
    assert base64.b64decode(everything["value"]) == ALL_BYTES

    first = _cli(capsys, "import", str(target), str(dump))
    assert (first["kv"], first["checkpoints"], first["checkpoint_writes"]) == (4, 4, 2)
    again = _cli(capsys, "import", str(target), str(dump))  # idempotent
    assert (again["kv"], again["checkpoints"], again["checkpoint_writes"]) == (0, 0, 0)
    assert (again["kv_skipped"], again["checkpoints_skipped"]) == (4, 4)
    assert again["checkpoint_writes_skipped"] == 2
    with sqlmem.open(target) as db:
        assert _dump(db) == before  # every column, timestamps and expiry included
        kv = SQLiteKeyValueStore(db.engine)
        assert kv.get_many("langchain.bytes:default", ["all", "", "é/\x00."]) == [
            ALL_BYTES,
            b"",
            b"\x00",
        ]
        again_stats = db.stats()
        exported_again = list(export_records(db))[1:]
    assert {k: again_stats[k] for k in ("kv_entries", "checkpoints", "checkpoint_writes")} == {
        "kv_entries": 4,
        "checkpoints": 4,
        "checkpoint_writes": 2,
    }
    assert exported_again == lines[1:]  # exporting an import gives the same lines
    text = capsys.readouterr()
    assert main(["info", str(target)]) == 0
    assert "kv entries      4" in capsys.readouterr().out and not text.err


def test_expired_rows_are_neither_exported_nor_counted(tmp_path: Path) -> None:
    with sqlmem.open(tmp_path / "a.db") as db:
        kv = SQLiteKeyValueStore(db.engine)
        kv.set_many("n", [("gone", b"x")], ttl_ms=1)
        kv.set_many("n", [("kept", b"y")])
        with db.engine.write() as conn:  # the first row expired long ago
            conn.execute("UPDATE kv SET expires_at = 1 WHERE key = 'gone'")
        records = [r for r in export_records(db) if r.get("type") == "kv"]
        assert [r["key"] for r in records] == ["kept"]
        assert db.stats()["kv_entries"] == 1


def _kv_record(raw: bytes, updated: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "kv",
        "namespace": "n",
        "key": "k",
        "value": base64.b64encode(raw).decode(),
        "created_at": "2025-01-01T00:00:00.000+00:00",
        "updated_at": updated,
        "ttl_ms": None,
        "expires_at": None,
        **extra,
    }


HEADER = {"format": "sqlmem-export", "format_version": 2}


def test_kv_import_is_a_merge_by_updated_at(tmp_path: Path) -> None:
    with sqlmem.open(tmp_path / "a.db") as db:
        kv = SQLiteKeyValueStore(db.engine)
        newer = _kv_record(b"new", "2025-06-01T00:00:00.000+00:00")
        older = _kv_record(b"old", "2025-01-01T00:00:00.000+00:00")
        assert import_records(db, [HEADER, newer]).kv == 1
        counts = import_records(db, [HEADER, older])  # an older export never rolls back
        assert (counts.kv, counts.kv_skipped) == (0, 1)
        assert kv.get_many("n", ["k"]) == [b"new"]
        newest = _kv_record(b"newest", "2025-07-01T00:00:00.000+00:00")
        assert import_records(db, [HEADER, newest]).kv == 1
        assert kv.get_many("n", ["k"]) == [b"newest"]
        lapsed = _kv_record(b"x", "2026-01-01T00:00:00.000+00:00", key="lapsed", ttl_ms=5,
                            expires_at="2026-01-01T00:00:00.005+00:00")  # fmt: skip
        assert import_records(db, [HEADER, lapsed]).kv_skipped == 1  # expired since
        assert kv.get_many("n", ["lapsed"]) == [None]


def test_version_1_files_still_import(tmp_path: Path) -> None:
    lines = [
        json.dumps({"format": "sqlmem-export", "format_version": 1}),
        json.dumps({"type": "fact", "id": "f", "content": "old file"}),
        json.dumps(
            {"type": "message", "session_id": "s", "seq": 1, "role": "user", "content": "hi"}
        ),
    ]
    with sqlmem.open(tmp_path / "a.db") as db:
        counts = import_lines(db, [line.encode() + b"\n" for line in lines])
        assert (counts.facts, counts.messages, counts.kv) == (1, 1, 0)
        assert db.facts.get("f").content == "old file"


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (_kv_record(b"x", "2025-01-01T00:00:00.000+00:00", value="not base64!"), "value"),
        (_kv_record(b"x", "2025-01-01T00:00:00.000+00:00", colour="red"), "colour"),
        (_kv_record(b"x", "2025-01-01T00:00:00"), "time zone"),
        (_kv_record(b"x", "2025-01-01T00:00:00.000+00:00", ttl_ms=True), "ttl_ms"),
        (_kv_record(b"x", "2025-01-01T00:00:00.000+00:00", key="\ud800"), "surrogate"),
        ({"type": "checkpoint", "thread_id": "t", "checkpoint_id": ""}, "checkpoint_id"),
        (
            {
                "type": "checkpoint_write",
                "thread_id": "t",
                "checkpoint_id": "c",
                "task_id": "x",
                "idx": 1.5,
                "channel": "c",
                "value_type": "j",
                "value": "",
            },
            "idx",
        ),
    ],
)
def test_bad_records_are_refused_with_their_position(
    tmp_path: Path, record: dict[str, Any], message: str
) -> None:
    with sqlmem.open(tmp_path / "a.db") as db:
        with pytest.raises(ExportFormatError, match=f"record 2: .*{message}"):
            import_records(db, [HEADER, record])
        assert _dump(db) == {"kv": [], "lg_checkpoints": [], "lg_writes": []}


texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=25, deadline=None)
@given(
    pairs=st.dictionaries(st.tuples(texts, texts), st.binary(max_size=64), max_size=8),
    blobs=st.lists(st.tuples(texts, st.binary(max_size=64)), max_size=5, unique_by=lambda t: t[0]),
)
def test_any_bytes_and_names_round_trip(
    tmp_path_factory: pytest.TempPathFactory,
    pairs: dict[tuple[str, str], bytes],
    blobs: list[tuple[str, bytes]],
) -> None:
    folder = tmp_path_factory.mktemp("rt")
    with sqlmem.open(folder / "a.db") as db, sqlmem.open(folder / "b.db") as other:
        kv = SQLiteKeyValueStore(db.engine)
        for (namespace, key), value in pairs.items():
            kv.set_many(namespace, [(key, value)])
        saver = SQLiteCheckpointStore(db.engine)
        for thread, blob in blobs:
            saver.put((thread, "", "c"), None, ("bytes", blob), ("bytes", blob), None)
        records = list(export_records(db))
        import_records(other, json.loads(json.dumps(records)))  # through JSON text
        assert _dump(other) == _dump(db)
