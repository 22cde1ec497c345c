"""What the database-wide jobs (`stats`, `check`, `maintain`, `forget`) need of the
in-memory database: its three store twins and its `atomic()` block.

`InMemoryDB` is one; the jobs are written against this shape so that their modules do not
import the database module that imports them.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .docs import InMemoryDocumentStore
    from .facts import InMemoryFactStore
    from .history import InMemoryHistoryStore

__all__ = ["Twins"]


class Twins(Protocol):
    @property
    def history(self) -> InMemoryHistoryStore: ...

    @property
    def facts(self) -> InMemoryFactStore: ...

    @property
    def docs(self) -> InMemoryDocumentStore: ...

    def atomic(self) -> AbstractContextManager[None]: ...
