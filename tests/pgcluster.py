"""A real replicated PostgreSQL cluster, and a PgBouncer, for the cluster tests.

Built from the machine's Debian packages: pg_auto_failover (`pg_autoctl`, packages
`postgresql-15-auto-failover` and `pg-auto-failover-cli`) makes a monitor, a primary and a
synchronous secondary; `pgbouncer` is the pooler. Everything listens on 127.0.0.1 only,
runs as the `postgres` user when we are root (PostgreSQL refuses root), lives under one
temporary folder, and is SIGKILLed (every process of it, not only the parents) by
`stop()`. `.ci/run` installs the packages; a developer without them gets a skip that says
how to install them (`missing_packages`).

The monitor is tuned to notice a dead node within about two seconds (its defaults wait
twenty), so that a failover takes seconds, not half a minute.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

__all__ = [
    "INSTALL_HINT",
    "AutoFailoverCluster",
    "PgBouncer",
    "kill_tree",
    "missing_packages",
]

PG_BIN = Path("/usr/lib/postgresql/15/bin")
INSTALL_HINT = (
    "apt-get update && apt-get install -y postgresql-15-auto-failover pg-auto-failover-cli "
    "pgbouncer (as .ci/run does)"
)

#: The monitor's health checks, tightened: a node is declared dead ~2 s after it stops
#: answering, and the secondary is promoted without waiting half a minute for the old
#: primary to acknowledge its demotion (it is dead: nobody else can write).
_MONITOR_SETTINGS = {
    "pgautofailover.health_check_period": "1000",
    "pgautofailover.health_check_timeout": "1000",
    "pgautofailover.health_check_max_retries": "1",
    "pgautofailover.health_check_retry_delay": "500",
    "pgautofailover.node_considered_unhealthy_timeout": "2000",
    "pgautofailover.primary_demote_timeout": "5000",
}
_KEEPER_SETTINGS = {
    "timeout.prepare_promotion_walreceiver": "1",
    "timeout.prepare_promotion_catchup": "10",
}


def missing_packages() -> list[str]:
    """The Debian packages these tests need that this machine lacks."""
    missing = []
    if shutil.which("pg_autoctl") is None:
        missing.append("pg-auto-failover-cli")
    if not Path("/usr/share/postgresql/15/extension/pgautofailover.control").exists():
        missing.append("postgresql-15-auto-failover")
    if shutil.which("pgbouncer") is None and not Path("/usr/sbin/pgbouncer").exists():
        missing.append("pgbouncer")
    if not (PG_BIN / "pg_ctl").exists():
        missing.append("postgresql-15")
    return missing


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _server_user() -> str | None:
    return "postgres" if os.geteuid() == 0 else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def kill_tree(pid: int) -> None:
    """SIGKILL `pid` and every process below it, gathered first: a machine that dies."""
    for _ in range(2):  # a second sweep catches a child forked while we gathered
        tree, found, todo = _children(), [], [pid]
        while todo:
            current = todo.pop()
            found.append(current)
            todo.extend(tree.get(current, []))
        for each in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(each, signal.SIGKILL)


def _kill_stragglers(root: Path) -> None:
    """Any process whose command line names our folder (a postmaster `-D root/...`)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if str(root).encode() in cmdline:
            kill_tree(int(entry.name))


@dataclass
class Node:
    name: str
    port: int
    pgdata: Path
    process: subprocess.Popen[bytes] | None = None


@dataclass
class AutoFailoverCluster:
    """A pg_auto_failover monitor, a primary and a synchronous secondary on loopback."""

    root: Path
    monitor: Node
    nodes: list[Node] = field(default_factory=list)
    user: str | None = None

    # -- building ------------------------------------------------------------------------

    @classmethod
    def start(cls) -> AutoFailoverCluster:
        root = Path(tempfile.mkdtemp(prefix="sqlmem-cluster-"))
        user = _server_user()
        if user is not None:
            info = pwd.getpwnam(user)
            os.chown(root, info.pw_uid, info.pw_gid)
        os.chmod(root, 0o755)
        cluster = cls(root, Node("monitor", free_port(), root / "monitor"), user=user)
        try:
            cluster._create_monitor()
            for name in ("node1", "node2"):
                cluster._create_node(Node(name, free_port(), root / name))
            cluster.wait_until_healthy(120)
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PG", "XDG_"))}
        env.update(
            XDG_CONFIG_HOME=str(self.root / "config"),
            XDG_DATA_HOME=str(self.root / "share"),
            XDG_RUNTIME_DIR=str(self.root / "run"),
            PG_CONFIG=str(PG_BIN / "pg_config"),
            PATH=f"{PG_BIN}:{env.get('PATH', '/usr/bin:/bin')}",
            LC_ALL="C.UTF-8",  # initdb then makes UTF8 databases, as sqlmem needs
            LANG="C.UTF-8",
        )
        return env

    def _autoctl(self, *args: str, timeout: float = 180) -> None:
        done = subprocess.run(
            ["pg_autoctl", *args], user=self.user, env=self._env(), capture_output=True,
            text=True, stdin=subprocess.DEVNULL, timeout=timeout,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"pg_autoctl {args[0]} {args[1]} failed:\n{done.stderr[-3000:]}")

    def _run(self, node: Node) -> None:
        log = open(self.root / f"{node.name}.log", "ab")  # noqa: SIM115 - the child keeps it
        node.process = subprocess.Popen(
            ["pg_autoctl", "run", "--pgdata", str(node.pgdata)], user=self.user,
            env=self._env(), stdout=log, stderr=log, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        log.close()

    def _common(self, node: Node) -> list[str]:
        return [
            "--pgdata", str(node.pgdata), "--pgport", str(node.port), "--pgctl",
            str(PG_BIN / "pg_ctl"), "--hostname", "127.0.0.1", "--listen", "127.0.0.1",
            "--auth", "trust", "--no-ssl",
        ]  # fmt: skip

    def _create_monitor(self) -> None:
        self._autoctl("create", "monitor", *self._common(self.monitor))
        self._run(self.monitor)
        deadline = time.monotonic() + 60
        while True:
            try:
                with psycopg.connect(self.monitor_dsn, autocommit=True, connect_timeout=2) as c:
                    for name, value in _MONITOR_SETTINGS.items():
                        c.execute(f"ALTER SYSTEM SET {name} = {value}")
                    c.execute("SELECT pg_reload_conf()")
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _create_node(self, node: Node) -> None:
        monitor = f"postgres://autoctl_node@127.0.0.1:{self.monitor.port}/pg_auto_failover"
        self._autoctl(
            "create", "postgres", *self._common(node), "--monitor", monitor, "--name",
            node.name, "--dbname", "sqlmem",
        )  # fmt: skip
        for key, value in _KEEPER_SETTINGS.items():
            self._autoctl("config", "set", "--pgdata", str(node.pgdata), key, value)
        self.nodes.append(node)
        self._run(node)
        self.wait_until_healthy(120)

    # -- reading its state ---------------------------------------------------------------

    @property
    def monitor_dsn(self) -> str:
        return f"host=127.0.0.1 port={self.monitor.port} user=postgres dbname=pg_auto_failover"

    def dsn(self, *, key_value: bool = False, attrs: str = "read-write") -> str:
        """Every data node, the primary found by `target_session_attrs`."""
        ports = [str(n.port) for n in self.nodes]
        if key_value:
            hosts = ",".join("127.0.0.1" for _ in ports)
            return (
                f"host={hosts} port={','.join(ports)} dbname=sqlmem user=postgres "
                f"target_session_attrs={attrs} connect_timeout=2"
            )
        hosts = ",".join(f"127.0.0.1:{p}" for p in ports)
        return (
            f"postgresql://{hosts}/sqlmem?user=postgres&target_session_attrs={attrs}"
            "&connect_timeout=2"
        )

    def node_dsn(self, node: Node) -> str:
        return f"host=127.0.0.1 port={node.port} dbname=sqlmem user=postgres connect_timeout=2"

    def states(self) -> dict[str, tuple[str, str]]:
        """Node name -> (reported state, assigned state), as the monitor sees them."""
        with psycopg.connect(self.monitor_dsn, connect_timeout=2) as conn:
            rows = conn.execute(
                "SELECT nodename::text, reportedstate::text, goalstate::text"
                " FROM pgautofailover.node"
            ).fetchall()
        return {_text(name): (_text(reported), _text(goal)) for name, reported, goal in rows}

    def role(self, role: str) -> Node:
        """The node whose reported and assigned states are both `role` ("primary")."""
        for name, (reported, goal) in self.states().items():
            if reported == goal == role:
                return next(n for n in self.nodes if n.name == name)
        raise LookupError(f"no {role} now: {self.states()}")

    def wait_until_healthy(self, seconds: float) -> None:
        """Until every data node is primary or secondary, settled, with one primary."""
        deadline = time.monotonic() + seconds
        want = {"primary", "secondary"} if len(self.nodes) > 1 else {"single"}
        while True:
            try:
                states = self.states()
                settled = {r for r, g in states.values() if r == g}
                if (
                    len(states) == len(self.nodes)
                    and settled == want
                    and len(want) == len([s for s in states.values() if s[0] == s[1]])
                ):
                    return
            except psycopg.OperationalError:
                states = {}
            if time.monotonic() > deadline:
                raise RuntimeError(f"cluster not healthy after {seconds} s: {states}")
            time.sleep(0.25)

    def wait_for_writable(self, seconds: float) -> float:
        """Seconds until the multi-host DSN reaches a primary that commits a write."""
        start = time.monotonic()
        while True:
            try:
                with psycopg.connect(self.dsn(), autocommit=True) as conn:
                    conn.execute("CREATE TABLE IF NOT EXISTS cluster_probe (t float8)")
                    conn.execute("INSERT INTO cluster_probe VALUES (%s)", (time.time(),))
                return time.monotonic() - start
            except psycopg.Error:
                if time.monotonic() - start > seconds:
                    raise
                time.sleep(0.05)

    # -- faults --------------------------------------------------------------------------

    def kill(self, node: Node) -> None:
        """SIGKILL the node: its pg_autoctl, its postmaster and every backend at once."""
        assert node.process is not None
        kill_tree(node.process.pid)
        node.process.wait(timeout=30)

    def rejoin(self, node: Node, seconds: float = 180) -> None:
        """Start a killed node again: it rejoins as the secondary (pg_rewind if needed)."""
        self._run(node)
        self.wait_until_healthy(seconds)

    def stop(self) -> None:
        for node in [*self.nodes, self.monitor]:
            if node.process is not None and node.process.poll() is None:
                kill_tree(node.process.pid)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    node.process.wait(timeout=30)
        _kill_stragglers(self.root)
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class PgBouncer:
    """PgBouncer in transaction pooling mode in front of one server, on loopback."""

    root: Path
    port: int
    pool_size: int
    process: subprocess.Popen[bytes]

    @classmethod
    def start(cls, server_host: str, server_port: int, pool_size: int = 20) -> PgBouncer:
        user = _server_user()
        root = Path(tempfile.mkdtemp(prefix="sqlmem-pgbouncer-"))
        port = free_port()
        (root / "users.txt").write_text('"postgres" ""\n')
        (root / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"sqlmem = host={server_host} port={server_port} dbname=postgres user=postgres\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {root / 'users.txt'}\nadmin_users = postgres\n"
            f"pool_mode = transaction\ndefault_pool_size = {pool_size}\n"
            f"max_db_connections = {pool_size}\nmax_client_conn = 5000\n"
            f"logfile = {root / 'pgbouncer.log'}\n"
        )
        if user is not None:
            info = pwd.getpwnam(user)
            for path in (root, *root.iterdir()):
                os.chown(path, info.pw_uid, info.pw_gid)
        binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
        process = subprocess.Popen(
            [binary, str(root / "pgbouncer.ini")], user=user, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        bouncer = cls(root, port, pool_size, process)
        deadline = time.monotonic() + 30
        while True:
            try:
                bouncer.show("VERSION")
                return bouncer
            except psycopg.OperationalError:
                if time.monotonic() > deadline or process.poll() is not None:
                    bouncer.stop()
                    raise
                time.sleep(0.1)

    @property
    def dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} dbname=sqlmem user=postgres"

    @property
    def admin_dsn(self) -> str:
        return f"host=127.0.0.1 port={self.port} dbname=pgbouncer user=postgres"

    def show(self, what: str) -> list[dict[str, object]]:
        """`SHOW POOLS`, `SHOW SERVERS`... of the admin console, as dicts."""
        # The admin console speaks only the simple query protocol: a client-side cursor.
        with psycopg.connect(
            self.admin_dsn, autocommit=True, cursor_factory=psycopg.ClientCursor
        ) as conn:
            cur = conn.execute(f"SHOW {what}")
            names = [d.name for d in cur.description or []]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def stop(self) -> None:
        kill_tree(self.process.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=30)
        shutil.rmtree(self.root, ignore_errors=True)
