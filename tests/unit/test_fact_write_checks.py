"""The write path's quick checks of a fact (categories already seen, empty metadata)
refuse whatever a record mutated after construction holds, as the full checks do, with
the same error naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from sqlmem import Fact


class _Text(str):
    """A str subclass: checked each time, never taken from the checked-categories set."""


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("category", ["area"]),  # unhashable: refused, not a TypeError
        ("category", "a//b"),
        ("category", _Text("a//b")),
        ("category", 7),
        ("tags", ("t",)),
        ("tags", ["t", 1]),
        ("metadata", {1: "x"}),
        ("metadata", []),
    ],
)
def test_a_mutated_field_is_refused_after_valid_ones(field: str, value: Any) -> None:
    """The write path's quick checks (categories seen before, empty metadata) still
    refuse whatever a record mutated after construction holds."""
    from sqlmem.errors import InvalidArgumentError
    from sqlmem.rules.filters import prepare_fact

    prepare_fact(Fact(id="ok", content="fine", category="a/b", tags=["t"], metadata={"k": 1}))
    bad = Fact(id="bad", content="fine", category="a/b", tags=["t"])
    setattr(bad, field, value)
    with pytest.raises(InvalidArgumentError, match=f"Fact.{field}"):
        prepare_fact(bad)
    kept = Fact(id="kept", content="fine", category=_Text("a/b"))
    assert prepare_fact(kept).category == "a/b"
