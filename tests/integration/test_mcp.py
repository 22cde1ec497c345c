"""`sqlmem mcp PATH` end to end: the official SDK's stdio client starts
`python -m sqlmem mcp PATH` as a subprocess, lists the tools and calls each one; bad input
comes back as error results with the codes of SPEC 16 and stores nothing; stdout carries
only protocol messages; EOF and SIGTERM end the server with status 0 and no transaction
left open."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import apsw
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import sqlmem

SERVER = [sys.executable, "-m", "sqlmem", "mcp"]


@pytest.fixture
def memory_file(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    with sqlmem.open(path) as db:
        db.history.append("chat:1", sqlmem.Message(role="user", content="Fly me to Lisbon"))
        db.docs.write("MEMORY.md", "# Memory\n- likes tea\n")
    return path


@asynccontextmanager
async def connect(path: Path, *options: str, errlog: Any = None) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=SERVER[0], args=[*SERVER[1:], str(path), *options])
    async with (
        stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(name, args)
    (content,) = result.content
    body = json.loads(content.text)  # type: ignore[union-attr]
    assert result.is_error == ("error" in body), body
    return body


def run(test: Callable[[], Awaitable[None]]) -> None:
    anyio.run(test)


def stored(path: Path) -> tuple[Any, ...]:
    with sqlmem.open(path) as db:
        facts = sorted((f.id, f.content, f.layer, f.hits) for f in db.facts.list(limit=1000))
        docs = [(d.path, d.revision) for d in db.docs.list()]
        return facts, docs


def test_lists_and_calls_every_tool(memory_file: Path) -> None:
    async def main() -> None:
        async with connect(memory_file) as session:
            listed = (await session.list_tools()).tools
            expected = sqlmem.MemoryTools(sqlmem.inmemory.open()).specs("mcp")
            assert [(t.name, t.description, t.input_schema) for t in listed] == [
                (s["name"], s["description"], s["inputSchema"]) for s in expected
            ]
            hints = {t.name: t.annotations.read_only_hint for t in listed}  # type: ignore[union-attr]
            assert hints["search_memory"] is True and hints["forget_memory"] is False

            saved = await call(
                session,
                "save_memory",
                {"content": "Ada likes green tea", "layer": "episodic", "tags": ["tea"]},
            )
            assert saved["merged"] is False
            fid = saved["id"]
            found = await call(session, "search_memory", {"query": "green tea"})
            assert [r["id"] for r in found["results"]] == [fid]
            assert await call(session, "list_categories", {}) == {"categories": []}
            assert await call(session, "list_tags", {}) == {"tags": {"tea": 1}}
            updated = await call(session, "update_memory", {"id": fid, "category": "user"})
            assert updated["category"] == "user"
            assert await call(session, "promote_memory", {"id": fid, "layer": "semantic"}) == {
                "id": fid,
                "layer": "semantic",
            }
            files = await call(session, "list_workspace_memory_files", {})
            assert [f["filename"] for f in files["files"]] == ["MEMORY.md"]
            read = await call(session, "read_workspace_memory_file", {"filename": "MEMORY.md"})
            assert read["content"] == "# Memory\n- likes tea\n"
            wrote = await call(
                session,
                "write_workspace_memory_file",
                {"filename": "memory/2026-01-31.md", "content": "# 2026-01-31\n"},
            )
            assert wrote == {
                "created": True,
                "overwritten": False,
                "bytesWritten": 13,
                "revision": 1,
            }
            edit = await call(
                session,
                "edit_workspace_memory_file",
                {"filename": "MEMORY.md", "old_text": "tea", "new_text": "coffee"},
            )
            assert edit == {"replacements": 1, "fileSizeAfter": 24}
            hits = await call(session, "search_conversations", {"query": "lisbon"})
            assert [(h["session_id"], h["seq"]) for h in hits["results"]] == [("chat:1", 1)]
            assert await call(session, "forget_memory", {"id": fid}) == {
                "id": fid,
                "forgotten": True,
            }

    run(main)
    with sqlmem.open(memory_file) as db:
        assert db.facts.count() == 0
        assert db.docs.read("MEMORY.md").content == "# Memory\n- likes coffee\n"
        assert db.check().ok


BAD = [
    ("no_such_tool", {}, "unknown_tool"),
    ("save_memory", {}, "invalid_arguments"),
    ("save_memory", {"content": 7}, "invalid_arguments"),
    ("save_memory", {"content": None}, "invalid_arguments"),
    ("save_memory", {"content": "x" * 10_000_000}, "invalid_arguments"),
    ("save_memory", {"content": "x", "extra": True}, "invalid_arguments"),
    ("forget_memory", {"id": "no-such-id"}, "not_found"),
    ("update_memory", {"id": "no-such-id", "content": "x"}, "not_found"),
    ("read_workspace_memory_file", {"filename": "NOPE.md"}, "not_found"),
    ("read_workspace_memory_file", {"filename": "../../etc/passwd.md"}, "invalid_arguments"),
    (
        "write_workspace_memory_file",
        {"filename": "/tmp/evil.md", "content": "x"},
        "invalid_arguments",
    ),
    (
        "write_workspace_memory_file",
        {"filename": "a/../../b.md", "content": "x"},
        "invalid_arguments",
    ),
    (
        "edit_workspace_memory_file",
        {"filename": "MEMORY.md", "old_text": "absent", "new_text": "x"},
        "conflict",
    ),
]


def test_bad_input_through_mcp(memory_file: Path) -> None:
    before = stored(memory_file)

    async def main() -> None:
        async with connect(memory_file) as session:
            for name, args, code in BAD:
                body = await call(session, name, args)
                assert body.get("code") == code, (name, body)
            # the server is still there and well after all of that
            assert (await call(session, "search_memory", {}))["results"] == []

    run(main)
    assert stored(memory_file) == before


def test_busy_through_mcp(memory_file: Path) -> None:
    async def main() -> None:
        async with connect(memory_file, "--busy-timeout-ms", "100") as session:
            holder = apsw.Connection(str(memory_file))  # another process for the server
            holder.execute("BEGIN IMMEDIATE")
            try:
                body = await call(session, "save_memory", {"content": "blocked"})
                assert body["code"] == "busy"
            finally:
                holder.execute("ROLLBACK")
                holder.close()
            assert (await call(session, "save_memory", {"content": "free"}))["merged"] is False

    run(main)
    assert [f[1] for f in stored(memory_file)[0]] == ["free"]


def test_read_only_server_never_writes(memory_file: Path) -> None:
    digest = hashlib.sha256(memory_file.read_bytes()).hexdigest()

    async def main() -> None:
        async with connect(memory_file, "--read-only") as session:
            names = [t.name for t in (await session.list_tools()).tools]
            assert names == sqlmem.MemoryTools(sqlmem.inmemory.open(), read_only=True).names
            body = await call(session, "save_memory", {"content": "x"})
            assert body["code"] == "unknown_tool" and "read-only" in body["error"]
            read = await call(session, "read_workspace_memory_file", {"filename": "MEMORY.md"})
            assert read["revision"] == 1

    run(main)
    assert hashlib.sha256(memory_file.read_bytes()).hexdigest() == digest


def test_read_only_server_refuses_a_missing_file(tmp_path: Path) -> None:
    done = subprocess.run(
        [*SERVER, str(tmp_path / "typo.db"), "--read-only"],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert "no such file" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "typo.db").exists()


class RawServer:
    """The server driven with raw JSON-RPC lines, to see every byte of its stdout."""

    def __init__(self, path: Path, *options: str) -> None:
        self.process = subprocess.Popen(
            [*SERVER, str(path), *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.next_id = 0

    def send(self, method: str, params: Any = None, *, notify: bool = False) -> Any:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        if notify:
            return None
        reply = json.loads(self.process.stdout.readline())  # every line is a message
        assert reply["jsonrpc"] == "2.0" and reply["id"] == self.next_id
        return reply

    def start(self) -> None:
        reply = self.send(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        assert reply["result"]["serverInfo"]["name"] == "sqlmem"
        self.send("notifications/initialized", notify=True)

    def tool(self, name: str, arguments: Any) -> Any:
        return self.send("tools/call", {"name": name, "arguments": arguments})

    def finish(self) -> tuple[int, str, str]:
        """Waits for the exit WITHOUT closing stdin (a signal test must not end it by EOF)."""
        status = self.process.wait(timeout=30)
        assert self.process.stdout is not None and self.process.stderr is not None
        out, err = self.process.stdout.read(), self.process.stderr.read()
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
        return status, out, err


def _no_transaction_open(path: Path) -> None:
    """Another process can take the write lock at once: the server holds none."""
    other = apsw.Connection(str(path))
    other.set_busy_timeout(0)
    other.execute("BEGIN IMMEDIATE")
    other.execute("ROLLBACK")
    other.close()


def test_raw_protocol_then_eof(memory_file: Path) -> None:
    server = RawServer(memory_file)
    server.start()
    reply = server.tool("save_memory", "this is not a JSON object")
    assert "error" in reply or reply["result"]["isError"]  # refused by protocol or by us
    reply = server.tool("save_memory", {"content": "Rex is a dog"})
    assert json.loads(reply["result"]["content"][0]["text"])["merged"] is False
    _no_transaction_open(memory_file)
    assert server.process.stdin is not None
    server.process.stdin.close()  # EOF: the client went away
    status, rest, _ = server.finish()
    assert status == 0 and rest == ""
    with sqlmem.open(memory_file) as db:
        assert [f.content for f in db.facts.list()] == ["Rex is a dog"] and db.check().ok


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly(memory_file: Path, signum: int) -> None:
    server = RawServer(memory_file)
    server.start()
    reply = server.tool("write_workspace_memory_file", {"filename": "A.md", "content": "a"})
    assert reply["result"]["isError"] is False
    server.process.send_signal(signum)
    status, rest, err = server.finish()  # stdin still open: the signal alone ends it
    assert status == 0 and rest == "" and "Traceback" not in err
    _no_transaction_open(memory_file)
    with sqlmem.open(memory_file) as db:
        assert db.docs.read("A.md").content == "a" and db.check().ok


def test_signal_waits_for_a_call_under_way(memory_file: Path) -> None:
    """SIGTERM while a write waits for the lock: the server waits for it to finish before
    closing the database and exiting, so the write is stored whole (never cut, never left
    open), and the exit is still 0."""
    server = RawServer(memory_file, "--busy-timeout-ms", "20000")
    server.start()
    holder = apsw.Connection(str(memory_file))
    holder.execute("BEGIN IMMEDIATE")
    try:
        assert server.process.stdin is not None
        call = {
            "jsonrpc": "2.0",
            "id": 99,
            "method": "tools/call",
            "params": {"name": "save_memory", "arguments": {"content": "late write"}},
        }
        server.process.stdin.write(json.dumps(call) + "\n")
        # The server reads requests in order and runs each in its own task: once the ping
        # sent after the call is answered, the call is under way (waiting for our lock).
        assert server.send("ping")["result"] == {}
        server.process.send_signal(signal.SIGTERM)
    finally:
        holder.execute("ROLLBACK")  # now the waiting write can go on
        holder.close()
    status, _, err = server.finish()
    assert status == 0 and "Traceback" not in err
    assert [f[1] for f in stored(memory_file)[0]] == ["late write"]
    _no_transaction_open(memory_file)


def test_eof_waits_for_a_call_under_way(memory_file: Path) -> None:
    """MCP's own shutdown for stdio is the client closing stdin: a write still waiting for
    the lock then finishes whole before the database is closed, and the exit is 0."""
    server = RawServer(memory_file, "--busy-timeout-ms", "20000")
    server.start()
    holder = apsw.Connection(str(memory_file))
    holder.execute("BEGIN IMMEDIATE")
    try:
        assert server.process.stdin is not None
        call = {
            "jsonrpc": "2.0",
            "id": 99,
            "method": "tools/call",
            "params": {
                "name": "write_workspace_memory_file",
                "arguments": {"filename": "LATE.md", "content": "late"},
            },
        }
        server.process.stdin.write(json.dumps(call) + "\n")
        assert server.send("ping")["result"] == {}  # the call is under way (see above)
        server.process.stdin.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    status, _, err = server.finish()
    assert status == 0 and "Traceback" not in err
    with sqlmem.open(memory_file) as db:
        assert db.docs.read("LATE.md").content == "late" and db.check().ok
    _no_transaction_open(memory_file)
