"""A SQLite VFS that fails chosen file operations on demand, for I/O fault tests.

`FaultVFS` inherits every operation from the platform VFS ("unix") and registers itself
as the process default, so `sqlmem.open()` goes through it without any API of its own for
choosing a VFS. Faults are armed per operation: `arm("write", "full", nth=3)` makes the
third `xWrite` after arming (on files under `root`) fail with SQLITE_FULL, and every later
one too while `sticky` (a disk that stays full), or only that one when not (a transient
glitch). `disarm()` clears the fault; counters restart at every `arm()`.

Only files whose path lies under `root` are affected, so other tests' databases and
SQLite's private temporary files are left alone. The VFS must be unregistered when done
(`close()`); the fixture using it does that even when a test fails.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Literal

import apsw

__all__ = ["KINDS", "OPS", "FaultVFS"]

Op = Literal["read", "write", "sync", "truncate"]
Kind = Literal["ioerr", "full"]

OPS: tuple[Op, ...] = ("write", "sync", "read", "truncate")
KINDS: tuple[Kind, ...] = ("ioerr", "full")

_BASE = "unix"


@dataclass
class _Fault:
    op: Op
    kind: Kind
    nth: int
    sticky: bool
    seen: int = 0
    fired: int = 0


class FaultVFS(apsw.VFS):
    """Pass-through VFS with armed failures; see the module docstring."""

    def __init__(self, root: str, name: str = "sqlmem-faulty") -> None:
        self.root = root
        self.vfs_name = name
        self._lock = threading.Lock()
        self._fault: _Fault | None = None
        #: Calls per operation on files under root since the VFS was made (diagnostics).
        self.calls: dict[str, int] = {op: 0 for op in OPS}
        super().__init__(name, _BASE, makedefault=True)

    # -- control ------------------------------------------------------------------------

    def arm(self, op: Op, kind: Kind, nth: int = 1, *, sticky: bool = True) -> None:
        if nth < 1:
            raise ValueError("nth counts from 1")
        with self._lock:
            self._fault = _Fault(op, kind, nth, sticky)

    def disarm(self) -> int:
        """Clear the fault; returns how many calls it failed."""
        with self._lock:
            fault, self._fault = self._fault, None
        return fault.fired if fault else 0

    def close(self) -> None:
        self.disarm()
        self.unregister()

    # -- called by the files ------------------------------------------------------------

    def maybe_fail(self, op: Op) -> None:
        with self._lock:
            self.calls[op] += 1
            fault = self._fault
            if fault is None or fault.op != op:
                return
            fault.seen += 1
            if fault.seen < fault.nth or (fault.seen > fault.nth and not fault.sticky):
                return
            fault.fired += 1
        if fault.kind == "full":
            raise apsw.FullError(f"injected SQLITE_FULL on x{op.capitalize()}")
        raise apsw.IOError(f"injected SQLITE_IOERR on x{op.capitalize()}")

    # -- VFS ----------------------------------------------------------------------------

    def xOpen(self, name: Any, flags: list[int]) -> apsw.VFSFile:
        # A str, a URIFilename for main databases, or None for anonymous temporary files.
        path = name.filename() if isinstance(name, apsw.URIFilename) else name
        if isinstance(path, str) and path.startswith(self.root):
            return _FaultFile(self, name, flags)
        return apsw.VFSFile(_BASE, name, flags)


class _FaultFile(apsw.VFSFile):
    def __init__(self, vfs: FaultVFS, name: Any, flags: list[int]) -> None:
        self._vfs = vfs
        super().__init__(_BASE, name, flags)

    def xRead(self, amount: int, offset: int) -> bytes:
        self._vfs.maybe_fail("read")
        return super().xRead(amount, offset)

    def xWrite(self, data: bytes, offset: int) -> None:
        self._vfs.maybe_fail("write")
        super().xWrite(data, offset)

    def xSync(self, flags: int) -> None:
        self._vfs.maybe_fail("sync")
        super().xSync(flags)

    def xTruncate(self, newsize: int) -> None:
        self._vfs.maybe_fail("truncate")
        super().xTruncate(newsize)
