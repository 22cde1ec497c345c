"""Turning a user's path text into an absolute Path, for every place that takes one.

The database path (`sqlmem.open`) and the factory's folders follow one rule: a path that
can never work raises `InvalidArgumentError` before anything is created, and an OS refusal
a sqlmem error, never a RuntimeError or OSError (which once leaked from
over-long or looping paths).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InvalidArgumentError, map_os_error

__all__ = ["absolute_path"]


def absolute_path(text: str, name: str) -> Path:
    """`text` (a non-empty str without NUL) expanded (`~`) and made absolute."""
    try:
        # SQLite takes file names as UTF-8: a name with a lone surrogate (os.fsdecode of
        # bytes that are not UTF-8) could be created by Python but never opened by SQLite,
        # so it is refused before anything is created.
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"{name} {text!r} is not valid UTF-8 (undecodable bytes?): SQLite cannot open it"
        ) from exc
    try:
        return Path(text).expanduser().absolute()
    except RuntimeError as exc:  # "~user" of an unknown user, no home directory
        raise InvalidArgumentError(f"{name} {text!r}: {exc}") from exc
    except OSError as exc:  # the current directory was removed
        raise map_os_error(exc, text, "cannot make the path absolute") from exc
