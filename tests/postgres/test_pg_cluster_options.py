"""The cluster options' arguments, checked before anything connects, and the new error."""

from __future__ import annotations

import pytest

import sqlmem
from sqlmem.postgres import PostgresBackend
from sqlmem.postgres.sessions import ConnectionSettings


def test_commit_unknown_is_a_busy_error_exported_from_sqlmem() -> None:
    assert issubclass(sqlmem.CommitUnknownError, sqlmem.StorageBusyError)
    assert sqlmem.CommitUnknownError is sqlmem.errors.CommitUnknownError
    assert "CommitUnknownError" in sqlmem.__all__


@pytest.mark.parametrize(
    "options",
    [{"read_dsn": ""}, {"read_dsn": 5}, {"transaction_pooler": "yes"}, {"transaction_pooler": 1}],
)
def test_bad_cluster_options_are_refused_before_connecting(options: dict[str, object]) -> None:
    with pytest.raises(sqlmem.InvalidArgumentError):
        PostgresBackend("host=/nonexistent dbname=x", **options)  # type: ignore[arg-type]


def test_a_backend_with_every_option_connects_to_nothing_until_opened() -> None:
    backend = PostgresBackend(
        "postgresql://127.0.0.1:1,127.0.0.1:2/db?target_session_attrs=read-write",
        read_dsn="host=127.0.0.1 port=3 dbname=db",
        transaction_pooler=True,
    )
    backend.close()


def test_timeouts_ride_on_the_connection_or_on_each_transaction() -> None:
    direct = ConnectionSettings(250, transaction_pooler=False).connect_kwargs()
    assert "lock_timeout=250" in direct["options"] and "prepare_threshold" not in direct
    pooled = ConnectionSettings(250, transaction_pooler=True).connect_kwargs()
    assert "options" not in pooled and pooled["prepare_threshold"] is None
