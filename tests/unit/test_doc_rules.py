"""The document rules that only the SQLite store's incremental re-indexing uses, checked
against the plain definitions: a wrong `changed_lines` would re-index the wrong blocks
and leave stale ones searchable (the stateful test sees that too, on small documents)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sqlmem.rules import doc_blocks as documents
from sqlmem.rules.doc_blocks import changed_lines, lines_between, split_blocks

text = st.text(alphabet="ab \n\r", max_size=60)


@st.composite
def edits(draw: st.DrawFn) -> tuple[str, str]:
    old = draw(text)
    if draw(st.booleans()):
        return old, draw(text)
    i = draw(st.integers(0, len(old)))
    j = draw(st.integers(i, len(old)))
    return old, old[:i] + draw(st.text(alphabet="ab \n", max_size=8)) + old[j:]


def _prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@pytest.mark.parametrize("chunk", [3, 4096])
@given(pair=edits())
def test_changed_lines_bounds_every_difference(chunk: int, pair: tuple[str, str]) -> None:
    old, new = pair
    saved, documents._CHUNK = documents._CHUNK, chunk  # small chunks: the chunked path too
    try:
        assert documents._common_prefix(old, new) == _prefix(old, new)
        change = changed_lines(old, new)
    finally:
        documents._CHUNK = saved
    a, b = old.split("\n"), new.split("\n")
    assert a[: change.first - 1] == b[: change.first - 1]
    assert a[change.old_last :] == b[change.new_last :]
    assert change.first <= change.new_last
    for first in range(1, change.first + 1):
        for last in range(change.new_last, len(b) + 1):
            assert lines_between(new, change, first, last) == "\n".join(b[first - 1 : last])


def test_split_blocks() -> None:
    assert split_blocks("") == [] and split_blocks("\n \n\t\n") == []
    blocks = split_blocks("# T\n\na\nb\r\n  \nc")
    assert [(b.start_line, b.end_line, b.text) for b in blocks] == [
        (1, 1, "# T"),
        (3, 4, "a\nb\r"),
        (6, 6, "c"),
    ]
