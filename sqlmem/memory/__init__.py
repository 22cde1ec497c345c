"""The in-memory database under its first name: `sqlmem.inmemory.open()` is
`sqlmem.inmemory.open()` (the package was renamed so that "memory" in a memory library
names what an agent remembers, not where a backend keeps it)."""

from ..inmemory import InMemoryDB, open

__all__ = ["InMemoryDB", "open"]
