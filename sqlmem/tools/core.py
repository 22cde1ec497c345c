"""`MemoryTools`: an agent's memory as tools an LLM can call.

A model's tool call is untrusted input: wrong types, missing fields, made-up ids, `../`
paths, text that is not JSON at all. `call()` therefore never raises: every outcome,
refusals included, is JSON text the model can read and act on, so a bad call costs the
model one retry instead of killing the agent's turn. Errors are
`{"error": message, "code": code}` with `code` one of:

- `unknown_tool`: no such tool, or one left out by `groups` / `read_only`;
- `invalid_arguments`: not JSON, not an object, not what the schema allows, or refused by
  the store's own checks (a category with `..`, a path outside the workspace...);
- `not_found`: an unknown memory id or workspace file;
- `conflict`: an edit whose `old_text` is missing or ambiguous;
- `busy`: the database stayed locked past its busy timeout (worth retrying);
- `internal`: anything else (a closed database, a damaged file, a bug), logged.

Validation runs before the store is touched, and every write is one transaction of the
store, so a refused call stores nothing.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from ..errors import (
    CorruptDatabaseError,
    DocumentNotFoundError,
    EditMismatchError,
    FactNotFoundError,
    InvalidArgumentError,
    RevisionConflictError,
    StorageBusyError,
    StoreClosedError,
)
from ..protocols import Database
from ..rules.async_guard import refuse_async
from .catalog import GROUPS, TOOLS, ToolDef
from .handlers import HANDLERS, Handler
from .schema import ArgumentError, validate

__all__ = ["ErrorCode", "MemoryTools", "SpecStyle"]

_log = logging.getLogger("sqlmem")

SpecStyle = Literal["openai", "anthropic", "mcp"]
ErrorCode = Literal[
    "unknown_tool", "invalid_arguments", "not_found", "conflict", "busy", "internal"
]

#: Store attributes each group needs.
_GROUP_STORES = {"facts": "facts", "docs": "docs", "history": "history"}


class MemoryTools:
    """The memory tools over one database (`sqlmem.open()`'s `MemoryDB` or
    `sqlmem.inmemory.open()`'s twin): `specs()` to hand to the model, `call()` to run what it
    asked for.

    `groups` picks the tool families ("facts", "docs", "history"); `read_only=True` leaves
    out every tool that writes (and `call()` refuses them as unknown tools).
    """

    def __init__(
        self,
        db: Database,
        *,
        groups: Iterable[str] = GROUPS,
        read_only: bool = False,
    ) -> None:
        refuse_async(db, "MemoryTools", "sqlmem.aio.MemoryTools(adb)")
        if isinstance(groups, str):
            raise InvalidArgumentError(f"groups must be a sequence of group names, not {groups!r}")
        chosen = tuple(dict.fromkeys(groups))
        unknown = [g for g in chosen if g not in GROUPS]
        if unknown:
            raise InvalidArgumentError(f"unknown tool groups {unknown}; known: {list(GROUPS)}")
        for group in chosen:
            if not hasattr(db, _GROUP_STORES[group]):
                raise InvalidArgumentError(
                    f"the {group!r} tools need a database with .{_GROUP_STORES[group]}"
                )
        if not isinstance(read_only, bool):
            raise InvalidArgumentError("read_only must be a bool")
        self.db = db
        self.groups = chosen
        self.read_only = read_only
        offered = [t for t in TOOLS if t.group in chosen and not (read_only and t.writes)]
        self._defs: tuple[ToolDef, ...] = tuple(offered)
        # name -> (the schema call() validates against, built once and never handed out;
        # the handler)
        self._tools: dict[str, tuple[dict[str, Any], Handler]] = {
            t.name: (t.schema, HANDLERS[t.name]) for t in offered
        }

    @property
    def names(self) -> list[str]:
        """The names of the tools offered, in `specs()` order."""
        return list(self._tools)

    def specs(self, style: SpecStyle = "openai") -> list[dict[str, Any]]:
        """The tool definitions to hand to a model, in the shape `style` expects:
        "openai" (`{"type": "function", "function": {name, description, parameters}}`),
        "anthropic" (`{name, description, input_schema}`) or "mcp" (`{name, description,
        inputSchema}`). Each call returns fresh dicts: callers may change them."""
        if style == "openai":
            return [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": copy.deepcopy(t.schema),
                    },
                }
                for t in self._defs
            ]
        key = {"anthropic": "input_schema", "mcp": "inputSchema"}.get(style)
        if key is None:
            raise InvalidArgumentError(
                f"style must be 'openai', 'anthropic' or 'mcp', got {style!r}"
            )
        return [
            {"name": t.name, "description": t.description, key: copy.deepcopy(t.schema)}
            for t in self._defs
        ]

    def call(self, name: str, arguments: str | bytes | Mapping[str, Any] | None = None) -> str:
        """Runs one tool call and returns its result as JSON text; never raises.

        `arguments` is the JSON text the model produced, or an already decoded mapping
        (Anthropic's `input`); None or blank text means no arguments. Failures come back as
        `{"error": message, "code": ...}` (see the module docstring for the codes).
        """
        try:
            return self._call(name, arguments)
        except Exception as exc:  # the promise: a tool call never kills the agent's turn
            return _error_text(exc)

    def _call(self, name: str, arguments: object) -> str:
        entry = self._tools.get(name) if isinstance(name, str) else None
        if entry is None:
            return _error(_unknown_tool(name, self), "unknown_tool")
        schema, handler = entry
        args = validate(schema, _decode(arguments))
        return json.dumps(
            handler(self.db, args), ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )

    def __repr__(self) -> str:
        mode = ", read_only" if self.read_only else ""
        return f"<MemoryTools {list(self.groups)}{mode}: {len(self._tools)} tools>"


def _decode(arguments: object) -> object:
    if arguments is None:
        return {}
    if isinstance(arguments, (bytes, bytearray)):
        try:
            arguments = arguments.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ArgumentError(f"arguments are not UTF-8 text ({exc.reason})") from None
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise ArgumentError(f"arguments are not valid JSON ({exc.msg} at {exc.pos})") from None
        except RecursionError:
            raise ArgumentError("arguments are nested too deeply") from None
        except ValueError:  # the one other refusal: an integer past the int-string limit
            raise ArgumentError(
                "arguments hold a number with too many digits to read; send a shorter number"
            ) from None
    if not isinstance(arguments, Mapping):
        kind = type(arguments).__name__
        raise ArgumentError(f"arguments must be a JSON object of named arguments, not {kind}")
    return arguments


def _unknown_tool(name: object, tools: MemoryTools) -> str:
    shown = repr(name) if len(repr(name)) <= 80 else repr(name)[:77] + "..."
    known = {t.name: t for t in TOOLS}.get(name) if isinstance(name, str) else None
    if known is not None:
        why = (
            "it writes and these tools are read-only"
            if (tools.read_only and known.writes and known.group in tools.groups)
            else f"its group {known.group!r} is not enabled"
        )
        return f"tool {shown} is not available here: {why}"
    return f"unknown tool {shown}; available: {', '.join(tools.names)}"


def _code(exc: Exception) -> ErrorCode:
    if isinstance(exc, (EditMismatchError, RevisionConflictError)):
        return "conflict"
    if isinstance(exc, (ArgumentError, InvalidArgumentError)):
        return "invalid_arguments"
    if isinstance(exc, (FactNotFoundError, DocumentNotFoundError)):
        return "not_found"
    if isinstance(exc, StorageBusyError):
        return "busy"
    return "internal"


def _error_text(exc: Exception) -> str:
    code = _code(exc)
    if code == "internal":
        if isinstance(exc, StoreClosedError):
            message = "the memory database is closed"
        elif isinstance(exc, CorruptDatabaseError):
            message = f"the memory database is damaged: {exc}"
        else:
            _log.exception("memory tool failed")
            message = f"internal error ({type(exc).__name__}): {exc}"
    else:
        message = str(exc)
    return _error(message, code)


def _error(message: str, code: ErrorCode) -> str:
    if len(message) > 2000:
        message = message[:1997] + "..."
    # Messages may quote what the model sent, lone surrogates included: make them UTF-8.
    message = message.encode("utf-8", "replace").decode("utf-8")
    return json.dumps({"error": message, "code": code}, ensure_ascii=False, separators=(",", ":"))
