"""Records refuse bad fields with InvalidArgumentError naming the field (SPEC 4, 0.2).

Regression (issue 14, records): a bare pydantic ValidationError escaped `except
sqlmem.SqlmemError`, and lax validation stored something other than what the caller held
(`Fact(content=b"x")` became "x", `is_error="1"` became True, `created_at="2024"` became
1970-01-01T00:33:44).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from sqlmem import Fact, InvalidArgumentError, Message, SqlmemError, ToolCall

_REFUSED: dict[str, tuple[Callable[[], Any], str]] = {
    "str from bytes": (lambda: Fact(content=b"x"), "Fact.content"),
    "str from int": (lambda: Fact(content="x", source=5), "Fact.source"),
    "tag from bytes": (lambda: Fact(content="x", tags=[b"t"]), "Fact.tags.0"),
    "tags from tuple": (lambda: Fact(content="x", tags=("t",)), "Fact.tags"),
    "metadata bytes key": (lambda: Fact(content="x", metadata={b"k": 1}), "Fact.metadata"),
    "bool from str": (lambda: Message(role="user", is_error="1"), "Message.is_error"),
    "bool from int": (lambda: Message(role="user", is_error=1), "Message.is_error"),
    "int from str": (lambda: Message(role="user", seq="3"), "Message.seq"),
    "float from str": (lambda: Message(role="user", score="0.5"), "Message.score"),
    "role": (lambda: Message(role="bot"), "Message.role"),
    "tool call id int": (
        lambda: Message(role="assistant", tool_calls=[{"id": 1, "name": "f"}]),
        "Message.tool_calls.0.id",
    ),
    "tool call missing": (lambda: ToolCall(id="a"), "ToolCall.name"),
    "datetime from digits": (lambda: Fact(content="x", created_at="2024"), "Fact.created_at"),
    "datetime from int": (lambda: Message(role="user", created_at=1_700_000_000), "created_at"),
    "datetime from date": (lambda: Fact(content="x", updated_at=date(2024, 1, 1)), "updated_at"),
    "empty content": (lambda: Fact(content="  "), "Fact.content"),
    "extra field": (lambda: Fact(content="x", colour="red"), "Fact.colour"),
    "surrogate": (lambda: Message(role="user", content="\ud800"), "Message.content"),
    "model_validate": (lambda: Message.model_validate({"role": "bot"}), "Message.role"),
    "model_validate_json": (lambda: Fact.model_validate_json('{"content": 5}'), "Fact.content"),
}


@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_a_bad_field_is_an_invalid_argument_naming_it(case: str) -> None:
    build, field = _REFUSED[case]
    with pytest.raises(InvalidArgumentError) as caught:
        build()
    assert field in str(caught.value)
    assert isinstance(caught.value, (SqlmemError, ValueError))
    assert not isinstance(caught.value, ValidationError)


def test_what_is_accepted_is_kept_as_given() -> None:
    fact = Fact(content="x", tags=["b", "a"], score=1, created_at="2025-01-31T09:14:55.001Z")
    assert fact.tags == ["b", "a"] and fact.score == 1.0
    assert fact.created_at == datetime(2025, 1, 31, 9, 14, 55, 1000, tzinfo=timezone.utc)
    message = Message(role="assistant", tool_calls=[{"id": "c", "name": "f"}])
    assert message.tool_calls == [ToolCall(id="c", name="f")]
