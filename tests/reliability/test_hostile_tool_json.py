"""Hostile JSON text thrown at every memory tool: never `internal`, never a traceback.

Regressions: a JSON integer of 5,001 digits (past Python's int-string limit) answered
`internal` with a logged traceback, whatever the tool and argument; so did an id holding
a lone surrogate (`"\\ud800"`) given to `forget_memory` or `promote_memory` on SQLite and
PostgreSQL, where the driver could not encode it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem.tools.catalog import TOOLS

EXPECTED_CODES = {"invalid_arguments", "not_found", "conflict"}

#: Raw JSON value texts json.dumps would not produce, or that stress the decoder.
HOSTILE_VALUES = [
    "9" * 5001,
    "-" + "9" * 4301,
    "1" + "0" * 400 + ".0",
    "1e999999",
    "-1E400",
    "0.5e-400",
    "NaN",
    "-Infinity",
    '"\\ud800"',
    '"a\\udfffb"',
    '"\\u0000"',
    "[" * 3000 + "]" * 3000,
    '{"a":' * 3000 + "1" + "}" * 3000,
    "123456789012345678901234567890",
]

#: A plausible value for each required argument, so the hostile one is what gets checked.
PLAUSIBLE = {
    "content": '"x"',
    "id": '"abc"',
    "filename": '"MEMORY.md"',
    "query": '"q"',
    "layer": '"semantic"',
    "old_text": '"a"',
    "new_text": '"b"',
}

CASES = [
    (tool.name, name) for tool in TOOLS for name in [*tool.schema.get("properties", {}), "extra"]
]


def _arguments(tool_name: str, name: str, raw: str) -> str:
    tool = next(t for t in TOOLS if t.name == tool_name)
    fields = {k: PLAUSIBLE.get(k, '"x"') for k in tool.schema.get("required", [])}
    fields[name] = raw
    return "{" + ",".join(f"{json.dumps(k)}:{v}" for k, v in fields.items()) + "}"


def _answer(tools: sqlmem.MemoryTools, name: str, text: str) -> dict[str, Any]:
    result = json.loads(tools.call(name, text))
    assert isinstance(result, dict)
    return result


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def tools(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sqlmem.MemoryTools]:
    db: Any
    if request.param == "postgres":
        db = request.getfixturevalue("open_pg")()
    elif request.param == "sqlite":
        db = sqlmem.open(tmp_path / "memory.db")
    else:
        db = sqlmem.inmemory.open()
    db.docs.write("MEMORY.md", "# Memory\na\n")
    yield sqlmem.MemoryTools(db)
    db.close()


def test_a_5001_digit_integer_is_invalid_arguments_without_a_traceback(
    tools: sqlmem.MemoryTools, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="sqlmem"):
        result = _answer(tools, "search_memory", '{"top_k": ' + "9" * 5001 + "}")
        mapped = _answer(tools, "search_memory", {"top_k": 10**5000})  # type: ignore[arg-type]
    assert result["code"] == "invalid_arguments", result
    assert "digits" in result["error"]
    assert mapped["code"] == "invalid_arguments", mapped
    assert "top_k" in mapped["error"]
    assert not [r for r in caplog.records if r.exc_info], caplog.text


@pytest.mark.parametrize("tool_name", ["forget_memory", "promote_memory", "update_memory"])
def test_an_id_with_a_lone_surrogate_is_not_found(
    tools: sqlmem.MemoryTools, tool_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    text = _arguments(tool_name, "id", '"\\ud800"')
    if tool_name == "update_memory":
        text = text[:-1] + ',"content":"y"}'
    with caplog.at_level(logging.DEBUG, logger="sqlmem"):
        result = _answer(tools, tool_name, text)
    assert result["code"] == "not_found", result
    assert not [r for r in caplog.records if r.exc_info], caplog.text


def test_every_hostile_value_in_every_argument_of_every_tool(
    tools: sqlmem.MemoryTools, caplog: pytest.LogCaptureFixture
) -> None:
    internal: list[tuple[str, str, str, str]] = []
    with caplog.at_level(logging.DEBUG, logger="sqlmem"):
        for tool_name, name in CASES:
            for raw in HOSTILE_VALUES:
                result = _answer(tools, tool_name, _arguments(tool_name, name, raw))
                if result.get("code") not in EXPECTED_CODES and "error" in result:
                    internal.append((tool_name, name, raw[:20], result["error"][:80]))
    assert internal == []
    assert not [r for r in caplog.records if r.exc_info], caplog.text


_raw_scalars = st.one_of(
    st.sampled_from(HOSTILE_VALUES),
    st.integers(min_value=4000, max_value=6000).map(lambda n: "9" * n),
    st.text(max_size=30).map(lambda t: json.dumps(t, ensure_ascii=True)),
    st.from_regex(r"-?[0-9]{1,40}(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,7})?", fullmatch=True),
    st.sampled_from(["true", "false", "null", "[]", "{}"]),
)
_raw_values = st.recursive(
    _raw_scalars,
    lambda inner: st.lists(inner, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]"),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(
    case=st.sampled_from(CASES),
    raw=_raw_values,
    surrogate_key=st.booleans(),
)
def test_hostile_json_text_never_reaches_internal(
    case: tuple[str, str], raw: str, surrogate_key: bool
) -> None:
    tool_name, name = case
    text = _arguments(tool_name, name, raw)
    if surrogate_key:
        text = text[:-1] + ',"\\udc80":1}'
    for tools in _TWO_KINDS:
        result = _answer(tools, tool_name, text)
        if "error" in result:
            assert result["code"] in EXPECTED_CODES, (tool_name, name, raw[:40], result)


_TWO_KINDS: list[sqlmem.MemoryTools] = []


@pytest.fixture(scope="module", autouse=True)
def _two_kinds(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One SQLite file and one twin for the hypothesis runs (a file per example costs
    seconds)."""
    dbs: list[Any] = [
        sqlmem.open(tmp_path_factory.mktemp("hostile") / "memory.db"),
        sqlmem.inmemory.open(),
    ]
    for db in dbs:
        db.docs.write("MEMORY.md", "# Memory\na\n")
        _TWO_KINDS.append(sqlmem.MemoryTools(db))
    yield
    _TWO_KINDS.clear()
    for db in dbs:
        db.close()
