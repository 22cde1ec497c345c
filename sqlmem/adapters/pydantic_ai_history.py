"""Pydantic AI's message history per conversation, stored in `db.history`.

One `ModelMessage` (a request or a response, with all its parts) is one history message:
its text (user prompts, text and thinking parts, tool calls with their arguments, tool
returns and retry prompts) is the content, so `db.history.search` finds it; the message
itself, exactly as `ModelMessagesTypeAdapter` serialises it (parts, tool call ids,
timestamps, usage, provider details), is in the metadata, so it reads back equal.
Requests are stored as "user" messages and responses as "assistant" ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from ..errors import InvalidArgumentError
from ..protocols import Database
from ..records import Message
from ..rules.checks import check_session_id

__all__ = ["MESSAGE_KEY", "SqlmemMessageHistory", "message_text"]

#: The metadata key holding one Pydantic AI message's JSON text.
MESSAGE_KEY = "pydantic_ai_message"


def _part_text(part: Any) -> str:
    if isinstance(part, UserPromptPart):
        content = part.content
        if isinstance(content, str):
            return content
        return " ".join(item for item in content if isinstance(item, str))
    if isinstance(part, (TextPart, ThinkingPart)):
        return part.content
    if isinstance(part, ToolCallPart):
        return f"{part.tool_name}({part.args_as_json_str()})"
    if isinstance(part, ToolReturnPart):
        return f"{part.tool_name}: {part.model_response_str()}"
    return str(getattr(part, "content", ""))


def message_text(message: ModelMessage) -> str:
    """The words of a message, for search."""
    return "\n".join(filter(None, (_part_text(part) for part in message.parts)))


def _encode(message: ModelMessage) -> Message:
    if not isinstance(message, (ModelRequest, ModelResponse)):
        raise InvalidArgumentError(
            "messages must be pydantic_ai ModelRequest or ModelResponse, "
            f"not {type(message).__name__}"
        )
    data = json.loads(ModelMessagesTypeAdapter.dump_json([message]))[0]
    return Message(
        role="user" if isinstance(message, ModelRequest) else "assistant",
        content=message_text(message),
        metadata={MESSAGE_KEY: json.dumps(data, ensure_ascii=False)},
    )


def _decode(stored: Sequence[Message]) -> list[ModelMessage]:
    texts = [m.metadata[MESSAGE_KEY] for m in stored if MESSAGE_KEY in m.metadata]
    return ModelMessagesTypeAdapter.validate_json("[" + ",".join(texts) + "]")


class SqlmemMessageHistory:
    """The messages of one conversation (`conversation_id`) in a sqlmem database.

        history = SqlmemMessageHistory(db, "user-42")
        result = await agent.run(prompt, message_history=history.load())
        history.save(result.new_messages())

    `load(last=n)` gives the newest `n` messages (whole messages: a tool call's request
    and response may be split at the edge of the window, so pass the whole history to a
    model that needs every call answered). `save` stores all the messages or none.
    """

    def __init__(self, db: Database, conversation_id: str) -> None:
        self.db = db
        self.conversation_id = check_session_id(conversation_id, "conversation_id")

    def save(self, messages: Sequence[ModelMessage]) -> None:
        encoded = [_encode(m) for m in messages]  # every message checked before any write
        if encoded:
            self.db.history.append_many(self.conversation_id, encoded)

    def load(self, *, last: int | None = None) -> list[ModelMessage]:
        if last is None:
            stored = self.db.history.get_all(self.conversation_id)
        else:
            stored = self.db.history.get_recent(self.conversation_id, last, pair_safe=False)
        return _decode(stored)

    def clear(self) -> None:
        self.db.history.purge(self.conversation_id)
