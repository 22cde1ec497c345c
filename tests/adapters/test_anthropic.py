"""`SqlmemMemoryTool`: Anthropic's client-side memory tool (`memory_20250818`) over
`db.docs`, on SQLite and on the in-memory database.

Commands are built with the anthropic SDK's beta command types (no network), and the
results are compared with the SDK's own reference implementation
(`BetaLocalFilesystemMemoryTool`, files on disk) run on the same commands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

anthropic = pytest.importorskip("anthropic")

from anthropic.lib.tools import ToolError  # noqa: E402
from anthropic.lib.tools._beta_builtin_memory_tool import (  # noqa: E402
    BetaLocalFilesystemMemoryTool,
)
from anthropic.types.beta import (  # noqa: E402
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
    BetaToolUseBlock,
)

import sqlmem  # noqa: E402
import sqlmem.inmemory  # noqa: E402
from sqlmem.adapters.anthropic import (  # noqa: E402
    MemoryToolError,
    SqlmemMemoryTool,
    sdk_memory_tool,
)


@pytest.fixture(params=["sqlite", "in-memory"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    opened = sqlmem.open(tmp_path / "memory.db") if request.param == "sqlite" else None
    database = opened if opened is not None else sqlmem.inmemory.open()
    yield database
    database.close()


@pytest.fixture
def tool(db: Any) -> SqlmemMemoryTool:
    return SqlmemMemoryTool(db)


def create(path: str, text: str) -> Any:
    return BetaMemoryTool20250818CreateCommand(command="create", path=path, file_text=text)


def view(path: str, view_range: list[int] | None = None) -> Any:
    return BetaMemoryTool20250818ViewCommand(command="view", path=path, view_range=view_range)


def replace(path: str, old: str, new: str) -> Any:
    return BetaMemoryTool20250818StrReplaceCommand(
        command="str_replace", path=path, old_str=old, new_str=new
    )


def insert(path: str, line: int, text: str) -> Any:
    return BetaMemoryTool20250818InsertCommand(
        command="insert", path=path, insert_line=line, insert_text=text
    )


def delete(path: str) -> Any:
    return BetaMemoryTool20250818DeleteCommand(command="delete", path=path)


def rename(old: str, new: str) -> Any:
    return BetaMemoryTool20250818RenameCommand(command="rename", old_path=old, new_path=new)


def test_a_session_of_commands(tool: SqlmemMemoryTool, db: Any) -> None:
    assert tool.execute(create("/memories/progress.md", "# Progress\n- step one\n")) == (
        "File created successfully at: /memories/progress.md"
    )
    assert tool.execute(view("/memories/progress.md")) == (
        "Here's the content of /memories/progress.md with line numbers:\n"
        "     1\t# Progress\n     2\t- step one\n     3\t"
    )
    assert tool.execute(view("/memories/progress.md", [2, -1])) == (
        "Here's the content of /memories/progress.md with line numbers:\n"
        "     2\t- step one\n     3\t"
    )
    assert tool.execute(replace("/memories/progress.md", "step one", "step one (done)")) == (
        "The memory file has been edited. Here is the snippet showing the change (with line "
        "numbers):\n     1\t# Progress\n     2\t- step one (done)\n     3\t"
    )
    assert tool.execute(insert("/memories/progress.md", 2, "- step two\n")) == (
        "The file /memories/progress.md has been edited."
    )
    document = db.docs.read("memories/progress.md")
    assert document.content == "# Progress\n- step one (done)\n- step two\n"
    assert document.revision == 3  # every change a revision
    assert db.docs.read_revision("memories/progress.md", 1) == "# Progress\n- step one\n"
    assert tool.execute(rename("/memories/progress.md", "/memories/done/progress.md")) == (
        "Successfully renamed /memories/progress.md to /memories/done/progress.md"
    )
    assert tool.execute(delete("/memories/done")) == "Successfully deleted /memories/done"
    assert [d.path for d in db.docs.list("memories/")] == []
    # Nothing Claude removed is lost: the attic keeps the last content, out of its sight.
    attic = db.docs.read("memories-attic/done/progress.md")
    assert attic is not None and attic.content == document.content
    assert db.docs.read("memories-attic/progress.md").content == document.content


def test_plain_dicts_and_tool_use_blocks(tool: SqlmemMemoryTool) -> None:
    assert tool.tool_param == {"type": "memory_20250818", "name": "memory"}
    created = tool.run({"command": "create", "path": "/memories/a.md", "file_text": "x"})
    assert created == ("File created successfully at: /memories/a.md", False)
    block = BetaToolUseBlock(
        id="toolu_1", type="tool_use", name="memory", input={"command": "view", "path": "/x"}
    )
    assert tool.tool_result(block) == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "Path must start with /memories, got: /x",
        "is_error": True,
    }
    ok = tool.tool_result({"id": "t2", "input": {"command": "view", "path": "/memories/a.md"}})
    assert ok["content"].endswith("     1\tx") and "is_error" not in ok
    assert asyncio.run(tool.arun({"command": "delete", "path": "/memories/a.md"})) == (
        "Successfully deleted /memories/a.md",
        False,
    )


def test_folders_are_listed_two_levels_deep(tool: SqlmemMemoryTool) -> None:
    assert tool.execute(view("/memories")) == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding "
        "hidden items:\n0B\t/memories"
    )
    tool.execute(create("/memories/b.md", "b" * 2048))
    tool.execute(create("/memories/a/x.md", "12345"))
    tool.execute(create("/memories/a/deep/y.md", "1"))
    tool.execute(create("/memories/a/deep/er/z.md", "1"))
    assert tool.execute(view("/memories/")).splitlines()[1:] == [
        "2.0K\t/memories",
        "7B\t/memories/a/",
        "2B\t/memories/a/deep/",
        "5B\t/memories/a/x.md",
        "2K\t/memories/b.md",
    ]
    assert tool.execute(view("/memories/a")).splitlines()[1:] == [
        "7B\t/memories/a",
        "2B\t/memories/a/deep/",
        "1B\t/memories/a/deep/er/",
        "1B\t/memories/a/deep/y.md",
        "5B\t/memories/a/x.md",
    ]


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (view("/etc/passwd"), "Path must start with /memories, got: /etc/passwd"),
        (view("/memoriesX/a.md"), "Path must start with /memories, got: /memoriesX/a.md"),
        (view("/memories/../x.md"), "Path /memories/../x.md would escape /memories directory"),
        (create("/memories/a/../../b.md", "x"), "would escape /memories directory"),
        (create("/memories//b.md", "x"), "would escape /memories directory"),
        (create("/memories/./b.md", "x"), "would escape /memories directory"),
        (create("/memories/a\\..\\b.md", "x"), "would escape /memories directory"),
        (create("/memories/notes.txt", "x"), "name them with '.md' at the end"),
        (create("/memories/my notes.md", "x"), "is not allowed"),
        (create("/memories/.hidden.md", "x"), "is not allowed"),
        (view("/memories/none.md"), "The path /memories/none.md does not exist. Please"),
        (replace("/memories/none.md", "a", "b"), "The path /memories/none.md does not exist"),
        (insert("/memories/none.md", 0, "a"), "The path /memories/none.md does not exist"),
        (delete("/memories/none.md"), "The path /memories/none.md does not exist"),
        (delete("/memories"), "Cannot delete the /memories directory itself"),
        (rename("/memories", "/memories/x"), "Cannot rename the /memories directory itself"),
        (rename("/memories/none.md", "/memories/b.md"), "The path /memories/none.md does not"),
        ({"command": "forget", "path": "/memories"}, "Unknown command: forget"),
        ({"command": "create", "path": "/memories/a.md"}, "`file_text` parameter"),
    ],
)
def test_refusals_are_the_tools_messages(
    tool: SqlmemMemoryTool, db: Any, command: Any, message: str
) -> None:
    result = tool.run(command)
    assert result.is_error and message in result.content
    assert db.docs.list() == []  # refused before anything was written


def test_edits_that_do_not_apply_change_nothing(tool: SqlmemMemoryTool, db: Any) -> None:
    tool.execute(create("/memories/a.md", "one\ntwo one\nthree\n"))
    tool.execute(create("/memories/dir/b.md", "b"))
    cases = [
        (create("/memories/a.md", "again"), "File /memories/a.md already exists"),
        (
            replace("/memories/a.md", "one", "1"),
            "No replacement was performed. Multiple occurrences of old_str `one` in lines: "
            "1, 2. Please ensure it is unique",
        ),
        (
            replace("/memories/a.md", "four", "4"),
            "No replacement was performed, old_str `four` did not appear verbatim in "
            "/memories/a.md.",
        ),
        (replace("/memories/dir", "b", "c"), "The path /memories/dir is not a file."),
        (
            insert("/memories/a.md", 4, "x"),
            "Invalid `insert_line` parameter: 4. It should be within the range [0, 3].",
        ),
        (rename("/memories/a.md", "/memories/dir/b.md"), "destination /memories/dir/b.md already"),
        (rename("/memories/a.md", "/memories/dir"), "The destination /memories/dir already"),
        (rename("/memories/dir", "/memories/dir/sub"), "inside itself"),
        (rename("/memories/a.md", "/memories/a.txt"), "name them with '.md' at the end"),
    ]
    for command, message in cases:
        result = tool.run(command)
        assert result.is_error and message in result.content, (command, result)
    assert db.docs.read("memories/a.md").revision == 1
    assert sorted(d.path for d in db.docs.list()) == ["memories/a.md", "memories/dir/b.md"]


def test_a_bad_edit_is_rolled_back_from_its_revision(tool: SqlmemMemoryTool, db: Any) -> None:
    tool.execute(create("/memories/user.md", "Name: Ada\nLikes: tea\n"))
    tool.execute(replace("/memories/user.md", "Likes: tea\n", ""))  # the model drops a fact
    db.docs.restore("memories/user.md", 1)
    assert "Likes: tea" in tool.execute(view("/memories/user.md"))


def test_root_and_attic_are_chosen_and_checked(db: Any) -> None:
    tool = SqlmemMemoryTool(db, root="agents/a1/memories", attic=None)
    tool.execute(create("/memories/x.md", "x"))
    tool.execute(delete("/memories/x.md"))
    assert db.docs.list() == []  # no attic: gone
    for bad in ({"root": "../x"}, {"root": "a/"}, {"attic": "memories/old"}, {"root": ".m"}):
        with pytest.raises(sqlmem.InvalidArgumentError):
            SqlmemMemoryTool(db, **bad)


def test_content_the_store_refuses_is_a_tool_error(tool: SqlmemMemoryTool, db: Any) -> None:
    result = tool.run(create("/memories/big.md", "x" * (10 * 1024 * 1024 + 1)))
    assert result.is_error and "MiB" in result.content
    assert db.docs.list() == []


def test_the_sdk_tool_runner_interface(tool: SqlmemMemoryTool) -> None:
    sdk_tool = sdk_memory_tool(tool)
    assert sdk_tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    assert sdk_tool.call({"command": "create", "path": "/memories/a.md", "file_text": "hi"}) == (
        "File created successfully at: /memories/a.md"
    )
    with pytest.raises(ToolError, match="does not exist"):
        sdk_tool.call({"command": "view", "path": "/memories/b.md"})
    with pytest.raises(MemoryToolError, match="already exists"):
        tool.execute(create("/memories/a.md", "x"))


# -- agreement with the SDK's reference implementation --------------------------------------

_NAMES = st.sampled_from(["/memories/a.md", "/memories/b.md", "/memories/d/c.md"])
_TEXT = st.text(alphabet="ab\n", max_size=8)
_COMMANDS = st.one_of(
    st.builds(create, _NAMES, _TEXT),
    st.builds(view, _NAMES, st.none() | st.lists(st.integers(-1, 5), min_size=2, max_size=2)),
    st.builds(replace, _NAMES, st.text(alphabet="ab\n", min_size=1, max_size=2), _TEXT),
    st.builds(insert, _NAMES, st.integers(-1, 3), _TEXT),
    st.builds(delete, _NAMES),
    st.builds(rename, _NAMES, _NAMES),
)


@settings(max_examples=80)
@given(
    start=st.lists(st.builds(create, _NAMES, _TEXT), min_size=1, max_size=3),
    commands=st.lists(_COMMANDS, max_size=12),
)
def test_files_agree_with_the_sdks_reference_tool(
    tmp_path_factory: pytest.TempPathFactory, start: list[Any], commands: list[Any]
) -> None:
    """The same commands on files (the SDK's `BetaLocalFilesystemMemoryTool`) and on
    documents give the same texts, refusals included, and leave the same contents."""
    reference = BetaLocalFilesystemMemoryTool(str(tmp_path_factory.mktemp("files")))
    db = sqlmem.inmemory.open()
    ours = SqlmemMemoryTool(db)
    for command in start + commands:
        try:
            expected = (reference.execute(command), False)
        except ToolError as exc:
            expected = (str(exc), True)
        if command.command == "view" and expected[1] is False and command.view_range:
            start, end = command.view_range
            if end != -1 and end < max(start, 1) - 1:
                continue  # the reference shows no lines for a reversed range; so do we
        assert tuple(ours.run(command)) == expected, command
    files = {
        "/memories/" + str(p.relative_to(reference.memory_root)): p.read_text()
        for p in reference.memory_root.rglob("*.md")
    }
    documents = {
        "/memories/" + d.path[len("memories/") :]: db.docs.read(d.path).content
        for d in db.docs.list("memories/")
    }
    assert documents == files
    db.close()


def test_inserting_an_empty_line_into_a_blank_file_matches_the_reference() -> None:
    """Regression (found by the agreement test): an empty line inserted at 0 into a file
    holding one newline gave two newlines; the SDK's reference tool keeps one."""
    db = sqlmem.inmemory.open()
    tool = SqlmemMemoryTool(db)
    assert not tool.run(create("/memories/a.md", "\n")).is_error
    assert not tool.run(insert("/memories/a.md", 0, "")).is_error
    assert db.docs.read("memories/a.md").content == "\n"
