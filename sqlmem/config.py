"""Store configuration, validated once when it is built."""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

import apsw
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import InvalidArgumentError
from .forksafe import sqlite_outside_engines

__all__ = ["DEFAULT_TOKENIZER", "StoreConfig", "validation_message"]

#: unicode61 folds case and strips diacritics; porter stems English ("running" finds "run").
DEFAULT_TOKENIZER = "porter unicode61 remove_diacritics 2"

#: Tokenizers built into SQLite; anything else would make the file unreadable elsewhere.
_BUILTIN_TOKENIZERS = ("unicode61", "porter", "trigram", "ascii")


def validation_message(exc: ValidationError, what: str) -> str:
    """One readable line per problem, each naming the field."""
    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or what
        parts.append(f"{what}.{field}: {err['msg']}")
    return "; ".join(parts)


class StoreConfig(BaseModel):
    """How one database file is opened and maintained.

    `tokenizer` is read when the schema is first created only (the FTS tables keep the
    tokenizer they were created with); `synchronous="FULL"` also survives power loss at
    the cost of one fsync per commit.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    wal: bool = True
    busy_timeout_ms: int = Field(default=5000, ge=0, le=2**31 - 1)  # a C int in SQLite
    synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
    history_search: bool = True
    tokenizer: str = DEFAULT_TOKENIZER
    max_history_len: int | None = Field(default=None, ge=1)
    #: Previous contents kept per workspace document; 0 keeps none.
    doc_revisions: int = Field(default=50, ge=0, le=2**62)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise InvalidArgumentError(validation_message(exc, "StoreConfig")) from None

    @field_validator("tokenizer")
    @classmethod
    def _builtin_tokenizer(cls, value: str) -> str:
        words = value.split()
        if not words or words[0] not in _BUILTIN_TOKENIZERS:
            raise ValueError(f"must start with one of {', '.join(_BUILTIN_TOKENIZERS)}")
        if any(not w.replace("_", "").isalnum() for w in words):
            raise ValueError("only letters, digits and '_' are allowed in tokenizer arguments")
        spec = " ".join(words)
        if not _sqlite_accepts(spec):  # fail here rather than at the first search
            raise ValueError(
                f"SQLite refuses tokenizer {value!r} (unknown tokenizer or bad arguments)"
            )
        return spec


@cache
def _sqlite_accepts(spec: str) -> bool:
    """Build the tokenizer once per spec (every StoreConfig() validates its tokenizer)."""
    words = spec.split()
    try:
        with sqlite_outside_engines():  # SQLite code: a fork waits for it (forksafe)
            apsw.Connection(":memory:").fts5_tokenizer(words[0], words[1:])
    except apsw.Error:
        return False
    return True
