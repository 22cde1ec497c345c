"""`sqlmem mcp PATH [--read-only]`: an agent's memory file as a Model Context Protocol
server over stdio, so desktop and IDE agents can use the same memory.

It serves exactly the tools of `sqlmem.tools.MemoryTools`: the same names, schemas,
descriptions and JSON results, errors included (`isError` set, the JSON body saying
`{"error", "code"}`), so a model sees the same thing through MCP as through `call()`.

Built on the official `mcp` SDK (extra `sqlmem[mcp]`), imported only when this command
runs. Stdout carries protocol messages and nothing else: the SDK points fd 1 at stderr
while it serves, and our logging goes to stderr. Tool calls run in worker threads, one
store transaction each, so a slow write never stalls the protocol loop; on EOF, SIGTERM,
SIGINT or SIGHUP the server stops taking requests, waits for the calls under way to
finish (a write is never cut in half), closes the database and exits 0 (see
`_stop_on_signal` for what a signal may still lose: the reply of a call under way).

Without `--read-only` the file is created and migrated when needed (a new agent's memory
starts empty); with it, the file must exist at the current schema and is never written.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from typing import Any

from .. import __version__
from ..config import StoreConfig
from ..sqlite.db import MemoryDB, resolve_path
from ..sqlite.db import open as sqlmem_open
from .opening import CommandError, open_existing
from .output import Output

__all__ = ["run_mcp"]

_log = logging.getLogger("sqlmem")

INSTRUCTIONS = (
    "Long-term memory of one agent: save and search memories (facts, preferences, "
    "decisions), read and edit workspace memory files (MEMORY.md, daily notes), and search "
    'past conversations. Every tool answers JSON; failures are {"error", "code"}.'
)

_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name)
)


def run_mcp(args: argparse.Namespace, out: Output) -> int:
    """Serve until the client closes stdin or a termination signal arrives."""
    try:
        import anyio  # the SDK's own dependency
        import mcp  # noqa: F401
    except ImportError:
        raise CommandError(
            "the MCP server needs the 'mcp' package: pip install 'sqlmem[mcp]'"
        ) from None
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    db = _open(args)
    try:
        from ..tools import MemoryTools

        tools = MemoryTools(db, read_only=args.read_only)
        anyio.run(_serve, tools)
    finally:
        db.close()  # after every call under way has finished (see _serve)
    return 0


def _open(args: argparse.Namespace) -> MemoryDB:
    if args.read_only:
        return open_existing(args.path)  # never written: no WAL switch, no migration
    if not resolve_path(args.path).exists():  # a new agent: say so, a typo shows at once
        _log.warning("%s: no such file; creating an empty memory database", args.path)
    return sqlmem_open(args.path, StoreConfig(busy_timeout_ms=args.busy_timeout_ms))


#: Tools that change or remove what is stored (the others read, or only add: a save merges
#: into an equal memory, a promotion moves one between layers).
_DESTRUCTIVE = frozenset(
    {"update_memory", "forget_memory", "write_workspace_memory_file", "edit_workspace_memory_file"}
)


def _annotations(types: Any, name: str) -> Any:
    """MCP's hints for clients that ask before running a tool that writes."""
    from ..tools.catalog import TOOLS

    writes = next(t.writes for t in TOOLS if t.name == name)
    return types.ToolAnnotations(
        read_only_hint=not writes,
        destructive_hint=name in _DESTRUCTIVE if writes else None,
        open_world_hint=False,  # only this memory file, never the network
    )


class _InFlight:
    """Tool calls under way, so a shutdown can wait for them: a call is never cut short,
    and the database is closed only once none is left."""

    def __init__(self) -> None:
        self.active = 0
        self.closing = False
        self.idle: Any = None  # an anyio.Event, made inside the event loop


async def _serve(tools: Any) -> None:
    import anyio
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    listed = [
        types.Tool(
            name=spec["name"],
            description=spec["description"],
            input_schema=spec["inputSchema"],
            annotations=_annotations(types, spec["name"]),
        )
        for spec in tools.specs("mcp")
    ]
    calls = _InFlight()
    calls.idle = anyio.Event()

    def result(text: str) -> types.CallToolResult:
        failed = text.startswith('{"error":')  # success results never start so (fixed keys)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=failed
        )

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if calls.closing:
            return result(_SHUTTING_DOWN)
        calls.active += 1
        try:
            # A worker thread, so a write waiting on the busy timeout never stalls the
            # protocol loop; never abandoned, so its transaction always ends.
            text = await anyio.to_thread.run_sync(tools.call, params.name, params.arguments)
        finally:
            calls.active -= 1
            if calls.closing and calls.active == 0:
                calls.idle.set()
        return result(text)

    server: Server[Any] = Server(
        "sqlmem",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    async with anyio.create_task_group() as group:
        group.start_soon(_stop_on_signal, tools, calls)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        group.cancel_scope.cancel()  # EOF: stop the signal watcher too


_SHUTTING_DOWN = '{"error":"the memory server is shutting down","code":"busy"}'


async def _stop_on_signal(tools: Any, calls: _InFlight) -> None:
    """On SIGTERM/SIGINT/SIGHUP: refuse new calls, wait for those under way, close the
    database and exit 0.

    The exit is immediate (`os._exit`) because the SDK reads stdin in a worker thread
    that nothing can interrupt: a cancelled server would wait for the client's next line
    forever. By then what matters is done: no call is running, every write it made is
    committed, the database is closed. The reply to a call that was still running when
    the signal came may be lost (whoever sent SIGTERM is ending the session); what that
    call stored is whole. (MCP's own shutdown for stdio is the client closing stdin, then
    SIGTERM only if the server has not exited: by then nobody reads replies.)
    """
    import anyio

    with anyio.open_signal_receiver(*_STOP_SIGNALS) as received:
        async for signum in received:
            _log.info("signal %s: shutting down", signum)
            calls.closing = True
            if calls.active:
                await calls.idle.wait()
            tools.db.close()
            logging.shutdown()
            sys.stderr.flush()
            os._exit(0)
