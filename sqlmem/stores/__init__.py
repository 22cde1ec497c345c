"""One front per store protocol, shared by every backend.

A front (`FactStoreFront`, `DocumentStoreFront`, `HistoryStoreFront`, ...) owns what is the
same on SQLite, PostgreSQL and in memory: checking arguments, building the filter value once,
the rules that decide what a call means. It then makes one call into its backend's port (the
`*_port` modules declare them), and the port only executes: SQL for the database backends,
dictionary operations for the in-memory one. A rule therefore lives in one place, and a new
backend implements a port, not a protocol."""
