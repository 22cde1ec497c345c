"""Turning a conversation exchange into long-term facts with any LLM.

`LLMExtractor` takes a bare `complete(prompt) -> text` function, so it works with every
client (OpenAI, Anthropic, a local model, a test fake) without sqlmem depending on one.
The model answers one fact per line, or NONE; the parser forgives the list styles models
like to use.

A fact's id is derived from its normalised text, so extracting the same fact twice (the
next turn, after a restart, from another session) stores it once: with a store the extractor
skips ids that are already there and stores the rest through `remember`, which merges a
fact into a stored one of the same fingerprint, so re-running extraction adds nothing and
returns only what is new.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol, runtime_checkable

from ..errors import ExtractionError, InvalidArgumentError
from ..protocols import FactStore
from ..records import Fact, Message
from ..rules.checks import check_session_id
from ..rules.identity import fact_id, normalise_fact

__all__ = [
    "ExtractionError",
    "Extractor",
    "LLMExtractor",
    "NopExtractor",
    "fact_id",
    "normalise_fact",
    "parse_facts",
]

EXTRACTION_PROMPT = """\
You maintain the long-term memory of an assistant. Read the conversation below and list \
the facts about the user worth remembering in later conversations: who they are, their \
preferences, plans, relationships, projects and decisions. Skip small talk, anything only \
relevant to this moment, and facts about the assistant.

Write each fact as a short, self-contained sentence on its own line (for example: The user \
is allergic to peanuts). When a fact is the current value of something that can change \
(where the user lives, their job, their diet), start its line with a key in brackets \
naming that slot, for example: [user.city] The user lives in Berlin. Write nothing else. \
If there is nothing worth remembering, reply with the single word NONE.

Conversation:
{transcript}
"""

# A list marker at the start of a line: "-", "*", "•", "1." or "12)", then whitespace.
# Whitespace is required so "-5 degrees", "*args" and "1.5 million" are left alone; a line
# starting with "--" never matches (the second "-" is not whitespace) and is kept as is.
_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])(?:\s+|$)")
_SURROGATE = re.compile("[\ud800-\udfff]")
# An optional slot key before a fact: "[user.city] The user lives in Berlin."
_KEYED = re.compile(r"^\[([A-Za-z0-9._:-]{1,128})\]\s+(\S.*)$")


@runtime_checkable
class Extractor(Protocol):
    """What an agent loop calls after each exchange; `NopExtractor` turns extraction off."""

    def extract(
        self, session_id: str, messages: Sequence[Message], store: FactStore | None = None
    ) -> list[Fact]: ...


def _is_none(line: str) -> bool:
    return line.casefold().rstrip(".") == "none"


def parse_facts(text: str) -> list[str]:
    """Fact texts in `text`, one per line, without list markers; blank lines and NONE are
    skipped, and a fact repeated in one answer is kept once."""
    facts: list[str] = []
    seen: set[str] = set()
    for raw in text.splitlines():
        line = _SURROGATE.sub("", raw).strip()
        if not line.startswith("--"):
            line = _BULLET.sub("", line, count=1).strip()
        if not line or _is_none(line):
            continue
        key = normalise_fact(line)
        if key and key not in seen:
            seen.add(key)
            facts.append(line)
    return facts


def split_key(line: str) -> tuple[str, str]:
    """A parsed fact line as (key, text): the key of a "[key] text" line, else ''. Older
    answers (no brackets) read as before."""
    keyed = _KEYED.match(line)
    return (keyed.group(1), keyed.group(2)) if keyed else ("", line)


def _transcript(messages: Sequence[Message]) -> str:
    """The exchange as plain `role: text` lines; system prompts are instructions, not facts
    about the user, so they are left out."""
    lines: list[str] = []
    for message in messages:
        if message.role == "system":
            continue
        if message.content:
            lines.append(f"{message.role}: {message.content}")
        for call in message.tool_calls:
            lines.append(f"{message.role} called {call.name}({call.arguments})")
    return "\n".join(lines)


class LLMExtractor:
    """Extracts facts about the user from an exchange with `complete(prompt) -> str`."""

    def __init__(self, complete: Callable[[str], str]) -> None:
        if not callable(complete):
            raise TypeError("complete must be a callable taking a prompt and returning text")
        self.complete = complete

    def prompt(self, messages: Sequence[Message]) -> str:
        """The prompt sent for `messages` (public so it can be logged or inspected)."""
        return EXTRACTION_PROMPT.format(transcript=_transcript(messages))

    def extract(
        self, session_id: str, messages: Sequence[Message], store: FactStore | None = None
    ) -> list[Fact]:
        """The facts in `messages`, with `session_id` as their source.

        Without a store: every fact parsed. With one: only the facts it did not hold yet,
        each stored through `store.remember` (one transaction each). A failing `complete` raises
        `ExtractionError` (cause kept); store errors are raised as they are.
        """
        check_session_id(session_id)  # it becomes each fact's source
        if isinstance(messages, (str, bytes, Message)) or not isinstance(messages, Iterable):
            raise InvalidArgumentError("messages must be a sequence of sqlmem.Message")
        messages = list(messages)
        for i, message in enumerate(messages):
            if not isinstance(message, Message):
                raise InvalidArgumentError(
                    f"messages[{i}] must be a sqlmem.Message, not {type(message).__name__}"
                )
        if not _transcript(messages):
            return []  # nothing said, nothing to pay a model call for
        try:
            answer = self.complete(self.prompt(messages))
        except Exception as exc:
            raise ExtractionError(
                f"fact extraction failed: the completion function raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(answer, str):
            raise ExtractionError(
                f"fact extraction failed: the completion function returned "
                f"{type(answer).__name__}, not str"
            )
        facts = [
            Fact(id=fact_id(text), content=text, source=session_id, key=key)
            for key, text in map(split_key, parse_facts(answer))
        ]
        if store is None:
            return facts
        # Through `remember` (SPEC 12): a fact already stored under its id is left as it
        # is; one stored under another id with the same fingerprint (written by another
        # writer, or phrased differently) is merged into, its hits counted, and is not
        # new; only facts inserted under their own id are returned.
        return [
            fact for fact in facts if store.get(fact.id) is None and store.remember(fact) == fact.id
        ]


class NopExtractor:
    """Extraction turned off: the same interface, no model call, no facts."""

    def extract(
        self, session_id: str, messages: Sequence[Message], store: FactStore | None = None
    ) -> list[Fact]:
        return []
