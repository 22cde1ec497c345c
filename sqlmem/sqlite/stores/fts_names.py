"""The names of the FTS5 tables, written once for every module that builds SQL on them.

The tables themselves are schema and live in `migrations/` (with their triggers, views and
`{name}_data` shadow tables); these constants must name what the migrations create, which
a unit test checks. Statements that use them are built from them at import time, so the
SQL text stays constant at run time and apsw's statement cache is always hit.
"""

from __future__ import annotations

__all__ = ["DOCUMENTS_FTS", "FACTS_FTS", "FTS_TABLES", "MESSAGES_FTS"]

#: FTS5 over the searchable messages (`messages_fts_source`), kept in sync by triggers.
MESSAGES_FTS = "messages_fts"
#: FTS5 over the facts (`facts_fts_source`), kept in sync by triggers.
FACTS_FTS = "facts_fts"
#: FTS5 over the workspace documents' blocks (`document_blocks_fts_source`), by triggers.
DOCUMENTS_FTS = "document_blocks_fts"
#: Every FTS table of a file: what `check` verifies and `vacuum` optimizes.
FTS_TABLES = (MESSAGES_FTS, FACTS_FTS, DOCUMENTS_FTS)
