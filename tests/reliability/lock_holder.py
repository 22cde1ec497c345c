"""Child process: holds the write lock of a database with a raw apsw connection.

Usage: python lock_holder.py PATH. Prints "locked" once BEGIN IMMEDIATE succeeded, then
keeps the lock until its stdin is closed, rolls back and exits.
"""

from __future__ import annotations

import sys

import apsw


def main() -> None:
    conn = apsw.Connection(sys.argv[1])
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT INTO facts(id, content, created_at, updated_at) VALUES ('held', 'x', 1, 1)"
    )
    sys.stdout.write("locked\n")
    sys.stdout.flush()
    sys.stdin.read()
    conn.execute("ROLLBACK")
    conn.close()


if __name__ == "__main__":
    main()
