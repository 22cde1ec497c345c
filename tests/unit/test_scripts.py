"""One table of no-space scripts (sqlmem.search.scripts) for search and token budgets.

Regression: the query compiler and the token estimator each kept a copy of these ranges,
and the copies drifted apart in four places (issue 14). The segmented ranges are part of
every stored index, so they are pinned here: changing one needs a migration, not an edit.
"""

from __future__ import annotations

from itertools import pairwise

import pytest

from sqlmem.context.tokens import estimate_tokens
from sqlmem.search.query import segment
from sqlmem.search.scripts import SCRIPTS, ScriptRange

#: What every file indexed so far was segmented with (sqlmem 0.1).
INDEXED_WITH = [
    (0x0E00, 0x0EFF),
    (0x1000, 0x109F),
    (0x1780, 0x17FF),
    (0x2E80, 0x2FDF),
    (0x3040, 0x30FF),
    (0x3100, 0x312F),
    (0x3130, 0x318F),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x3134F),
]


def test_the_segmented_ranges_are_those_of_the_stored_indexes() -> None:
    assert [(ord(r.first), ord(r.last)) for r in SCRIPTS if r.segmented] == INDEXED_WITH


def test_the_table_is_ordered_and_without_overlap() -> None:
    bounds = [(ord(r.first), ord(r.last)) for r in SCRIPTS]
    assert all(first <= last for first, last in bounds)
    assert all(a[1] < b[0] for a, b in pairwise(bounds))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda r: r.name)
def test_both_rules_read_the_table(script: ScriptRange) -> None:
    """Each range's ends: segmented by search exactly when the table says so, and
    counted one token each by the estimator in every case."""
    for char in (script.first, script.last):
        assert (segment(f"a{char}b") is not None) == script.segmented
        assert estimate_tokens(char * 8) == 8
