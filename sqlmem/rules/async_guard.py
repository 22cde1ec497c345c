"""A sync helper given an async database or store fails at once, naming the async form.

Why: the sync helpers call store methods and use their results; an async store's
methods return coroutines, so a sync helper over one would fail later and obscurely
(`'coroutine' object is not iterable` inside a tool call's JSON, a never-awaited
warning). The check costs nothing when `sqlmem.aio` was never imported: no async handle
can exist then.
"""

from __future__ import annotations

import sys

from ..errors import InvalidArgumentError

__all__ = ["is_async_handle", "refuse_async"]


def is_async_handle(value: object) -> bool:
    """Whether `value` (or an item of a list or tuple of them) is a `sqlmem.aio`
    database, store or helper."""
    if isinstance(value, (list, tuple)):
        return any(is_async_handle(v) for v in value)
    kinds = sys.modules.get("sqlmem.aio.handles")
    if kinds is None:  # sqlmem.aio never loaded: nothing async exists
        return False
    return isinstance(value, kinds.ASYNC_HANDLES)


def refuse_async(value: object, helper: str, async_form: str) -> None:
    """InvalidArgumentError when `value` is async (see the module docstring)."""
    if is_async_handle(value):
        raise InvalidArgumentError(
            f"{helper} was given an async database or store ({type(value).__name__}): "
            f"use {async_form} and await it"
        )
