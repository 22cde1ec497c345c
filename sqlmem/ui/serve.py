"""Serving the inspector: open the target, bind a loopback port, print the token URL,
run uvicorn until interrupted, close the database.

The socket is bound here, before uvicorn starts, so `--port 0` (any free port) still
prints the URL that works, and a port in use fails at once with one line.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import sys
from collections.abc import Callable
from typing import TextIO

from ..errors import SqlmemError
from ..protocols import Database
from . import MISSING_EXTRA, create_app
from .security import new_token

__all__ = ["bind", "is_loopback", "serve", "start_url"]

_log = logging.getLogger("sqlmem.ui")


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on `host:port` (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise SqlmemError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    return sock


def start_url(sock: socket.socket, token: str) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


def serve(
    open_db: Callable[[], Database],
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    write: bool = False,
    title: str = "",
    out: TextIO = sys.stdout,
) -> int:
    """Serve the inspector over the database `open_db` opens, until Ctrl-C."""
    try:
        import uvicorn
    except ImportError:
        raise SqlmemError(MISSING_EXTRA) from None
    token = new_token()
    sock = bind(host, port)
    try:
        with open_db() as db:
            app = create_app(db, token=token, write=write, title=title)
            mode = "read-write" if write else "read-only"
            out.write(f"sqlmem ui: {title} ({mode}) at\n  {start_url(sock, token)}\n")
            if not is_loopback(host):
                out.write(f"warning: listening on {host}, not only this machine\n")
            out.write("Press Ctrl-C to stop.\n")
            out.flush()
            config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
            uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0
