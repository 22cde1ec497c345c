"""`sqlmem ui` as a real process on a free loopback port, for the end-to-end tests."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_URL = re.compile(r"(http://127\.0\.0\.1:\d+/\?token=[\w-]+)")


@contextmanager
def running_ui(target: str | Path, *options: str) -> Iterator[str]:
    """Start `sqlmem ui TARGET --port 0`, yield the token URL it prints, stop it (SIGINT,
    as Ctrl-C would) and check it exited cleanly."""
    process = subprocess.Popen(
        [sys.executable, "-m", "sqlmem", "ui", str(target), "--port", "0", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        url = None
        deadline = time.monotonic() + 60
        while url is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            found = _URL.search(line)
            url = found.group(1) if found else None
        if url is None:
            process.kill()
            raise AssertionError("sqlmem ui printed no URL (its stderr follows)")
        _wait_listening(url)
        yield url
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            _, err = process.communicate(timeout=20)  # also closes the pipes
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
    assert process.returncode in (0, -signal.SIGINT, 130), err


def _wait_listening(url: str) -> None:
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(url.split("?")[0], timeout=5):
                return
        except urllib.error.HTTPError as refused:  # it answers (403 without the token)
            refused.close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
