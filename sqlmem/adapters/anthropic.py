"""Anthropic's client-side memory tool (`memory_20250818`) over sqlmem's documents.

    from sqlmem.adapters.anthropic import SqlmemMemoryTool
    memory = SqlmemMemoryTool(db)                    # a MemoryDB, or sqlmem.inmemory.open()
    tools = [memory.tool_param]                      # {"type": "memory_20250818", "name": "memory"}
    ...
    results = [memory.tool_result(block) for block in response.content
               if block.type == "tool_use" and block.name == "memory"]

Claude asks the application to run file commands under `/memories` (view, create,
str_replace, insert, delete, rename); this handler runs them on `db.docs`, the agent's
workspace documents, so memory files share the database's transactions, backups, search
and forgetting. Each command is one `db.atomic()` block: it is checked and applied whole
or not at all. Every change of a file is a document revision, so a bad edit is undone
with `db.docs.restore(path, revision)`; a deleted or renamed-away file's last content
goes to the attic folder (`attic`, default `memories-attic`, where Claude does not see it)
as a revision of its own, so nothing Claude removes is lost either.

Commands are plain dicts (the `input` of a `tool_use` block) or the SDK's beta command
models; no SDK is needed to run them. Refusals are the tool's documented messages
(Anthropic's reference implementation's wording), returned as the result with
`is_error`: Claude reads them and corrects itself. Files are Markdown documents: a name
must end in `.md`, with segments of ASCII letters, digits, `.`, `_`, `-`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..errors import InvalidArgumentError, SqlmemError
from ..rules.documents import is_folder_name
from .anthropic_paths import MEMORIES, MemoryToolError, listing, numbered, relative

__all__ = ["MemoryToolError", "MemoryToolResult", "SqlmemMemoryTool"]

#: Versions the handler was tested with (the SDK's beta command types).
TESTED_WITH = {"anthropic": "2.14.0"}


class MemoryToolResult(NamedTuple):
    """What to send back to Claude: the text, and whether it reports a refusal."""

    content: str
    is_error: bool


class SqlmemMemoryTool:
    """The memory tool's command handler over `db.docs` (see the module docstring).

    `db`: any database with `docs` and `atomic()` (SQLite's `MemoryDB`, the in-memory
    `sqlmem.inmemory.open()`). `root`: the documents folder holding `/memories`. `attic`:
    where deleted and renamed-away files keep their last content (None: nowhere).
    """

    def __init__(self, db: Any, *, root: str = "memories", attic: str | None = "memories-attic"):
        for name, folder in (("root", root), ("attic", attic)):
            if folder is not None and not (
                isinstance(folder, str) and all(is_folder_name(s) for s in folder.split("/"))
            ):
                raise InvalidArgumentError(f"{name} must be a document folder, got {folder!r}")
        if attic is not None and (attic == root or attic.startswith(root + "/")):
            raise InvalidArgumentError("attic must be outside root, or Claude would see it")
        self._db, self._root, self._attic = db, root, attic

    @property
    def tool_param(self) -> dict[str, str]:
        """The tool's entry in a Messages API request's `tools`."""
        return {"type": "memory_20250818", "name": "memory"}

    # -- entry points -----------------------------------------------------------------------

    def run(self, command: Any) -> MemoryToolResult:
        """Run one command; a refusal is a result with `is_error`, never an exception."""
        try:
            return MemoryToolResult(self.execute(command=command), False)
        except MemoryToolError as exc:
            return MemoryToolResult(str(exc), True)

    async def arun(self, command: Any) -> MemoryToolResult:
        """`run` on a worker thread, for async programs (the event loop never waits)."""
        return await asyncio.to_thread(self.run, command)

    def tool_result(self, tool_use: Any) -> dict[str, Any]:
        """The `tool_result` block answering a `tool_use` block (a dict or the SDK's)."""
        block = _as_dict(tool_use)
        result = self.run(block.get("input"))
        answer: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": block.get("id"),
            "content": result.content,
        }
        if result.is_error:
            answer["is_error"] = True
        return answer

    def execute(self, command: Any) -> str:
        """Run one command and return its result text; `MemoryToolError` (the text Claude
        should read) for a refused command."""
        args = _as_dict(command)
        name = args.get("command")
        handler = _COMMANDS.get(name) if isinstance(name, str) else None
        if handler is None:
            raise MemoryToolError(f"Unknown command: {name}")
        try:
            if name == "view":  # reads only: no write lock taken
                return handler(self, args)
            with self._db.atomic():
                return handler(self, args)
        except MemoryToolError:
            raise
        except InvalidArgumentError as exc:  # content too large, a lone surrogate ...
            raise MemoryToolError(str(exc)) from exc

    # -- the commands -----------------------------------------------------------------------

    def _view(self, args: Mapping[str, Any]) -> str:
        path = _text(args, "path")
        rel = relative(path, file=False)
        document = self._db.docs.read(self._doc(rel)) if rel.endswith(".md") else None
        if document is None:
            under = self._under(rel)
            if not under and rel:
                raise _missing(path)
            shown = MEMORIES + ("/" + rel if rel else "")
            return listing(shown, [(p[len(self._folder(rel)) :], size) for p, size in under])
        lines = document.content.split("\n")
        first, last = _view_range(args.get("view_range"), len(lines))
        body = numbered(lines[first - 1 : last], first)
        return f"Here's the content of {path} with line numbers:\n" + "\n".join(body)

    def _create(self, args: Mapping[str, Any]) -> str:
        path, text = _text(args, "path"), _text(args, "file_text")
        rel = relative(path, file=True)
        if self._db.docs.read(self._doc(rel)) is not None or self._under(rel):
            raise MemoryToolError(f"File {path} already exists")
        self._db.docs.write(self._doc(rel), text)
        return f"File created successfully at: {path}"

    def _str_replace(self, args: Mapping[str, Any]) -> str:
        path, old, new = _text(args, "path"), _text(args, "old_str"), _text(args, "new_str")
        content = self._content(path)
        count = content.count(old) if old else 0
        if count == 0:
            raise MemoryToolError(
                f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
            )
        if count > 1:
            lines = _lines_of(content, old)
            raise MemoryToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{old}` in "
                f"lines: {', '.join(map(str, lines))}. Please ensure it is unique"
            )
        changed = content[: content.find(old)].count("\n")
        updated = content.replace(old, new)
        self._db.docs.write(self._doc(relative(path, file=True)), updated)
        new_lines = updated.split("\n")
        start, end = max(0, changed - 2), min(len(new_lines), changed + 3)
        snippet = numbered(new_lines[start:end], start + 1)
        return (
            "The memory file has been edited. Here is the snippet showing the change (with "
            "line numbers):\n" + "\n".join(snippet)
        )

    def _insert(self, args: Mapping[str, Any]) -> str:
        path, text = _text(args, "path"), _text(args, "insert_text")
        at = args.get("insert_line")
        content = self._content(path)
        lines = content.split("\n")
        if lines[-1] == "":
            lines.pop()
        if isinstance(at, bool) or not isinstance(at, int) or not 0 <= at <= len(lines):
            raise MemoryToolError(
                f"Invalid `insert_line` parameter: {at}. It should be within the range "
                f"[0, {len(lines)}]."
            )
        lines.insert(at, text.rstrip("\n"))
        joined = "\n".join(lines)  # one final newline, not a second after an empty last line
        self._db.docs.write(
            self._doc(relative(path, file=True)), joined if joined.endswith("\n") else joined + "\n"
        )
        return f"The file {path} has been edited."

    def _delete(self, args: Mapping[str, Any]) -> str:
        path = _text(args, "path")
        rel = relative(path, file=False)
        if not rel:
            raise MemoryToolError("Cannot delete the /memories directory itself")
        found = self._files(rel)
        if not found:
            raise MemoryToolError(f"The path {path} does not exist")
        for doc_path, file_rel in found:
            self._retire(doc_path, file_rel)
        return f"Successfully deleted {path}"

    def _rename(self, args: Mapping[str, Any]) -> str:
        old_path, new_path = _text(args, "old_path"), _text(args, "new_path")
        old, new = relative(old_path, file=False), relative(new_path, file=False)
        if not old:
            raise MemoryToolError("Cannot rename the /memories directory itself")
        if not new or self._files(new):
            raise MemoryToolError(f"The destination {new_path} already exists")
        found = self._files(old)
        if not found:
            raise MemoryToolError(f"The path {old_path} does not exist")
        if new.startswith(old + "/"):
            raise MemoryToolError(f"Cannot move {old_path} inside itself ({new_path})")
        docs = self._db.docs
        for doc_path, file_rel in found:
            moved = new + file_rel[len(old) :]
            relative(f"{MEMORIES}/{moved}", file=True)  # the new name must be a file name
            document = docs.read(doc_path)
            assert document is not None  # listed in this transaction
            docs.write(self._doc(moved), document.content, enabled=document.enabled)
            self._retire(doc_path, file_rel)
        return f"Successfully renamed {old_path} to {new_path}"

    # -- helpers ----------------------------------------------------------------------------

    def _doc(self, rel: str) -> str:
        return f"{self._root}/{rel}"

    def _folder(self, rel: str) -> str:
        return f"{self._root}/{rel}/" if rel else f"{self._root}/"

    def _under(self, rel: str) -> list[tuple[str, int]]:
        """(document path, size) of every file inside the folder `rel`."""
        return [(i.path, i.size) for i in self._db.docs.list(self._folder(rel))]

    def _files(self, rel: str) -> list[tuple[str, str]]:
        """(document path, path under /memories) of the file `rel`, or of the files inside
        the folder `rel`; [] when neither exists."""
        if rel.endswith(".md") and self._db.docs.read(self._doc(rel)) is not None:
            return [(self._doc(rel), rel)]
        start = len(self._root) + 1
        return [(path, path[start:]) for path, _ in self._under(rel)]

    def _content(self, path: str) -> str:
        """The content of the file at `path`, with the tool's refusals."""
        rel = relative(path, file=False)
        document = self._db.docs.read(self._doc(rel)) if rel.endswith(".md") else None
        if document is not None:
            return str(document.content)
        if not rel or self._under(rel):
            raise MemoryToolError(f"The path {path} is not a file.")
        raise _missing(path)

    def _retire(self, doc_path: str, file_rel: str) -> None:
        """Delete a document, its last content kept in the attic first (a new revision
        there when the attic already holds that name)."""
        if self._attic is not None:
            document = self._db.docs.read(doc_path)
            if document is not None:
                self._db.docs.write(f"{self._attic}/{file_rel}", document.content, enabled=False)
        self._db.docs.delete(doc_path)


_COMMANDS = {
    "view": SqlmemMemoryTool._view,
    "create": SqlmemMemoryTool._create,
    "str_replace": SqlmemMemoryTool._str_replace,
    "insert": SqlmemMemoryTool._insert,
    "delete": SqlmemMemoryTool._delete,
    "rename": SqlmemMemoryTool._rename,
}


def _as_dict(value: Any) -> dict[str, Any]:
    """A command or block as a dict: plain dicts as they are, the SDK's models dumped."""
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump()
        if isinstance(dumped, dict):
            return dumped
    raise MemoryToolError(f"a memory tool command must be an object, got {type(value).__name__}")


def _text(args: Mapping[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        command = args.get("command")
        raise MemoryToolError(f"Missing or invalid `{name}` parameter for command `{command}`")
    return value


def _missing(path: str) -> MemoryToolError:
    return MemoryToolError(f"The path {path} does not exist. Please provide a valid path.")


def _view_range(given: Any, count: int) -> tuple[int, int]:
    """First and last line to show (1-based, inclusive): all without a range; `[start,
    -1]` to the end, as the tool defines it."""
    if given is None:
        return 1, count
    if (
        not isinstance(given, (list, tuple))
        or len(given) != 2
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in given)
    ):
        raise MemoryToolError(
            f"Invalid `view_range` parameter: {given}. It should be a list of two integers "
            "[start_line, end_line] (end_line -1: to the end)."
        )
    start, end = max(1, given[0]), count if given[1] == -1 else given[1]
    return start, min(end, count)


def _lines_of(content: str, text: str) -> list[int]:
    """The line numbers where each occurrence of `text` starts."""
    found, start = [], content.find(text)
    while start != -1:
        found.append(content.count("\n", 0, start) + 1)
        start = content.find(text, start + 1)
    return found


def sdk_memory_tool(handler: SqlmemMemoryTool) -> Any:
    """The handler as the anthropic SDK's `BetaAbstractMemoryTool`, for its tool runner
    (`client.beta.messages.tool_runner(tools=[sdk_memory_tool(handler)], ...)`); needs the
    `anthropic` extra."""
    try:
        from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
    except ImportError as exc:
        raise SqlmemError(
            "the anthropic SDK is not installed: pip install 'sqlmem[anthropic]'"
        ) from exc

    class SqlmemBetaMemoryTool(BetaAbstractMemoryTool):
        def execute(self, command: Any) -> str:
            result = handler.run(command)
            if result.is_error:
                raise ToolError(result.content)
            return result.content

        view = create = str_replace = insert = delete = rename = execute

    return SqlmemBetaMemoryTool()
