"""Reading a model's JSON answer, and the prompts' shared pieces.

A model asked for JSON often wraps it in a Markdown code fence, or says a word before it.
Both are accepted; anything else that is not one JSON object is unusable, and the caller
changes nothing and reports why. Nothing here raises on model output: callers get
`(answer, None)` or `(None, problem)`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

from ..records import Message

__all__ = ["ask_json", "format_message", "one_line", "stamp"]

_FENCE = re.compile(r"\A\s*```[A-Za-z0-9_-]*\s*\n(.*?)\n?\s*```\s*\Z", re.S)


def parse_object(text: object) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON object in a model's answer, or (None, why not)."""
    if not isinstance(text, str):
        return None, f"the model returned {type(text).__name__}, not text"
    if not text.strip():
        return None, "the model returned a blank answer"
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    candidates = [body]
    start, end = body.find("{"), body.rfind("}")
    if 0 <= start < end and (start, end) != (0, len(body) - 1):
        candidates.append(body[start : end + 1])  # a word before or after the object
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value, None
        return None, f"the model's JSON is a {type(value).__name__}, not an object"
    return None, "the model's answer is not valid JSON"


def ask_json(
    complete: Callable[[str], str], prompt: str
) -> tuple[dict[str, Any] | None, str | None]:
    """Call the model and read its JSON object; never raises because of the model."""
    try:
        answer = complete(prompt)
    except Exception as exc:  # any failure of the caller's model client is reported
        return None, f"the model call failed: {type(exc).__name__}: {exc}"
    return parse_object(answer)


def text_field(answer: Mapping[str, Any], name: str) -> tuple[str, str | None]:
    """A string field ("" when absent or null), or a problem when it has another type."""
    value = answer.get(name)
    if value is None:
        return "", None
    if not isinstance(value, str):
        return "", f"the model's {name!r} is a {type(value).__name__}, not a string"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "", f"the model's {name!r} holds lone surrogates"
    return value, None


def bool_field(answer: Mapping[str, Any], name: str) -> tuple[bool, str | None]:
    value = answer.get(name)
    if not isinstance(value, bool):
        return False, f"the model's {name!r} is {type(value).__name__}, not a bool"
    return value, None


def stamp(when: datetime | None) -> str:
    """`YYYY-MM-DD HH:MM` in UTC (now when None)."""
    when = when or datetime.now(timezone.utc)
    return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M")


def one_line(text: str) -> str:
    """Line breaks become spaces, so an entry stays one line of a log file."""
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def format_message(message: Message, *, limit: int | None = None) -> str:
    """`[YYYY-MM-DD HH:MM] ROLE [tools: a, b]: text`, the text on one line and
    cut at `limit` characters with `... [truncated]`."""
    text = one_line(message.content)
    if limit is not None and len(text) > limit:
        text = text[:limit] + "... [truncated]"
    tools = ""
    if message.tool_calls:
        tools = " [tools: " + ", ".join(call.name for call in message.tool_calls) + "]"
    return f"[{stamp(message.created_at)}] {message.role.upper()}{tools}: {text}"
