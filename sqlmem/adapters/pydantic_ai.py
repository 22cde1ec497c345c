"""sqlmem behind Pydantic AI, which has no storage interface of its own: the memory tools
as a toolset, the memory pack as instructions, and message history per conversation.

    pip install 'sqlmem[pydantic-ai]'

    db = sqlmem.open("agent.db")
    agent = Agent(model, toolsets=[memory_toolset(db)], instructions=memory_instructions(db))
    history = SqlmemMessageHistory(db, "user-42")
    result = agent.run_sync("What do I like?", message_history=history.load())
    history.save(result.new_messages())

The tools are `sqlmem.MemoryTools` (the same names, schemas and JSON answers as the MCP
server and the OpenAI/Anthropic specs): a failed call comes back to the model as a JSON
error it can read, never as an exception ending the run. Pydantic AI runs these sync
tools and instructions on worker threads, so the event loop never waits for the disk.
"""

from __future__ import annotations

try:
    from pydantic_ai import FunctionToolset, RunContext, Tool
except ImportError as exc:  # the extra is optional: name it
    from ..errors import SqlmemError

    raise SqlmemError(
        "sqlmem.adapters.pydantic_ai needs Pydantic AI: pip install 'sqlmem[pydantic-ai]'"
    ) from exc

from collections.abc import Callable, Iterable
from typing import Any

from ..context.pack import build_memory_pack
from ..context.pack_config import PackConfig
from ..protocols import Database
from ..tools.catalog import GROUPS
from ..tools.core import MemoryTools
from .pydantic_ai_history import SqlmemMessageHistory, message_text

__all__ = [
    "SqlmemMessageHistory",
    "memory_instructions",
    "memory_toolset",
    "message_text",
]

#: What precedes the memory pack in the instructions.
HEADER = "What you remember about this user (from earlier conversations):"


def _tool(tools: MemoryTools, spec: dict[str, Any]) -> Tool[Any]:
    name = spec["name"]

    def call(**arguments: Any) -> str:
        return tools.call(name, arguments)

    tool: Tool[Any] = Tool.from_schema(call, name, spec["description"], spec["input_schema"])
    return tool


def memory_toolset(
    db: Database, *, groups: Iterable[str] = GROUPS, read_only: bool = False
) -> FunctionToolset[Any]:
    """The memory tools over `db` as a Pydantic AI toolset (`Agent(toolsets=[...])`).
    `groups` and `read_only` choose the tools as `MemoryTools` does."""
    tools = MemoryTools(db, groups=groups, read_only=read_only)
    return FunctionToolset([_tool(tools, spec) for spec in tools.specs("anthropic")])


def _prompt_text(prompt: Any) -> str:
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    return " ".join(item for item in prompt if isinstance(item, str))


def memory_instructions(
    db: Database, config: PackConfig | None = None, *, header: str = HEADER
) -> Callable[[RunContext[Any]], str]:
    """Instructions for `Agent(instructions=...)` (or `agent.instructions(...)`): the
    memory pack of `db.facts` for the run's user prompt, under `header`; "" when nothing
    is remembered (the model then gets no memory section at all)."""

    def instructions(ctx: RunContext[Any]) -> str:
        pack = build_memory_pack(db.facts, _prompt_text(ctx.prompt), config)
        return f"{header}\n{pack.text}" if pack.text else ""

    return instructions
