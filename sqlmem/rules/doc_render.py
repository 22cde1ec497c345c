"""The two prompt blocks made of workspace documents, in their exact formats.

Both backends pass their documents in and return what these functions make, so a prompt
reads the same whichever store holds the files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import date, timedelta
from typing import Any

from ..errors import InvalidArgumentError
from .documents import check_day
from .filters import check_limit

__all__ = ["DAILY_NOTE", "check_recent_days", "daily_day", "memory_context", "render_files"]

#: A daily note's path; group 1 is its day.
DAILY_NOTE = re.compile(r"memory/(\d{4}-\d{2}-\d{2})\.md\Z", re.ASCII)


def daily_day(path: str) -> date | None:
    """The day of a daily note's path, or None (not a daily note, or not a real date)."""
    found = DAILY_NOTE.match(path)
    if found is None:
        return None
    try:
        return date.fromisoformat(found.group(1))
    except ValueError:
        return None


def render_files(documents: Iterable[tuple[str, str]]) -> str:
    """The system-prompt block of the prompt files: `(path, content)` of the enabled documents, in
    `(sort_order, path)` order, each as `--- {path} ---\\n{content}\\n`, a blank line
    between; "" when there are none."""
    return "\n".join(f"--- {path} ---\n{content}\n" for path, content in documents)


def check_recent_days(value: Any) -> int:
    """Any integer type (numpy's too), never a bool, >= 0; the integer rule every count
    follows (`check_limit`)."""
    days = check_limit(value, "recent_days")
    if days < 0:
        raise InvalidArgumentError(f"recent_days must be >= 0, got {days}")
    return min(days, 3_650_000)  # past year 9999 either way


def recent_window(today: Any, recent_days: Any) -> tuple[date, date]:
    """The days `memory_context` reads: (first recent day, today)."""
    day = check_day(today)
    days = check_recent_days(recent_days)
    try:
        first = day - timedelta(days=days)
    except OverflowError:
        first = date.min
    return first, day


def _body(text: str) -> str:
    """A section's text without the blank lines around it."""
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def _note(day: date, content: str) -> str:
    """A daily note without its `# YYYY-MM-DD` heading line."""
    first, _, rest = content.partition("\n")
    if first.strip() == f"# {day.isoformat()}":
        content = rest
    return _body(content)


def memory_context(memory: str | None, notes: Mapping[date, str], today: date, first: date) -> str:
    """The memory-and-notes block: `## Long-term Memory` (MEMORY.md), `## Today's Notes` and
    `## Recent Context` (the notes of the days from `first` to yesterday, newest first,
    each under `### {day}`). A section is present only when it has text; "" when none.

    Each text is taken without the blank lines around it, so a MEMORY.md ending in a
    newline does not open a gap before the next section.
    """
    sections = []
    long_term = _body(memory or "")
    if long_term:
        sections.append(f"## Long-term Memory\n{long_term}")
    today_note = _note(today, notes.get(today, ""))
    if today_note:
        sections.append(f"## Today's Notes\n{today_note}")
    recent = []
    for day in sorted(notes, reverse=True):
        if first <= day < today:
            text = _note(day, notes[day])
            if text:
                recent.append(f"### {day.isoformat()}\n{text}")
    if recent:
        sections.append("## Recent Context\n" + "\n\n".join(recent))
    return "\n\n".join(sections) + "\n" if sections else ""
