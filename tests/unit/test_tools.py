"""MemoryTools (SPEC 16): every tool on a SQLite file and on the twin object, every bad
input of issue 18 with its error code and nothing stored, read_only and groups, the three
spec styles, and arbitrary JSON thrown at every tool."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem.tools.catalog import TOOLS

ALL_TOOLS = [t.name for t in TOOLS]
WRITERS = {
    "save_memory",
    "update_memory",
    "forget_memory",
    "promote_memory",
    "write_workspace_memory_file",
    "edit_workspace_memory_file",
}


@pytest.fixture(params=["sqlite", "memory", "postgres"])
def mdb(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    db: Any
    if request.param == "postgres":  # a fresh agent of the session's server
        db = request.getfixturevalue("open_pg")()
    else:
        db = (
            sqlmem.open(tmp_path / "memory.db")
            if request.param == "sqlite"
            else sqlmem.inmemory.open()
        )
    yield db
    db.close()


def ok(tools: sqlmem.MemoryTools, name: str, args: Any = None) -> dict[str, Any]:
    result = json.loads(tools.call(name, args))
    assert "error" not in result, result
    return result


def failed(tools: sqlmem.MemoryTools, name: Any, args: Any) -> tuple[str, str]:
    result = json.loads(tools.call(name, args))
    assert set(result) == {"error", "code"}, result
    assert result["error"]
    return result["code"], result["error"]


def state(db: Any) -> tuple[Any, ...]:
    """Everything a tool could have stored."""
    facts = sorted(
        (f.id, f.content, f.category, tuple(f.tags), f.layer, f.confidence, f.salience, f.hits)
        for f in db.facts.list(limit=10_000)
    )
    docs = [(d.path, d.revision, db.docs.read(d.path).content) for d in db.docs.list()]
    return facts, docs, db.history.sessions()


# --- every tool, both implementations -------------------------------------------------


def test_fact_tools(mdb: Any) -> None:
    tools = sqlmem.MemoryTools(mdb)
    saved = ok(
        tools,
        "save_memory",
        json.dumps(
            {
                "content": "The user prefers metric units",
                "category": "user/prefs",
                "tags": ["units", "prefs"],
                "layer": "episodic",
                "kind": "preference",
                "confidence": 0.5,
            }
        ),
    )
    assert saved["merged"] is False
    again = ok(
        tools,
        "save_memory",
        {"content": "the user prefers metric units.", "layer": "episodic", "tags": ["extra"]},
    )
    assert again == {"id": saved["id"], "merged": True}
    fact = mdb.facts.get(saved["id"])
    assert fact.hits == 2 and fact.tags == ["units", "prefs", "extra"]
    assert fact.confidence == pytest.approx(1 - 0.5 * 0.0)  # 1-(1-0.5)(1-1.0)
    other = ok(tools, "save_memory", {"content": "Deploys run with make ship"})["id"]

    found = ok(tools, "search_memory", {"query": "metric units"})["results"]
    assert [r["id"] for r in found] == [saved["id"]]
    assert set(found[0]) == {"id", "content", "category", "tags", "layer", "score"}
    assert found[0]["score"] > 0 and found[0]["layer"] == "episodic"
    assert ok(tools, "search_memory", {"query": "metric", "layer": "semantic"})["results"] == []
    assert ok(tools, "search_memory", {"query": "units", "category": "user"})["results"]
    assert ok(tools, "search_memory", {"query": "units", "tags": ["nope"]})["results"] == []
    newest = ok(tools, "search_memory", {"query": "  ", "top_k": 1})["results"]
    assert [r["id"] for r in newest] == [other] and newest[0]["score"] is None
    assert len(ok(tools, "search_memory")["results"]) == 2

    assert ok(tools, "list_categories") == {"categories": ["user/prefs"]}
    assert ok(tools, "list_tags", "{}") == {"tags": {"units": 1, "prefs": 1, "extra": 1}}

    updated = ok(
        tools,
        "update_memory",
        {
            "id": saved["id"],
            "content": "Metric units, always",
            "tags": ["units"],
            "salience": 1,
            "confidence": 0,
        },
    )
    assert updated["content"] == "Metric units, always" and updated["salience"] == 1.0
    fact = mdb.facts.get(saved["id"])
    assert (fact.content, fact.tags, fact.confidence, fact.category, fact.kind, fact.hits) == (
        "Metric units, always",
        ["units"],
        0.0,
        "user/prefs",
        "preference",
        2,
    )
    assert ok(tools, "search_memory", {"query": "prefers"})["results"] == []

    assert ok(tools, "promote_memory", {"id": saved["id"], "layer": "semantic"}) == {
        "id": saved["id"],
        "layer": "semantic",
    }
    assert mdb.facts.get(saved["id"]).layer == "semantic"
    assert ok(tools, "forget_memory", {"id": other}) == {"id": other, "forgotten": True}
    assert mdb.facts.get(other) is None


def test_workspace_tools(mdb: Any) -> None:
    tools = sqlmem.MemoryTools(mdb)
    assert ok(tools, "list_workspace_memory_files") == {"files": []}
    wrote = ok(
        tools,
        "write_workspace_memory_file",
        {"filename": "MEMORY.md", "content": "# Memory\n- tea\n"},
    )
    assert wrote == {"created": True, "overwritten": False, "bytesWritten": 15, "revision": 1}
    same = ok(
        tools,
        "write_workspace_memory_file",
        {"filename": "MEMORY.md", "content": "# Memory\n- tea\n"},
    )
    assert same == {"created": False, "overwritten": False, "bytesWritten": 15, "revision": 1}
    ok(tools, "write_workspace_memory_file", {"filename": "memory/2026-01-31.md", "content": "ü"})

    edit = ok(
        tools,
        "edit_workspace_memory_file",
        {"filename": "MEMORY.md", "old_text": "tea", "new_text": "green tea"},
    )
    assert edit == {"replacements": 1, "fileSizeAfter": 21}
    read = ok(tools, "read_workspace_memory_file", {"filename": "MEMORY.md"})
    assert read["content"] == "# Memory\n- green tea\n" and read["revision"] == 2
    assert read["filename"] == "MEMORY.md" and read["size"] == 21
    assert mdb.docs.read_revision("MEMORY.md", 1) == "# Memory\n- tea\n"

    many = ok(
        tools,
        "edit_workspace_memory_file",
        {"filename": "MEMORY.md", "old_text": "e", "new_text": "", "replace_all": True},
    )
    assert many["replacements"] == 4

    files = ok(tools, "list_workspace_memory_files")["files"]
    assert [f["filename"] for f in files] == ["MEMORY.md", "memory/2026-01-31.md"]
    assert set(files[0]) == {"filename", "size", "revision", "enabled", "updated_at"}
    daily = ok(tools, "list_workspace_memory_files", {"filename_prefix": "memory/"})["files"]
    assert [(f["filename"], f["size"]) for f in daily] == [("memory/2026-01-31.md", 2)]


def test_search_conversations(mdb: Any) -> None:
    mdb.history.append("chat:1", sqlmem.Message(role="user", content="Book a flight to Lisbon"))
    mdb.history.append("chat:2", sqlmem.Message(role="user", content="Lisbon weather?"))
    mdb.history.compact("chat:1", keep_last=0)  # archived messages are still found
    tools = sqlmem.MemoryTools(mdb)
    hits = ok(tools, "search_conversations", {"query": "Lisbon"})["results"]
    assert {(h["session_id"], h["seq"]) for h in hits} == {("chat:1", 1), ("chat:2", 1)}
    assert set(hits[0]) == {"session_id", "seq", "role", "content", "created_at", "score"}
    only = ok(
        tools, "search_conversations", {"query": "lisbon", "session_id": "chat:2", "top_k": 5}
    )["results"]
    assert [h["content"] for h in only] == ["Lisbon weather?"]
    assert ok(tools, "search_conversations", {"query": "?!"})["results"] == []


# --- bad input: the list, each with its code and nothing stored -----------------

TEN_MB = "x" * 10_000_000

BAD_CALLS: list[tuple[str, Any, str]] = [
    ("save_memory", "this is not JSON", "invalid_arguments"),
    ("save_memory", '{"content": "unterminated', "invalid_arguments"),
    ("save_memory", "[1, 2]", "invalid_arguments"),
    ("save_memory", '"a string"', "invalid_arguments"),
    ("save_memory", "42", "invalid_arguments"),
    ("save_memory", "null", "invalid_arguments"),
    ("save_memory", b"\xff\xfe", "invalid_arguments"),
    ("save_memory", {}, "invalid_arguments"),
    ("save_memory", {"content": 42}, "invalid_arguments"),
    ("save_memory", {"content": None}, "invalid_arguments"),
    ("save_memory", {"content": ""}, "invalid_arguments"),
    ("save_memory", {"content": "   "}, "invalid_arguments"),
    ("save_memory", {"content": TEN_MB}, "invalid_arguments"),
    ("save_memory", {"content": "x", "extra": 1}, "invalid_arguments"),
    ("save_memory", {"content": "x", "confidence": 1.5}, "invalid_arguments"),
    ("save_memory", {"content": "x", "confidence": "high"}, "invalid_arguments"),
    ("save_memory", {"content": "x", "layer": "core"}, "invalid_arguments"),
    ("save_memory", {"content": "x", "tags": "a,b"}, "invalid_arguments"),
    ("save_memory", {"content": "x", "tags": [1]}, "invalid_arguments"),
    ("save_memory", {"content": "x", "category": "../etc"}, "invalid_arguments"),
    ("save_memory", {"content": "x", "category": "/abs"}, "invalid_arguments"),
    ("save_memory", {"content": "x", "kind": "no spaces"}, "invalid_arguments"),
    ("save_memory", {"content": "lone \ud800 surrogate"}, "invalid_arguments"),
    ("search_memory", {"query": None}, "invalid_arguments"),
    ("search_memory", {"query": TEN_MB}, "invalid_arguments"),
    ("search_memory", {"top_k": 0}, "invalid_arguments"),
    ("search_memory", {"top_k": 1000}, "invalid_arguments"),
    ("search_memory", {"top_k": True}, "invalid_arguments"),
    ("search_memory", {"top_k": 2.5}, "invalid_arguments"),
    ("list_tags", {"x": 1}, "invalid_arguments"),
    ("update_memory", {"content": "x"}, "invalid_arguments"),
    ("update_memory", {"id": "no-such-id", "content": "x"}, "not_found"),
    ("update_memory", {"id": "{known}"}, "invalid_arguments"),
    ("update_memory", {"id": "{known}", "category": "a/../b"}, "invalid_arguments"),
    ("update_memory", {"id": "{known}", "salience": -0.1}, "invalid_arguments"),
    ("forget_memory", {"id": "no-such-id"}, "not_found"),
    ("forget_memory", {"id": ""}, "invalid_arguments"),
    ("forget_memory", {"id": ["{known}"]}, "invalid_arguments"),
    ("promote_memory", {"id": "no-such-id", "layer": "semantic"}, "not_found"),
    ("promote_memory", {"id": "{known}"}, "invalid_arguments"),
    ("read_workspace_memory_file", {"filename": "NOPE.md"}, "not_found"),
    ("read_workspace_memory_file", {"filename": "../secrets.md"}, "invalid_arguments"),
    ("read_workspace_memory_file", {"filename": "/etc/passwd"}, "invalid_arguments"),
    ("read_workspace_memory_file", {"filename": "/abs/MEMORY.md"}, "invalid_arguments"),
    (
        "write_workspace_memory_file",
        {"filename": "../MEMORY.md", "content": "x"},
        "invalid_arguments",
    ),
    (
        "write_workspace_memory_file",
        {"filename": "a/../../b.md", "content": "x"},
        "invalid_arguments",
    ),
    (
        "write_workspace_memory_file",
        {"filename": "/tmp/evil.md", "content": "x"},
        "invalid_arguments",
    ),
    ("write_workspace_memory_file", {"filename": "a\\b.md", "content": "x"}, "invalid_arguments"),
    ("write_workspace_memory_file", {"filename": "notes.txt", "content": "x"}, "invalid_arguments"),
    ("write_workspace_memory_file", {"filename": "M.md", "content": TEN_MB}, "invalid_arguments"),
    ("write_workspace_memory_file", {"filename": "M.md"}, "invalid_arguments"),
    ("write_workspace_memory_file", {"filename": "M.md", "content": None}, "invalid_arguments"),
    (
        "edit_workspace_memory_file",
        {"filename": "NOPE.md", "old_text": "a", "new_text": "b"},
        "not_found",
    ),
    (
        "edit_workspace_memory_file",
        {"filename": "MEMORY.md", "old_text": "absent", "new_text": "b"},
        "conflict",
    ),
    (
        "edit_workspace_memory_file",
        {"filename": "MEMORY.md", "old_text": "o", "new_text": "b"},
        "conflict",
    ),
    (
        "edit_workspace_memory_file",
        {"filename": "MEMORY.md", "old_text": "", "new_text": "b"},
        "invalid_arguments",
    ),
    (
        "edit_workspace_memory_file",
        {"filename": "../MEMORY.md", "old_text": "a", "new_text": "b"},
        "invalid_arguments",
    ),
    ("list_workspace_memory_files", {"filename_prefix": 3}, "invalid_arguments"),
    ("search_conversations", {}, "invalid_arguments"),
    ("search_conversations", {"query": "x", "session_id": ""}, "invalid_arguments"),
    ("no_such_tool", {}, "unknown_tool"),
    ("", {}, "unknown_tool"),
    (None, {}, "unknown_tool"),
]


def _seeded(db: Any) -> str:
    known = db.facts.remember(sqlmem.Fact(content="Seed fact about otters"))
    db.docs.write("MEMORY.md", "# Memory\nfoo\n")
    db.history.append("s", sqlmem.Message(role="user", content="hello"))
    return known


@pytest.mark.parametrize(
    ("name", "args", "code"), BAD_CALLS, ids=[f"{i}-{c[0]}" for i, c in enumerate(BAD_CALLS)]
)
def test_bad_input_gets_its_code_and_stores_nothing(
    mdb: Any, name: Any, args: Any, code: str
) -> None:
    known = _seeded(mdb)
    if isinstance(args, dict):
        args = {k: (known if v == "{known}" else v) for k, v in args.items()}
    before = state(mdb)
    tools = sqlmem.MemoryTools(mdb)
    got, message = failed(tools, name, args)
    assert got == code, message
    assert len(message) <= 2000
    assert state(mdb) == before


def test_errors_say_which_argument_and_why(mdb: Any) -> None:
    tools = sqlmem.MemoryTools(mdb)
    assert failed(tools, "save_memory", {})[1] == "missing required argument 'content'"
    assert "'top_k'" in failed(tools, "search_memory", {"top_k": 99})[1]
    assert "at most 50" in failed(tools, "search_memory", {"top_k": 99})[1]
    message = failed(tools, "save_memory", {"content": TEN_MB})[1]
    assert "'content'" in message and "at most 20000" in message and "xxxx" not in message
    assert "'color'" in failed(tools, "save_memory", {"content": "x", "color": 1})[1]
    assert "search_memory" in failed(tools, "nope", {})[1]  # lists what exists


def test_schema_and_validator_agree() -> None:
    """The published schema is real JSON Schema, and what it refuses `call()` refuses."""
    tools = sqlmem.MemoryTools(sqlmem.inmemory.open())
    schemas = {s["name"]: s["inputSchema"] for s in tools.specs("mcp")}
    for schema in schemas.values():
        jsonschema.Draft202012Validator.check_schema(schema)
    for name, args, code in BAD_CALLS:
        if code != "invalid_arguments" or not isinstance(args, dict) or name not in schemas:
            continue
        schema_ok = jsonschema.Draft202012Validator(schemas[name]).is_valid(args)
        got = json.loads(tools.call(name, args))
        if not schema_ok:  # refused by the schema: the validator refuses it too
            assert got.get("code") == "invalid_arguments", (name, args)


def test_busy_database(tmp_path: Path) -> None:
    db = sqlmem.open(tmp_path / "memory.db", sqlmem.StoreConfig(busy_timeout_ms=50))
    db.docs.write("MEMORY.md", "x\n")
    tools = sqlmem.MemoryTools(db)
    # apsw, not the stdlib: two SQLite libraries in one process do not see each other's
    # POSIX locks.
    holder = apsw.Connection(str(tmp_path / "memory.db"))
    holder.execute("BEGIN IMMEDIATE")
    try:
        code, message = failed(tools, "save_memory", {"content": "blocked"})
        assert code == "busy" and "busy" in message
        code, _ = failed(
            tools, "write_workspace_memory_file", {"filename": "MEMORY.md", "content": "y"}
        )
        assert code == "busy"
        assert ok(tools, "search_memory", {"query": "blocked"}) == {"results": []}  # reads go on
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert db.facts.count() == 0 and db.docs.read("MEMORY.md").content == "x\n"
    assert ok(tools, "save_memory", {"content": "unblocked"})["merged"] is False
    db.close()


def test_closed_database(tmp_path: Path) -> None:
    db = sqlmem.open(tmp_path / "memory.db")
    tools = sqlmem.MemoryTools(db)
    db.close()
    for name, args in [
        ("save_memory", {"content": "x"}),
        ("search_memory", {}),
        ("read_workspace_memory_file", {"filename": "MEMORY.md"}),
        ("search_conversations", {"query": "x"}),
    ]:
        assert failed(tools, name, args) == ("internal", "the memory database is closed")


def test_unexpected_failure_is_internal_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def search(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("boom")

    db = sqlmem.inmemory.open()
    db.facts = Broken()  # type: ignore[assignment]
    code, message = failed(sqlmem.MemoryTools(db), "search_memory", {"query": "x"})
    assert code == "internal" and "boom" in message
    assert "memory tool failed" in caplog.text


def test_arguments_forms(mdb: Any) -> None:
    tools = sqlmem.MemoryTools(mdb)
    assert (
        ok(tools, "list_tags", None) == ok(tools, "list_tags", "") == ok(tools, "list_tags", b"{}")
    )
    assert ok(tools, "save_memory", b'{"content": "caf\xc3\xa9"}')["merged"] is False
    assert mdb.facts.list()[0].content == "café"
    assert ok(tools, "search_memory", {"top_k": 2.0})  # an integral number is an integer


# --- read_only, groups, spec styles -----------------------------------------------------


def test_read_only_offers_and_runs_only_readers(mdb: Any) -> None:
    _seeded(mdb)
    before = state(mdb)
    tools = sqlmem.MemoryTools(mdb, read_only=True)
    assert set(tools.names) == set(ALL_TOOLS) - WRITERS
    for style in ("openai", "anthropic", "mcp"):
        assert len(tools.specs(style)) == len(ALL_TOOLS) - len(WRITERS)
    for name in WRITERS:
        code, message = failed(tools, name, {"id": "x", "content": "y", "filename": "M.md"})
        assert code == "unknown_tool" and "read-only" in message
    assert ok(tools, "read_workspace_memory_file", {"filename": "MEMORY.md"})
    assert state(mdb) == before


def test_groups(mdb: Any) -> None:
    docs_only = sqlmem.MemoryTools(mdb, groups=["docs"])
    assert docs_only.names == [
        "list_workspace_memory_files",
        "read_workspace_memory_file",
        "write_workspace_memory_file",
        "edit_workspace_memory_file",
    ]
    code, message = failed(docs_only, "save_memory", {"content": "x"})
    assert code == "unknown_tool" and "'facts'" in message
    assert sqlmem.MemoryTools(mdb, groups=("history",)).names == ["search_conversations"]
    assert sqlmem.MemoryTools(mdb, groups=()).specs() == []
    with pytest.raises(sqlmem.InvalidArgumentError, match="unknown tool groups"):
        sqlmem.MemoryTools(mdb, groups=("facts", "vectors"))
    with pytest.raises(sqlmem.InvalidArgumentError):
        sqlmem.MemoryTools(mdb, groups="facts")  # a string is not a list of groups
    with pytest.raises(sqlmem.InvalidArgumentError, match=r"\.docs"):
        sqlmem.MemoryTools(object(), groups=("docs",))  # type: ignore[arg-type]


def test_spec_styles() -> None:
    tools = sqlmem.MemoryTools(sqlmem.inmemory.open())
    openai = tools.specs()
    assert openai == tools.specs("openai")
    anthropic = tools.specs("anthropic")
    mcp = tools.specs("mcp")
    assert [s["function"]["name"] for s in openai] == ALL_TOOLS
    for o, a, m in zip(openai, anthropic, mcp, strict=True):
        assert o["type"] == "function" and set(o) == {"type", "function"}
        assert set(o["function"]) == {"name", "description", "parameters"}
        assert set(a) == {"name", "description", "input_schema"}
        assert set(m) == {"name", "description", "inputSchema"}
        assert o["function"]["parameters"] == a["input_schema"] == m["inputSchema"]
        schema = m["inputSchema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        description = m["description"]
        assert description.endswith(".") and 40 <= len(description) <= 300
        for name, prop in schema["properties"].items():
            assert prop.get("description"), (m["name"], name)
    json.dumps(openai)  # plain JSON, ready to send
    openai[0]["function"]["name"] = "changed"  # callers get their own copies
    assert tools.specs()[0]["function"]["name"] == "save_memory"
    for spec in mcp:  # even deep inside: what call() validates against stays as it was
        spec["inputSchema"]["properties"].clear()
        spec["inputSchema"]["additionalProperties"] = True
    assert json.loads(tools.call("search_memory", {"top_k": 500}))["code"] == "invalid_arguments"
    assert tools.specs("mcp")[1]["inputSchema"]["properties"]["top_k"]["maximum"] == 50
    with pytest.raises(sqlmem.InvalidArgumentError, match="style"):
        tools.specs("gemini")  # type: ignore[arg-type]


def test_exported_lazily() -> None:
    from sqlmem.tools import MemoryTools

    assert sqlmem.MemoryTools is MemoryTools
    assert "MemoryTools" in sqlmem.__all__


# --- arbitrary JSON: never raises, store consistent ------------------------------------

PROPERTY_NAMES = sorted({p for t in TOOLS for p in t.properties})


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    _nested,
    max_leaves=12,
)
argument_objects = st.dictionaries(
    st.sampled_from([*PROPERTY_NAMES, "extra"]),
    json_values | st.sampled_from(["MEMORY.md", "semantic", "../x.md", "a", "user/x", ""]),
    max_size=6,
)


@pytest.fixture(scope="module")
def fuzz_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlmem.MemoryDB]:
    db = sqlmem.open(tmp_path_factory.mktemp("fuzz") / "memory.db")
    db.docs.write("MEMORY.md", "# Memory\na\n")
    yield db
    report = db.check()
    db.close()
    assert report.ok, report.problems


@settings(max_examples=300)
@given(
    name=st.sampled_from([*ALL_TOOLS, "nope"]),
    args=argument_objects | json_values,
    as_text=st.booleans(),
)
def test_arbitrary_json_never_raises(
    fuzz_db: sqlmem.MemoryDB, name: str, args: Any, as_text: bool
) -> None:
    tools = sqlmem.MemoryTools(fuzz_db)
    before = state(fuzz_db)
    text = tools.call(name, json.dumps(args) if as_text else args)
    result = json.loads(text)
    assert isinstance(result, dict)
    if "error" in result:
        assert result["code"] in {"unknown_tool", "invalid_arguments", "not_found", "conflict"}
        assert state(fuzz_db) == before  # a refused call stores nothing
    text.encode("utf-8")  # sendable as is


def test_fuzzed_store_checks_clean(fuzz_db: sqlmem.MemoryDB) -> None:
    """Runs after the fuzz test on the same file (module order): check() is clean."""
    report = fuzz_db.check()
    assert report.ok, report.problems


def test_twin_arbitrary_json_never_raises() -> None:
    db = sqlmem.inmemory.open()
    tools = sqlmem.MemoryTools(db)

    @settings(max_examples=150)
    @given(name=st.sampled_from(ALL_TOOLS), args=argument_objects)
    def run(name: str, args: Any) -> None:
        result = json.loads(tools.call(name, args))
        assert isinstance(result, dict)

    run()


def test_optional_extras_never_load_unless_used(tmp_path: Path) -> None:
    """`import sqlmem`, the tools and the CLI's grammar load neither the MCP SDK nor
    jsonschema; only `sqlmem mcp` imports them."""
    code = (
        "import sys, json, sqlmem, sqlmem.cli\n"
        "from sqlmem.cli.parser import build_parser\n"
        "build_parser()\n"
        "tools = sqlmem.MemoryTools(sqlmem.inmemory.open())\n"
        "tools.call('search_memory', '{}'); tools.specs('mcp')\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "      if m.split('.')[0] in {'mcp', 'mcp_types', 'anyio', 'jsonschema', 'starlette'})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_mcp_command_without_the_sdk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if the extra were not installed
    from sqlmem.cli import main

    assert main(["mcp", str(tmp_path / "memory.db")]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "pip install 'sqlmem[mcp]'" in err
    assert not (tmp_path / "memory.db").exists()


def test_mcp_command_help(capsys: pytest.CaptureFixture[str]) -> None:
    from sqlmem.cli import main

    assert main(["mcp", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--read-only" in out and "sqlmem mcp memory.db" in out


# --- SQLite and the twin agree, call by call --------------------------------------------

_TEXTS = ["the cat sleeps", "The cat  sleeps.", "dogs bark loudly", "green tea", "cat and dog"]
_WORDS = ["cat", "dog", "tea", "sleeps", "", "zebra"]
_FILES = ["MEMORY.md", "memory/2026-01-31.md", "../x.md", "/abs.md"]
_UNSET = object()


def _opt(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.just(_UNSET), strategy)


def _call(name: str, **args: Any) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    return st.fixed_dictionaries({k: v for k, v in args.items()}).map(
        lambda drawn: (name, {k: v for k, v in drawn.items() if v is not _UNSET})
    )


_ID = st.one_of(st.just(0), st.integers(0, 3))  # the n-th id saved (or an unknown one)
_LAYERS = st.sampled_from(["episodic", "semantic", "procedural"])
_SAVE = _call(
    "save_memory",
    content=st.sampled_from(_TEXTS),
    layer=_opt(_LAYERS),
    tags=_opt(st.lists(st.sampled_from(["a", "b"]), max_size=2)),
    category=_opt(st.sampled_from(["", "user", "user/pets", "../bad"])),
    confidence=_opt(st.sampled_from([0, 0.5, 1])),
)
_WRITE = _call(
    "write_workspace_memory_file",
    filename=st.sampled_from(_FILES[:2] * 3 + _FILES[2:]),  # mostly valid names
    content=st.sampled_from(["a cat", "a a", "", "dog\ncat\n"]),
)
_OTHERS = st.one_of(
    _call(
        "search_memory",
        query=_opt(st.sampled_from(_WORDS)),
        layer=_opt(_LAYERS),
        category=_opt(st.sampled_from(["user", ""])),
        top_k=st.just(50),
    ),
    _call(
        "update_memory",
        id=_ID,
        content=_opt(st.sampled_from(_TEXTS)),
        tags=_opt(st.lists(st.sampled_from(["a", "c"]), max_size=2)),
        salience=_opt(st.sampled_from([0, 1])),
    ),
    _call("forget_memory", id=_ID),
    _call("promote_memory", id=_ID, layer=_LAYERS),
    _call("list_tags"),
    _call("list_categories"),
    _call(
        "edit_workspace_memory_file",
        filename=st.sampled_from(_FILES),
        old_text=st.sampled_from(["a", "cat", "zzz"]),
        new_text=st.sampled_from(["", "b"]),
        replace_all=_opt(st.booleans()),
    ),
    _call("read_workspace_memory_file", filename=st.sampled_from(_FILES)),
    _call("list_workspace_memory_files", filename_prefix=_opt(st.sampled_from(["memory/", ""]))),
    _call("search_conversations", query=st.sampled_from(_WORDS), top_k=st.just(50)),
)
# Writes first (a third of the calls), so the reads and id-based calls find something.
_OPERATIONS = st.one_of(_SAVE, _WRITE, _OTHERS)
_VOLATILE = {"score", "created_at", "updated_at"}


def _normal(value: Any, aliases: dict[str, str]) -> Any:
    """A result with ids replaced by their order of appearance, timestamps and scores
    dropped, and lists sorted (equal scores and equal times may order differently)."""
    if isinstance(value, dict):
        return {k: _normal(v, aliases) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return sorted((_normal(v, aliases) for v in value), key=json.dumps)
    if isinstance(value, str) and value in aliases:
        return aliases[value]
    return value


class _Side:
    def __init__(self, db: Any) -> None:
        self.db = db
        self.tools = sqlmem.MemoryTools(db)
        self.ids: list[str] = []
        self.aliases: dict[str, str] = {}
        for i, text in enumerate(["a cat and a dog", "tea time"]):
            db.history.append(f"s{i}", sqlmem.Message(role="user", content=text))
        for text in ("seed: a cat", "seed: a dog"):  # ids for the id-based calls to find
            self.run("save_memory", {"content": text, "layer": "episodic", "tags": ["a"]})
        self.run("write_workspace_memory_file", {"filename": "MEMORY.md", "content": "a cat"})

    def run(self, name: str, args: dict[str, Any]) -> Any:
        if "id" in args:
            n = args["id"]
            args = {**args, "id": self.ids[n] if n < len(self.ids) else f"unknown-{n}"}
        result = json.loads(self.tools.call(name, args))
        if "error" in result:
            return result["code"]
        if name == "save_memory" and result["id"] not in self.aliases:
            self.ids.append(result["id"])
            self.aliases[result["id"]] = f"id{len(self.ids)}"
        return _normal(result, self.aliases)


@settings(max_examples=80)
@given(operations=st.lists(_OPERATIONS, min_size=5, max_size=30))
def test_sqlite_and_twin_agree_through_the_tools(
    tmp_path_factory: pytest.TempPathFactory, operations: list[tuple[str, Any]]
) -> None:
    with sqlmem.open(tmp_path_factory.mktemp("agree") / "memory.db") as db:
        sqlite, twin = _Side(db), _Side(sqlmem.inmemory.open())
        for name, args in operations:
            assert sqlite.run(name, args) == twin.run(name, args), (name, args)
        assert db.check().ok


def test_search_call_validates_no_record(mdb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hot path: `search_memory` builds its answer from the store's unvalidated
    results, never a validated `Fact` (what `facts.search` itself guarantees)."""
    mdb.facts.index(sqlmem.Fact(content="cats purr when content"))
    tools = sqlmem.MemoryTools(mdb)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a record was validated on the search path")

    monkeypatch.setattr(sqlmem.Fact, "__init__", refuse)
    monkeypatch.setattr(sqlmem.Fact, "model_validate", classmethod(refuse))
    found = ok(tools, "search_memory", {"query": "cats"})["results"]
    assert [r["content"] for r in found] == ["cats purr when content"]
    assert ok(tools, "search_memory", {})["results"]  # the newest-first listing too
