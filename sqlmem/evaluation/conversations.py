"""Conversation benchmark files in LoCoMo's JSON shape, read into plain records.

The shape (Maharana et al. 2024, `locomo10.json`): a list of samples, each with
`conversation` (`speaker_a`, `speaker_b`, `session_<n>` lists of turns `{speaker, dia_id,
text}` and `session_<n>_date_time` such as "1:56 pm on 8 May, 2023") and `qa` (questions
with `evidence`, the `dia_id`s of the turns that answer them, and a `category`).

Which questions count: those whose evidence names at least one turn of the conversation,
except category 5 (adversarial: the question's premise is false and nothing should be
found). A user's own file in this shape needs no categories: a question without one counts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import InvalidArgumentError

__all__ = ["Conversation", "Question", "Turn", "load_conversations", "pick"]

_SESSION = re.compile(r"^session_(\d+)$")
_EVIDENCE = re.compile(r"D\d+:\d+")
#: LoCoMo's adversarial questions: nothing in the conversation answers them.
ADVERSARIAL = 5


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class Session:
    number: int
    started: datetime | None
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    text: str
    evidence: frozenset[str]


@dataclass(frozen=True)
class Conversation:
    name: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]


def load_conversations(path: str | Path) -> list[Conversation]:
    """Every sample of the file, in file order (InvalidArgumentError for another shape)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InvalidArgumentError(f"{str(path)!r} is not JSON: {exc}") from exc
    if isinstance(data, dict):  # one sample alone
        data = [data]
    if not isinstance(data, list) or not all(isinstance(s, dict) for s in data):
        raise InvalidArgumentError("expected a list of samples with 'conversation' and 'qa'")
    return [_sample(i, s) for i, s in enumerate(data)]


def pick(conversations: list[Conversation], spec: str | None) -> list[Conversation]:
    """The conversations a selection such as "0-4" or "0,2,7" names (all for None)."""
    if spec is None:
        return conversations
    chosen: list[int] = []
    for part in spec.split(","):
        low, _, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise InvalidArgumentError(f"bad conversation selection {spec!r}") from None
        chosen.extend(range(first, last + 1))
    missing = [i for i in chosen if not 0 <= i < len(conversations)]
    if missing:
        raise InvalidArgumentError(
            f"no conversation {missing[0]}: the file has {len(conversations)} (0-based)"
        )
    return [conversations[i] for i in dict.fromkeys(chosen)]


def _sample(index: int, sample: dict[str, Any]) -> Conversation:
    body = sample.get("conversation")
    if not isinstance(body, dict):
        raise InvalidArgumentError(f"sample {index} has no 'conversation' object")
    sessions = sorted(
        (
            _session(int(m.group(1)), turns, body)
            for key, turns in body.items()
            if (m := _SESSION.match(key)) and isinstance(turns, list)
        ),
        key=lambda s: s.number,
    )
    known = {t.dia_id for s in sessions for t in s.turns}
    questions = []
    for qa in sample.get("qa") or []:
        if not isinstance(qa, dict) or qa.get("category") == ADVERSARIAL:
            continue
        evidence = frozenset(_EVIDENCE.findall(" ".join(map(str, qa.get("evidence") or []))))
        if evidence & known and isinstance(qa.get("question"), str):
            questions.append(Question(qa["question"], evidence & known))
    speakers = (str(body.get("speaker_a", "A")), str(body.get("speaker_b", "B")))
    name = str(sample.get("sample_id", f"conversation-{index}"))
    return Conversation(name, speakers, tuple(sessions), tuple(questions))


def _session(number: int, turns: list[Any], body: dict[str, Any]) -> Session:
    kept = tuple(
        Turn(str(t["dia_id"]), str(t.get("speaker", "")), str(t["text"]))
        for t in turns
        if isinstance(t, dict) and isinstance(t.get("text"), str) and "dia_id" in t
    )
    return Session(number, _when(body.get(f"session_{number}_date_time")), kept)


def _when(text: object) -> datetime | None:
    """ "1:56 pm on 8 May, 2023" as a UTC datetime (None when absent or unreadable)."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
