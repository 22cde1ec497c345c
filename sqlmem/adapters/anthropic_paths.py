"""The memory tool's `/memories/...` paths as document paths, and its text formats.

Claude names files under `/memories`; the handler keeps them as documents under a folder
of the workspace (`root`, default `memories`), so `/memories/notes/todo.md` is the document
`memories/notes/todo.md`. A path outside `/memories`, one with `.` or `..` segments, empty
segments or backslashes is refused before anything is read, with the tool's own wording
(Anthropic's reference implementation) so the model understands it and retries.

The formats are that implementation's too: six-wide line numbers and a tab, the listing
header and `size<TAB>path` lines, sizes as `4.0K`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import SqlmemError
from ..rules.documents import is_doc_path, is_folder_name

__all__ = [
    "MEMORIES",
    "MemoryToolError",
    "format_size",
    "listing",
    "numbered",
    "relative",
]

#: The folder Claude sees.
MEMORIES = "/memories"
_LINE_NUMBER_WIDTH = 6


class MemoryToolError(SqlmemError):
    """A command the memory tool refuses; its message is the tool result Claude reads
    (sent with `is_error`)."""


def relative(path: Any, *, file: bool) -> str:
    """The path under `/memories` ("" for the folder itself), checked: a file's must end in
    `.md` and every segment be a document name (see `sqlmem.rules.documents`)."""
    if not isinstance(path, str):
        raise MemoryToolError(f"path must be a string, got: {type(path).__name__}")
    if path != MEMORIES and not path.startswith(MEMORIES + "/"):
        raise MemoryToolError(f"Path must start with /memories, got: {path}")
    rest = path[len(MEMORIES) :]
    rest = rest[1:] if rest.startswith("/") else rest
    rest = rest[:-1] if rest.endswith("/") and not file else rest
    if not rest:
        return ""
    segments = rest.split("/")
    if any(s in ("", ".", "..") or "\\" in s for s in segments):
        raise MemoryToolError(f"Path {path} would escape /memories directory")
    if not all(is_folder_name(s) for s in segments):
        raise MemoryToolError(
            f"The path {path} is not allowed: use names of ASCII letters, digits, '.', '_' "
            "or '-', not starting with '.'"
        )
    if file and not is_doc_path(rest):
        raise MemoryToolError(
            f"The path {path} is not allowed: memory files are Markdown documents, name "
            "them with '.md' at the end (at most 255 characters)"
        )
    return rest


def numbered(lines: Sequence[str], first: int) -> list[str]:
    """`lines` numbered from `first`, as the tool shows files."""
    return [f"{str(n).rjust(_LINE_NUMBER_WIDTH)}\t{line}" for n, line in enumerate(lines, first)]


def format_size(size: int) -> str:
    """`0B`, `512B`, `4.0K`, `1.5M`: as `du -h` shows them, which the tool's listings use."""
    if size == 0:
        return "0B"
    unit = min((size.bit_length() - 1) // 10, 3)
    value = size / 1024**unit
    suffix = "BKMG"[unit]
    return f"{int(value)}{suffix}" if value == int(value) else f"{value:.1f}{suffix}"


def listing(shown: str, files: Sequence[tuple[str, int]]) -> str:
    """The tool's listing of a folder: every file and folder up to two levels below it,
    depth first by name; `files` are (path relative to the folder, size). A folder's size
    is the sum of its files' (documents have no folder entries of their own)."""
    sizes: dict[str, int] = {}
    for rel, size in files:
        parts = rel.split("/")
        for depth in range(1, min(len(parts), 2) + 1):
            name = "/".join(parts[:depth]) + ("/" if depth < len(parts) else "")
            sizes[name] = sizes.get(name, 0) + size
    lines = [f"{format_size(sum(s for _, s in files))}\t{shown}"]
    # Depth first by name: a folder's own line, then what is inside it.
    for name in sorted(sizes, key=lambda n: n.rstrip("/").split("/")):
        lines.append(f"{format_size(sizes[name])}\t{shown}/{name}")
    header = (
        f"Here're the files and directories up to 2 levels deep in {shown}, excluding hidden items:"
    )
    return header + "\n" + "\n".join(lines)
