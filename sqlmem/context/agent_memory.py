"""`AgentMemory`: one agent turn, memory included, over any database.

The parts (the memory pack, the workspace documents, the context window, the consolidator,
the post-conversation extractor) each do one job; assembled by hand they are easy to get
wrong in a way nobody notices: a window that archives before the consolidator ever sees
the messages forgets the conversation. `AgentMemory` assembles them once, the right way:

- `before(session_id, user_message)` stores the user's message and returns the prompt:
  one system message (the system prompt, the enabled documents, the memory pack for the
  message), then the session summary, the active history and the new message, within
  `max_input_tokens`. The pack gets at most half of what the system prompt, documents and
  new message leave, so the conversation always keeps room. Past the window's trigger,
  older messages are consolidated into HISTORY.md before they are archived.
- `after(session_id, reply)` stores the reply (a text, a message, or the assistant's tool
  calls with their results and its final answer), then consolidates past `memory_window`
  active messages and lets the workspace extractor run when its rules allow.

`complete(prompt) -> str` is the model used for consolidation and extraction, never for
the agent's own answer (the caller asks its model between `before` and `after`). Its
failures are reported in the logs and change nothing: they never raise into the turn and
never lose a message (a message is archived only with the record that covers it). Storage
errors do raise: a turn whose messages could not be stored must not look like it worked.

Written against the store protocols, so it runs on SQLite, the in-memory database and
PostgreSQL alike.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

from ..errors import InvalidArgumentError
from ..protocols import Database
from ..records import Message
from ..rules.checks import check_at_least
from .compactor import message_tokens
from .consolidate import Consolidator
from .context_window import BuiltContext, ContextWindow
from .pack import build_memory_pack
from .pack_config import PackConfig
from .tokens import Estimator, estimate_tokens
from .workspace_extract import WorkspaceExtractor

__all__ = ["AgentMemory"]


#: A reply as `after` takes it: the assistant's text, one message, or several in order
#: (the assistant's tool calls, the tools' results, its final answer).
Reply = str | Message | Sequence[Message]


def refuse_async(db: object, complete: object) -> None:
    """The sync `AgentMemory` cannot await: an async database or model is a mistake the
    caller should hear about now, naming the form that takes them, not as a coroutine
    never awaited in the middle of a turn."""
    history = getattr(db, "history", None)
    if inspect.iscoroutinefunction(getattr(history, "append", None)):
        raise InvalidArgumentError(
            "AgentMemory was given an async database: use sqlmem.aio.AgentMemory(adb, complete)"
        )
    if inspect.iscoroutinefunction(complete) or inspect.iscoroutinefunction(
        getattr(complete, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    ):
        raise InvalidArgumentError("complete is async: use sqlmem.aio.AgentMemory, which awaits it")


class AgentMemory:
    """Runs an agent's turns over one database (see the module docstring).

    `pack=None` uses `PackConfig()`; its estimator (when set) counts the whole prompt.
    `extract=True` runs a `WorkspaceExtractor` with its defaults after each reply (its own
    rules decide whether the model is called); `False` never; an extractor instance over
    the same database is used as given.
    """

    def __init__(
        self,
        db: Database,
        complete: Callable[[str], str],
        *,
        system_prompt: str = "",
        max_input_tokens: int = 128_000,
        memory_window: int = 50,
        keep_last: int = 10,
        pack: PackConfig | None = None,
        extract: bool | WorkspaceExtractor = True,
    ) -> None:
        refuse_async(db, complete)
        if not callable(complete):
            raise InvalidArgumentError("complete must be callable: complete(prompt) -> str")
        if not isinstance(system_prompt, str):
            raise InvalidArgumentError("system_prompt must be a str")
        if pack is not None and not isinstance(pack, PackConfig):
            raise InvalidArgumentError("pack must be a PackConfig or None")
        self.db = db
        self.system_prompt = system_prompt
        self.max_input_tokens = check_at_least(max_input_tokens, "max_input_tokens", 1)
        self.pack = pack if pack is not None else PackConfig()
        self.estimator: Estimator = self.pack.estimator or estimate_tokens
        self.consolidator = Consolidator(
            db, complete, memory_window=memory_window, keep_last=keep_last
        )
        self.window = ContextWindow(
            db.history,
            max_input_tokens=max_input_tokens,
            consolidator=self.consolidator,
            estimator=self.estimator,
        )
        self.extractor = self._extractor(db, complete, extract)

    @staticmethod
    def _extractor(
        db: Database, complete: Callable[[str], str], extract: object
    ) -> WorkspaceExtractor | None:
        if isinstance(extract, WorkspaceExtractor):
            if extract.db is not db:
                raise InvalidArgumentError("the extractor must work on the same database")
            return extract
        if not isinstance(extract, bool):
            raise InvalidArgumentError("extract must be a bool or a WorkspaceExtractor")
        return WorkspaceExtractor(db, complete) if extract else None

    def before(self, session_id: str, user_message: str | Message) -> BuiltContext:
        """Store the user's message and return this turn's prompt (the new message last)."""
        if isinstance(user_message, str):
            user_message = Message(role="user", content=user_message)
        elif not isinstance(user_message, Message):
            raise InvalidArgumentError("user_message must be a str or a Message")
        system = self._system(user_message)
        built = self.window.build(session_id, system, user_message)
        self.db.history.append(session_id, user_message)
        return built

    def after(self, session_id: str, reply: Reply) -> None:
        """Store the reply, then consolidate and extract when due (never raising because
        of the model)."""
        self.db.history.append_many(session_id, _reply_messages(reply))
        self.consolidator.maybe_consolidate(session_id)
        if self.extractor is not None:
            self.extractor.run(session_id)

    def _system(self, user_message: Message) -> str:
        """The system prompt, the enabled documents, then the memory pack, the pack cut to
        half of the room the rest leaves (none when there is no room)."""
        parts = [self.system_prompt] if self.system_prompt else []
        files = self.db.docs.render_files()
        if files:
            parts.append(files)
        fixed = message_tokens(
            Message(role="system", content="\n\n".join(parts)), self.estimator
        ) + message_tokens(user_message, self.estimator)
        room = (self.max_input_tokens - fixed) // 2 - self.estimator("\n\n")
        if room > 0:
            config = self.pack
            if config.max_budget_tokens > room:
                config = config.model_copy(
                    update={
                        "max_budget_tokens": room,
                        "soft_budget_tokens": min(config.soft_budget_tokens, room),
                    }
                )
            text = build_memory_pack(self.db.facts, user_message.content, config).text
            if text:
                parts.append(text.rstrip("\n"))
        return "\n\n".join(parts)


def _reply_messages(reply: Reply) -> list[Message]:
    if isinstance(reply, str):
        return [Message(role="assistant", content=reply)]
    if isinstance(reply, Message):
        return [reply]
    items: list[object] = list(reply) if isinstance(reply, Sequence) else []
    messages = [m for m in items if isinstance(m, Message)]
    if not messages or len(messages) != len(items):
        raise InvalidArgumentError("reply must be a str, a Message or a non-empty list of Messages")
    return messages
