"""The context helpers' whole-number settings follow one rule, the stores' own for counts:
any integer type (numpy's too), never a bool, and at least the setting's minimum; a
refusal is an `InvalidArgumentError` naming the setting."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import sqlmem
import sqlmem.inmemory
from sqlmem.errors import InvalidArgumentError


def _complete(prompt: str) -> str:
    return ""


#: (setting, its minimum, a call that builds the helper with it set to the value)
SETTINGS: list[tuple[str, int, Callable[[Any, Any], object]]] = [
    ("max_input_tokens", 1, lambda db, v: sqlmem.ContextWindow(db.history, max_input_tokens=v)),
    (
        "preserve_recent_pairs",
        1,
        lambda db, v: sqlmem.ContextWindow(db.history, preserve_recent_pairs=v),
    ),
    (
        "threshold",
        1,
        lambda db, v: sqlmem.Compactor(
            db.history, threshold=v, retain_recent=0, emergency_retain=0
        ),
    ),
    (
        "retain_recent",
        0,
        lambda db, v: sqlmem.Compactor(
            db.history, threshold=100, retain_recent=v, emergency_retain=0
        ),
    ),
    ("emergency_retain", 0, lambda db, v: sqlmem.Compactor(db.history, emergency_retain=v)),
    ("token_threshold", 1, lambda db, v: sqlmem.Compactor(db.history, token_threshold=v)),
    (
        "memory_window",
        0,
        lambda db, v: sqlmem.Consolidator(db, _complete, memory_window=v, keep_last=0),
    ),
    ("keep_last", 0, lambda db, v: sqlmem.Consolidator(db, _complete, keep_last=v)),
    ("days", 1, lambda db, v: sqlmem.consolidate_daily_notes(db, _complete, days=v)),
    ("min_messages", 0, lambda db, v: sqlmem.WorkspaceExtractor(db, _complete, min_messages=v)),
    (
        "min_user_chars",
        0,
        lambda db, v: sqlmem.WorkspaceExtractor(db, _complete, min_user_chars=v),
    ),
    (
        "max_transcript_messages",
        0,
        lambda db, v: sqlmem.WorkspaceExtractor(db, _complete, max_transcript_messages=v),
    ),
    (
        "max_input_tokens",
        1,
        lambda db, v: sqlmem.AgentMemory(db, _complete, max_input_tokens=v, extract=False),
    ),
]
IDS = [f"{i}-{name}" for i, (name, _, _) in enumerate(SETTINGS)]


@pytest.mark.parametrize(("name", "minimum", "build"), SETTINGS, ids=IDS)
def test_a_setting_takes_any_integer_type_from_its_minimum(
    name: str, minimum: int, build: Callable[[Any, Any], object]
) -> None:
    with sqlmem.inmemory.open() as db:
        build(db, minimum)
        build(db, np.int64(minimum + 5))


@pytest.mark.parametrize(("name", "minimum", "build"), SETTINGS, ids=IDS)
@pytest.mark.parametrize("value", [True, 2.0, "3", None])
def test_a_setting_refuses_what_is_not_an_integer(
    name: str, minimum: int, build: Callable[[Any, Any], object], value: object
) -> None:
    if value is None and name == "token_threshold":
        return  # None is token_threshold's "no token trigger"
    with sqlmem.inmemory.open() as db, pytest.raises(InvalidArgumentError, match=name):
        build(db, value)


@pytest.mark.parametrize(("name", "minimum", "build"), SETTINGS, ids=IDS)
def test_a_setting_refuses_a_value_below_its_minimum(
    name: str, minimum: int, build: Callable[[Any, Any], object]
) -> None:
    with sqlmem.inmemory.open() as db, pytest.raises(InvalidArgumentError, match=f">= {minimum}"):
        build(db, minimum - 1)
