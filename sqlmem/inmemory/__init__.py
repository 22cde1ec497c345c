"""The in-memory twins of the stores, and `open()`: a `MemoryDB`-shaped object over them."""

from .db import InMemoryDB, open

__all__ = ["InMemoryDB", "open"]
