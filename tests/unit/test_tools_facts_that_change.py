"""The memory tools and facts that change: save_memory with a key supersedes, search_memory
reads live facts (or those valid `as_of` a time), memory_history shows every version."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem import Fact


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def mdb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    db: Any
    if request.param == "postgres":
        db = request.getfixturevalue("open_pg")()
    elif request.param == "sqlite":
        db = sqlmem.open(tmp_path / "memory.db")
    else:
        db = sqlmem.open(":memory:")
    yield db
    db.close()


def call(tools: sqlmem.MemoryTools, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(tools.call(name, args))
    return result


def test_save_with_a_key_replaces_the_old_value(mdb: Any) -> None:
    tools = sqlmem.MemoryTools(mdb)
    old = call(tools, "save_memory", {"content": "The user lives in Paris.", "key": "user.city"})
    new = call(tools, "save_memory", {"content": "The user lives in Berlin.", "key": "user.city"})
    found = call(tools, "search_memory", {"query": "user lives"})["results"]
    assert [(r["id"], r["key"]) for r in found] == [(new["id"], "user.city")]
    history = call(tools, "memory_history", {"key": "user.city"})["history"]
    assert [h["id"] for h in history] == [old["id"], new["id"]]
    assert history[0]["superseded_by"] == new["id"] and history[1]["valid_to"] is None
    assert call(tools, "memory_history", {"id": old["id"]})["history"] == history


def test_search_as_of_a_date(mdb: Any) -> None:
    from datetime import datetime, timezone

    mdb.facts.remember(
        Fact(
            content="works at Acme",
            key="user.job",
            valid_from=datetime(2020, 1, 1, tzinfo=timezone.utc),
        )
    )
    mdb.facts.remember(
        Fact(
            content="works at Initech",
            key="user.job",
            valid_from=datetime(2023, 1, 1, tzinfo=timezone.utc),
        )
    )
    tools = sqlmem.MemoryTools(mdb)
    then = call(tools, "search_memory", {"query": "works", "as_of": "2021-06-01"})["results"]
    assert [r["content"] for r in then] == ["works at Acme"]
    now = call(tools, "search_memory", {"query": "works"})["results"]
    assert [r["content"] for r in now] == ["works at Initech"]
    newest = call(tools, "search_memory", {"as_of": "2021-06-01T00:00:00Z"})["results"]
    assert [r["content"] for r in newest] == ["works at Acme"]


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("search_memory", {"query": "x", "as_of": "yesterday"}),
        ("memory_history", {}),
        ("memory_history", {"key": "a", "id": "b"}),
        ("memory_history", {"key": "bad key"}),
        ("save_memory", {"content": "x", "key": "bad key"}),
    ],
)
def test_bad_arguments(mdb: Any, name: str, args: dict[str, Any]) -> None:
    result = call(sqlmem.MemoryTools(mdb), name, args)
    assert result["code"] == "invalid_arguments", result


def test_history_of_an_unknown_id_is_not_found(mdb: Any) -> None:
    assert call(sqlmem.MemoryTools(mdb), "memory_history", {"id": "nope"})["code"] == "not_found"


def test_read_only_tools_include_history(mdb: Any) -> None:
    names = sqlmem.MemoryTools(mdb, read_only=True).names
    assert "memory_history" in names and "save_memory" not in names
