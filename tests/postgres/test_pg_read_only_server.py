"""A write that reaches a read-only server (a standby, or a primary demoted in a
switchover while our connection stayed open): `StorageBusyError` saying so, and that
connection is dropped, so the next call opens one where the DSN now finds a primary.

Simulated on the tests' server with a role whose sessions start read-only
(`default_transaction_read_only`): a session keeps that once started, whatever the role
says later, so after the role is changed back only a new connection can write, as only a
new connection reaches the new primary after a switchover.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from pgserver import new_agent_id
from psycopg.conninfo import conninfo_to_dict, make_conninfo

import sqlmem.postgres as sp
from sqlmem import Message, StorageBusyError


@pytest.fixture
def read_only_role(pg_dsn: str) -> Iterator[str]:
    role = f"ro_{uuid.uuid4().hex[:10]}"
    sp.open(pg_dsn, new_agent_id()).close()  # the tables exist before they are granted
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")
        conn.execute(f"ALTER ROLE {role} SET default_transaction_read_only = on")
    try:
        yield role
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (role,),
            )
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


def test_a_read_only_server_is_busy_and_its_connection_replaced(
    pg_dsn: str, read_only_role: str
) -> None:
    agent = new_agent_id()
    with sp.open(pg_dsn, agent) as db:  # migrated and writable as the owner
        db.history.append("s", Message(role="user", content="first"))
    as_role = make_conninfo(**{**conninfo_to_dict(pg_dsn), "user": read_only_role})
    with sp.open(as_role, agent, pool_size=1) as db:
        assert db.history.count("s") == 1  # its one connection: a read-only session
        with psycopg.connect(pg_dsn, autocommit=True) as owner:  # "a primary again"
            owner.execute(f"ALTER ROLE {read_only_role} SET default_transaction_read_only = off")
        with pytest.raises(StorageBusyError, match="read-only") as info:
            db.history.append("s", Message(role="user", content="refused"))
        assert isinstance(info.value.__cause__, psycopg.Error)
        # The refused connection was dropped: the next one starts writable.
        assert db.history.append("s", Message(role="user", content="second")) == 2
        assert [m.content for m in db.history.get_all("s")] == ["first", "second"]
