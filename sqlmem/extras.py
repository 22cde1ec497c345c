"""The optional extras, and the one message for a missing one.

`import sqlmem` loads no framework and no driver; each adapter and the PostgreSQL backend
import theirs when they are imported. Without the extra, Python's own error ("No module
named 'langgraph'") leaves the user guessing which package to install, and in which
version range: `needs_extra` turns it into a `MissingExtraError` that names the extra.
Only the extra's own packages are translated: any other missing module is a bug and
propagates as it is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .errors import MissingExtraError

__all__ = ["EXTRA_PACKAGES", "needs_extra"]

#: The top-level modules each extra installs (pyproject.toml's optional dependencies).
EXTRA_PACKAGES: dict[str, frozenset[str]] = {
    "embed": frozenset({"wordllama"}),
    "mcp": frozenset({"mcp", "anyio"}),
    "openai-agents": frozenset({"agents", "openai"}),
    "langchain": frozenset({"langchain_core"}),
    "langgraph": frozenset({"langgraph", "langchain_core"}),
    "postgres": frozenset({"psycopg", "psycopg_pool", "psycopg_binary"}),
}


@contextmanager
def needs_extra(extra: str, module: str) -> Iterator[None]:
    """Imports inside the block that fail for want of `extra` raise `MissingExtraError`
    saying that `module` needs it."""
    try:
        yield
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing not in EXTRA_PACKAGES[extra]:
            raise
        raise MissingExtraError(
            f"{module} needs the '{extra}' extra (module {exc.name!r} is missing): "
            f"pip install 'sqlmem[{extra}]'"
        ) from exc
