"""The in-memory database under its first name: `sqlmem.memory.open()` is
`sqlmem.inmemory.open()` (the package was renamed so that "memory" in a memory library
names what an agent remembers, not where a backend keeps it). The twin stores are here
too, as they are at the top level."""

from ..inmemory import InMemoryDB, open
from ..inmemory.docs import InMemoryDocumentStore
from ..inmemory.facts import InMemoryFactStore
from ..inmemory.history import InMemoryHistoryStore

__all__ = [
    "InMemoryDB",
    "InMemoryDocumentStore",
    "InMemoryFactStore",
    "InMemoryHistoryStore",
    "open",
]
