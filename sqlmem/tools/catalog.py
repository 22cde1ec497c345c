"""The memory tools an LLM sees (SPEC 16): names, descriptions and argument schemas.

One `ToolDef` per tool is the single source of truth: `MemoryTools.specs()` publishes its
schema in the shape each API expects, and `MemoryTools.call()` validates the model's
arguments against that same schema (schema.py). Descriptions are written for the model:
one sentence of what the tool does and when to use it, then each parameter's meaning and
limits, because that text is all the model knows about the tool.

Limits are generous for a model and tight for a runaway: a memory is at most 20,000
characters, a workspace file written in one call at most 1,000,000 (the store itself takes
up to 10 MiB, for people importing files), a query at most 10,000.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .schema import check_schema

__all__ = ["GROUPS", "TOOLS", "ToolDef"]

GROUPS = ("facts", "docs", "history")

LAYERS = ["episodic", "semantic", "procedural"]
MAX_MEMORY_CHARS = 20_000
MAX_FILE_CHARS = 1_000_000
MAX_QUERY_CHARS = 10_000
MAX_TOP_K = 50


@dataclass(frozen=True)
class ToolDef:
    """One tool: its group ("facts", "docs", "history"), whether it writes (left out when
    read-only), the description for the model and the JSON Schema of its arguments."""

    name: str
    group: str
    writes: bool
    description: str
    properties: dict[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()

    @property
    def schema(self) -> dict[str, Any]:
        """A new JSON Schema object (its property schemas shared with the catalog: deep-copy
        before handing it to code that may change it)."""
        return {
            "type": "object",
            "properties": self.properties,
            "required": list(self.required),
            "additionalProperties": False,
        }


def _text(description: str, *, max_length: int, min_length: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "description": description}
    if min_length:
        schema["minLength"] = min_length
    schema["maxLength"] = max_length
    return schema


def _unit(description: str) -> dict[str, Any]:
    return {"type": "number", "minimum": 0, "maximum": 1, "description": description}


_ID = _text(
    "The memory's id, as returned by save_memory or search_memory.", max_length=200, min_length=1
)
_CATEGORY = _text(
    "A folder-like path grouping related memories, e.g. 'user/preferences' or "
    "'project/sqlmem': segments of letters, digits, '-' and '_' joined by '/'.",
    max_length=200,
)
_TAGS: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": 64},
    "maxItems": 20,
    "description": "Short labels (at most 20, each at most 64 characters).",
}
_LAYER: dict[str, Any] = {
    "type": "string",
    "enum": LAYERS,
    "description": "episodic: events and what happened in a conversation; semantic: durable "
    "facts, preferences and constraints; procedural: know-how (commands, fixes).",
}
_TOP_K: dict[str, Any] = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_TOP_K,
    "default": 10,
    "description": f"How many results to return (1-{MAX_TOP_K}, default 10).",
}
_KEY = _text(
    "A slot this memory fills, e.g. 'user.city' or 'user.employer' (letters, digits, '.', "
    "'-', '_', ':'; at most 128): a new memory with the same key replaces the old one, "
    "which stays in its history.",
    max_length=128,
)
_AS_OF = _text(
    "Search the memories as they were at this time instead of now: an ISO 8601 date or "
    "time, e.g. '2025-06-01' or '2025-06-01T12:00:00Z' (UTC when no zone is given).",
    max_length=40,
    min_length=4,
)
_FILENAME = _text(
    "A workspace file's relative path ending in '.md', e.g. 'MEMORY.md' or "
    "'memory/2026-01-31.md' (letters, digits, '.', '_', '-' per segment; no '..', no leading "
    "'/').",
    max_length=255,
    min_length=1,
)

_FACT_TOOLS = (
    ToolDef(
        "save_memory",
        "facts",
        True,
        "Store one durable memory (a fact, preference, decision or lesson) so you can find it "
        "in later conversations; saving the same text again merges into the existing memory "
        "instead of duplicating it.",
        {
            "content": _text(
                "The memory itself: one self-contained statement, e.g. 'The user prefers "
                f"metric units'. 1-{MAX_MEMORY_CHARS} characters.",
                max_length=MAX_MEMORY_CHARS,
                min_length=1,
            ),
            "category": _CATEGORY,
            "tags": _TAGS,
            "layer": {**_LAYER, "default": "semantic"},
            "kind": _text(
                "A short label for what sort of memory this is, e.g. 'preference', "
                "'decision', 'fix' (letters, digits, '-', '_'; at most 64).",
                max_length=64,
            ),
            "confidence": _unit("How sure you are that it is true, 0 to 1 (default 1)."),
            "key": _KEY,
        },
        ("content",),
    ),
    ToolDef(
        "search_memory",
        "facts",
        False,
        "Find stored memories relevant to a question or topic (full-text search, best "
        "first); with an empty query, lists the newest memories.",
        {
            "query": _text(
                "Words to look for; any text is fine (no special syntax). Empty: newest "
                f"memories. At most {MAX_QUERY_CHARS} characters.",
                max_length=MAX_QUERY_CHARS,
            ),
            "category": _text(
                "Only memories in this category or below it, e.g. 'user'.", max_length=200
            ),
            "tags": {**_TAGS, "description": "Only memories carrying all of these tags."},
            "layer": {
                **_LAYER,
                "description": "Only memories of this layer. " + _LAYER["description"],
            },
            "top_k": _TOP_K,
            "as_of": _AS_OF,
        },
    ),
    ToolDef(
        "memory_history",
        "facts",
        False,
        "Show how a memory changed over time: every version of a slot (by key) or of the "
        "memory with this id, oldest first, with when each was valid and what replaced it.",
        {
            "key": {**_KEY, "minLength": 1},
            "id": _ID,
        },
    ),
    ToolDef(
        "list_categories",
        "facts",
        False,
        "List the categories your memories are filed under, to organise new memories "
        "consistently or to narrow a search.",
    ),
    ToolDef(
        "list_tags",
        "facts",
        False,
        "List the tags in use with how many memories carry each, to reuse existing tags.",
    ),
    ToolDef(
        "update_memory",
        "facts",
        True,
        "Correct or refine a stored memory by id (its text, category, tags, confidence or "
        "salience); give only the fields to change.",
        {
            "id": _ID,
            "content": _text(
                f"The new text of the memory (1-{MAX_MEMORY_CHARS} characters).",
                max_length=MAX_MEMORY_CHARS,
                min_length=1,
            ),
            "category": _CATEGORY,
            "tags": {**_TAGS, "description": "The new tags, replacing the old ones."},
            "confidence": _unit("How sure you are that it is true, 0 to 1."),
            "salience": _unit("How important it is to recall, 0 to 1 (default 0.5)."),
        },
        ("id",),
    ),
    ToolDef(
        "forget_memory",
        "facts",
        True,
        "Delete a stored memory by id, when it is wrong, outdated or the user asks you to "
        "forget it.",
        {"id": _ID},
        ("id",),
    ),
    ToolDef(
        "promote_memory",
        "facts",
        True,
        "Move a memory to another layer, e.g. an episodic observation that proved durable "
        "to semantic.",
        {
            "id": _ID,
            "layer": {**_LAYER, "description": "The target layer. " + _LAYER["description"]},
        },
        ("id", "layer"),
    ),
)

_DOC_TOOLS = (
    ToolDef(
        "list_workspace_memory_files",
        "docs",
        False,
        "List the workspace memory files (MEMORY.md, PROFILE.md, daily notes under "
        "memory/ ...) with their sizes and revisions.",
        {
            "filename_prefix": _text(
                "Only files whose path starts with this, e.g. 'memory/'.", max_length=255
            )
        },
    ),
    ToolDef(
        "read_workspace_memory_file",
        "docs",
        False,
        "Read the whole content of one workspace memory file, e.g. before editing it.",
        {"filename": _FILENAME},
        ("filename",),
    ),
    ToolDef(
        "write_workspace_memory_file",
        "docs",
        True,
        "Create a workspace memory file or replace its whole content (the previous content "
        "is kept as a revision); prefer edit_workspace_memory_file for small changes.",
        {
            "filename": _FILENAME,
            "content": _text(
                f"The complete new content (Markdown, at most {MAX_FILE_CHARS} characters).",
                max_length=MAX_FILE_CHARS,
            ),
        },
        ("filename", "content"),
    ),
    ToolDef(
        "edit_workspace_memory_file",
        "docs",
        True,
        "Replace an exact piece of text in a workspace memory file; old_text must occur "
        "exactly once unless replace_all is true (read the file first to copy it exactly).",
        {
            "filename": _FILENAME,
            "old_text": _text(
                "The exact text to find, including whitespace (not empty).",
                max_length=MAX_FILE_CHARS,
                min_length=1,
            ),
            "new_text": _text(
                "The text to put in its place (may be empty to delete it).",
                max_length=MAX_FILE_CHARS,
            ),
            "replace_all": {
                "type": "boolean",
                "default": False,
                "description": "Replace every occurrence instead of requiring exactly one.",
            },
        },
        ("filename", "old_text", "new_text"),
    ),
)

_HISTORY_TOOLS = (
    ToolDef(
        "search_conversations",
        "history",
        False,
        "Search past conversation messages (older, archived ones included) for what was said "
        "about a topic, best first.",
        {
            "query": _text(
                f"Words to look for; any text is fine. At most {MAX_QUERY_CHARS} characters.",
                max_length=MAX_QUERY_CHARS,
            ),
            "top_k": _TOP_K,
            "session_id": _text(
                "Only this conversation (session id, as stored).", max_length=512, min_length=1
            ),
        },
        ("query",),
    ),
)

TOOLS: tuple[ToolDef, ...] = _FACT_TOOLS + _DOC_TOOLS + _HISTORY_TOOLS

for _tool in TOOLS:  # a schema may only promise checks that schema.validate makes
    check_schema(_tool.schema, _tool.name)
