"""Termination signals as exceptions, so that cleanup code runs before the process ends.

SIGTERM's and SIGHUP's default action ends the process at once: no `finally`, no
`except` runs, and `sqlmem export -o` left its temporary file (a partial copy of the
memory) on disk. Inside `exceptions_on_signals()` they raise `Terminated` instead, and
SIGINT raises `KeyboardInterrupt` as Python's default handler does; the first signal
also ignores the next ones, so a second Ctrl-C cannot cut the cleanup short. A signal
the process was started ignoring (`nohup`) stays ignored.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["Terminated", "exceptions_on_signals"]

_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class Terminated(BaseException):  # not Exception: `except Exception` must let it pass
    """A termination signal arrived; `signum` says which (exit status 128 + signum)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum: int, frame: FrameType | None) -> None:
    for each in _SIGNALS:  # cleanup is short; a second signal must not interrupt it
        signal.signal(each, signal.SIG_IGN)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


@contextmanager
def exceptions_on_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise inside the block (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    previous: dict[int, Any] = {}
    try:
        for each in _SIGNALS:
            handler = signal.getsignal(each)
            if handler is not signal.SIG_IGN:
                previous[each] = handler
                signal.signal(each, _raise)
        yield
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)
