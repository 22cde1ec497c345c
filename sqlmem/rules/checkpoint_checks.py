"""The arguments of a checkpoint port, checked alike on every backend."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgumentError
from .checks import check_text

__all__ = ["PRUNE_STRATEGIES", "check_search", "check_strategy", "checked_key", "texts"]

PRUNE_STRATEGIES = ("keep_latest", "delete")


def check_search(
    thread_id: str | None, ns: str | None, checkpoint_id: str | None, before: str | None
) -> None:
    for value, name in (
        (thread_id, "thread_id"),
        (ns, "checkpoint_ns"),
        (checkpoint_id, "checkpoint_id"),
        (before, "before"),
    ):
        if value is not None:
            check_text(value, name)


def check_strategy(strategy: str) -> None:
    if strategy not in PRUNE_STRATEGIES:
        raise InvalidArgumentError(
            f"prune: strategy must be one of {PRUNE_STRATEGIES}, got {strategy!r}"
        )


def checked_key(key: tuple[str, str, str]) -> tuple[str, str, str]:
    thread_id, ns, checkpoint_id = key
    return (
        check_text(thread_id, "thread_id"),
        check_text(ns, "checkpoint_ns"),
        check_text(checkpoint_id, "checkpoint_id"),
    )


def texts(values: Any, name: str) -> list[str]:
    if isinstance(values, (str, bytes)):
        raise InvalidArgumentError(f"{name} must be a sequence of str, not one string")
    try:
        items = list(values)
    except TypeError as exc:
        raise InvalidArgumentError(f"{name} must be a sequence of str") from exc
    return [check_text(v, f"{name}[{i}]") for i, v in enumerate(items)]
