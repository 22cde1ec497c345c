"""Memory tools for an LLM: `MemoryTools(db).specs()` to hand to the model and
`.call(name, arguments)` to run its tool calls, returning JSON text and never raising.

A layer over the protocols, like `context/`: it works on a `MemoryDB` and on the
in-memory twin object alike. `sqlmem mcp PATH` serves the same tools over MCP.
"""

from __future__ import annotations

from .catalog import GROUPS
from .core import ErrorCode, MemoryTools, SpecStyle

__all__ = ["GROUPS", "ErrorCode", "MemoryTools", "SpecStyle"]
