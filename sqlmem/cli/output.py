"""How the command line talks: results on stdout (text for people, JSON with `--json`),
errors as one line on stderr, progress on stderr only when someone is watching.

Keeping all printing here lets the commands return plain data and keeps the two output
forms from drifting apart: the text form is always rendered from the same dict the JSON
form prints.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # `sqlmem --help` and `--version` must not load pydantic
    from ..records import Fact, Message

__all__ = [
    "Output",
    "Progress",
    "fact_json",
    "human_bytes",
    "message_json",
    "message_line",
    "one_line",
    "preview",
    "print_error",
    "sqlmem_command",
]

TextRenderer = Callable[[dict[str, Any]], Iterable[str]]


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        from ..rules.export_format import iso_ms  # loads the records: only when needed

        return iso_ms(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


class Output:
    """Where one command invocation prints its result."""

    def __init__(self, as_json: bool, stdout: TextIO | None = None) -> None:
        self.as_json = as_json
        self.stdout = stdout or sys.stdout

    def result(self, data: dict[str, Any], render: TextRenderer) -> None:
        """Print `data` as one JSON document, or as the lines `render(data)` makes."""
        if self.as_json:
            text = json.dumps(data, ensure_ascii=False, indent=2, default=_default)
            self.stdout.write(text + "\n")
        else:
            for line in render(data):
                self.stdout.write(line + "\n")
        self.stdout.flush()


def one_line(text: str) -> str:
    """Collapse any line breaks so an error (or a preview) stays on one line."""
    return " ".join(text.split()) if ("\n" in text or "\r" in text) else text


def print_error(message: str, stderr: TextIO | None = None) -> None:
    stream = stderr or sys.stderr
    stream.write(f"sqlmem: error: {one_line(message)}\n")
    stream.flush()


class Progress:
    """Counts written over themselves on stderr, or nothing when disabled."""

    def __init__(self, verb: str, enabled: bool, noun: str = "records") -> None:
        self.verb = verb
        self.noun = noun
        self.enabled = enabled
        self._shown = False

    def __call__(self, count: int) -> None:
        if self.enabled:
            sys.stderr.write(f"\rsqlmem: {self.verb} {count:,} {self.noun}")
            sys.stderr.flush()
            self._shown = True

    def finish(self) -> None:
        if self._shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._shown = False

    # As a context manager the count line is ended even when the command fails, so an
    # error message starts on a line of its own.
    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.finish()


def message_json(message: Message, archived: bool | None = None) -> dict[str, Any]:
    """A message as the CLI prints it: every field, timestamps as in exports."""
    data: dict[str, Any] = {
        "session_id": message.session_id,
        "seq": message.seq,
    }
    if archived is not None:
        data["archived"] = archived
    data.update(
        role=message.role,
        content=message.content,
        name=message.name,
        tool_call_id=message.tool_call_id,
        tool_calls=[
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ],
        is_error=message.is_error,
        metadata=message.metadata,
        created_at=message.created_at,
    )
    if message.score is not None:
        data["score"] = message.score
    return data


def fact_json(fact: Fact) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": fact.id,
        "content": fact.content,
        "source": fact.source,
        "tags": fact.tags,
        "category": fact.category,
        "metadata": fact.metadata,
        "created_at": fact.created_at,
        "updated_at": fact.updated_at,
        # 0.2 memory items (SPEC 12)
        "layer": fact.layer,
        "kind": fact.kind,
        "confidence": fact.confidence,
        "salience": fact.salience,
        "references": fact.references,
        "expires_at": fact.expires_at,
        "fingerprint": fact.fingerprint,
        "hits": fact.hits,
    }
    if fact.key or fact.valid_from is not None or fact.superseded_by is not None:
        data.update(  # facts that change; left out for others (0.2's output is kept)
            key=fact.key,
            valid_from=fact.valid_from,
            valid_to=fact.valid_to,
            superseded_by=fact.superseded_by,
        )
    if fact.score is not None:
        data["score"] = fact.score
    return data


def preview(text: str, width: int = 100) -> str:
    """Content on one line, cut to `width` characters for a terminal."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def message_line(data: dict[str, Any]) -> str:
    """`#3  user: text`, with tool calls and results spelled out."""
    head = f"#{data['seq']:<4} {data['role']}"
    if data.get("archived"):
        head += " (archived)"
    parts: list[str] = []
    if data["role"] == "tool" and data["tool_call_id"]:
        parts.append(f"[result of {data['tool_call_id']}]")
    if data["content"]:
        parts.append(preview(data["content"]))
    for call in data["tool_calls"]:
        parts.append(f"→ {call['name']}({preview(call['arguments'], 60)})")
    return f"{head}: {' '.join(parts)}"


def human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # unreachable; keeps mypy satisfied


def sqlmem_command() -> str:
    """How to run this sqlmem from a shell, for hints a person copies.

    A bare `sqlmem` only when PATH finds this very script: after the README's quick start
    it is `.venv/bin/sqlmem`, not on PATH, and the hints failed with "command not found".
    Otherwise the script beside the running interpreter (a virtual environment's bin
    folder), else `python -m sqlmem` with this interpreter.
    """
    folder = Path(sys.executable).parent  # not resolved: a venv's python is a link
    for name in ("sqlmem", "sqlmem.exe"):
        script = folder / name
        if script.is_file():
            on_path = shutil.which("sqlmem")
            if on_path is not None and Path(on_path).resolve() == script.resolve():
                return "sqlmem"
            return shlex.quote(str(script))
    return f"{shlex.quote(sys.executable)} -m sqlmem"
