"""A connection lost while a write commits: `CommitUnknownError`, never a plain busy error.

A proxy between sqlmem and the server cuts the client's side of the connection at a
chosen statement, after (or before) passing that statement on; the server finishes what
it received. So the test knows what the client cannot: whether the write was stored.

- Cut as the commit goes out (an append's single statement in autocommit, or the COMMIT
  of an explicit transaction): the write IS stored, and sqlmem says `CommitUnknownError`
  (it used to say "a write in flight is whole or absent", inviting a duplicate).
- Cut before it reaches the server: not stored, still `CommitUnknownError` (the client
  cannot tell the two apart).
- Cut inside an explicit transaction, before its COMMIT: the server rolls it back, and
  sqlmem says a plain `StorageBusyError` (safe to repeat).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from pgserver import new_agent_id
from psycopg.conninfo import conninfo_to_dict

import sqlmem
import sqlmem.postgres as sp
from sqlmem import CommitUnknownError, Fact, Message, StorageBusyError


class CuttingProxy:
    """127.0.0.1:port -> the server. `arm(trigger, forward)`: the next client packet
    holding `trigger` is passed on (`forward`) or dropped, and the client's side closed;
    the server's side is drained until the server hangs up, so it finishes the work."""

    def __init__(self, dsn: str) -> None:
        info = conninfo_to_dict(dsn)
        host, port = str(info.get("host", "/tmp")), int(info.get("port", 5432))
        if host.startswith("/"):
            self._upstream: tuple[int, Any] = (socket.AF_UNIX, f"{host}/.s.PGSQL.{port}")
        else:
            self._upstream = (socket.AF_INET, (host, port))
        rest = {k: v for k, v in info.items() if k not in ("host", "port")}
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.dsn = " ".join(
            [f"host=127.0.0.1 port={self.listener.getsockname()[1]}"]
            + [f"{k}={v}" for k, v in rest.items()]
        )
        self.trigger: bytes | None = None
        self.forward = True
        self.cuts = 0
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._cut: set[socket.socket] = set()
        self._server_gone = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, trigger: bytes, *, forward: bool) -> None:
        with self._lock:
            self.trigger, self.forward = trigger, forward

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            family, address = self._upstream
            server = socket.socket(family, socket.SOCK_STREAM)
            with self._lock:
                self._sockets += [client, server]
            server.connect(address)
            threading.Thread(target=self._to_server, args=(client, server), daemon=True).start()
            threading.Thread(target=self._to_client, args=(server, client), daemon=True).start()

    def _to_server(self, client: socket.socket, server: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := client.recv(65536):
                with self._lock:
                    cut = self.trigger is not None and self.trigger in data
                    forward = self.forward
                    if cut:
                        self.trigger, self.cuts = None, self.cuts + 1
                        self._cut.add(server)
                if cut:
                    # The client's side first: forwarding first let a loaded machine pass
                    # the server's answer back before the cut (the client then saw its
                    # INSERT succeed and lost the connection at COMMIT instead).
                    client.shutdown(socket.SHUT_RDWR)
                    client.close()
                    if forward:
                        server.sendall(data)
                    server.shutdown(socket.SHUT_WR)  # the server reads EOF after the data
                    return
                server.sendall(data)
            server.shutdown(socket.SHUT_WR)

    def _to_client(self, server: socket.socket, client: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := server.recv(65536):
                with contextlib.suppress(OSError):  # a cut client: drain, discard
                    client.sendall(data)
        server.close()
        client.close()
        if server in self._cut:
            self._server_gone.set()

    def settled(self) -> None:
        """Wait until the server side of the cut connection has hung up: whatever it
        received is committed or rolled back by then (the client learned nothing)."""
        assert self._server_gone.wait(30), "the server never finished the cut connection"

    def close(self) -> None:
        self.listener.close()
        with self._lock:
            for each in self._sockets:
                each.close()


@pytest.fixture
def proxy(pg_dsn: str) -> Iterator[CuttingProxy]:
    made = CuttingProxy(pg_dsn)
    yield made
    made.close()


def _messages(pg_dsn: str, agent: str) -> list[str]:
    with sp.open(pg_dsn, agent) as db:
        return [m.content for m in db.history.get_all("s")]


@pytest.mark.parametrize("forward", [True, False])
def test_cut_while_an_append_commits_is_unknown(
    proxy: CuttingProxy, pg_dsn: str, forward: bool
) -> None:
    agent = new_agent_id()
    with sp.open(proxy.dsn, agent, sqlmem.StoreConfig(busy_timeout_ms=2000)) as db:
        db.history.append("s", Message(role="user", content="first"))
        proxy.arm(b"INSERT INTO messages", forward=forward)  # the append's one statement
        with pytest.raises(CommitUnknownError, match="may or may not be stored"):
            db.history.append("s", Message(role="user", content="cut"))
        assert proxy.cuts == 1
        proxy.settled()
        stored = _messages(pg_dsn, agent)
        assert stored == (["first", "cut"] if forward else ["first"])
        # The store goes on by itself on a new connection.
        assert db.history.append("s", Message(role="user", content="next")) == len(stored) + 1


def test_cut_as_an_explicit_transaction_commits_is_unknown(
    proxy: CuttingProxy, pg_dsn: str
) -> None:
    agent = new_agent_id()
    with sp.open(proxy.dsn, agent, sqlmem.StoreConfig(busy_timeout_ms=2000)) as db:
        db.facts.index(Fact(id="a", content="first fact"))
        proxy.arm(b"COMMIT", forward=True)
        with pytest.raises(CommitUnknownError):
            db.facts.index(Fact(id="b", content="committed all the same"))
        assert proxy.cuts == 1
        proxy.settled()
    with sp.open(pg_dsn, agent) as direct:
        assert direct.facts.get("b") is not None  # it was stored: "unknown" was right


def test_cut_before_the_commit_is_a_plain_busy_error_and_nothing_is_stored(
    proxy: CuttingProxy, pg_dsn: str
) -> None:
    agent = new_agent_id()
    config = sqlmem.StoreConfig(busy_timeout_ms=2000, max_history_len=100)  # explicit txn
    with sp.open(proxy.dsn, agent, config) as db:
        db.history.append("s", Message(role="user", content="first"))
        proxy.arm(b"INSERT INTO messages", forward=True)  # runs, never committed
        with pytest.raises(StorageBusyError) as info:
            db.history.append("s", Message(role="user", content="rolled back"))
        assert not isinstance(info.value, CommitUnknownError)
        assert proxy.cuts == 1
        proxy.settled()
        assert _messages(pg_dsn, agent) == ["first"]
        assert db.history.append("s", Message(role="user", content="next")) == 2
