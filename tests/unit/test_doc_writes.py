"""The decisions of a document write (`sqlmem.rules.doc_writes`), which every backend's
port executes: what a write changes, and the import merge."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sqlmem.rules.doc_writes import Stored, merge_imported_document, plan_put


@given(st.booleans(), st.integers(0, 3), st.sampled_from(["old", "new"]), st.integers(0, 3))
def test_a_write_makes_a_revision_only_when_the_content_changes(
    enabled: bool, order: int, content: str, keep: int
) -> None:
    stored = Stored(True, 0, 7, 100, 200, 3, "old")
    put = plan_put("a.md", stored, content, enabled, order, 300, keep)
    changed = content != "old"
    assert (put.created, put.overwritten) == (False, changed)
    assert (put.enabled, put.sort_order) == (enabled, order)
    assert put.revision == (8 if changed else 7)
    assert put.updated_ms == (300 if changed else 200) and put.created_ms == 100
    assert put.flags_changed == (not changed and (enabled, order) != (True, 0))
    assert put.keep_previous == (changed and keep > 0)
    if changed:
        assert put.prune_below == 8 - keep


def test_a_new_document_takes_its_paths_defaults() -> None:
    put = plan_put("MEMORY.md", None, "x", None, None, 5, 50)
    assert (put.created, put.revision, put.created_ms, put.updated_ms) == (True, 1, 5, 5)
    assert put.enabled  # a prompt file is enabled when created


@given(
    st.integers(1, 60),
    st.integers(0, 10**6),
    st.integers(1, 60),
    st.integers(0, 10**6),
    st.booleans(),
    st.integers(0, 5),
)
def test_an_imported_document_replaces_only_a_staler_one_and_loses_nothing(
    stored: int, stored_ms: int, revision: int, updated_ms: int, same: bool, keep: int
) -> None:
    """The import merge every backend runs (`rules.doc_writes`): applied twice, the second
    changes nothing; a replaced content is kept as the revision it was."""
    content = "old" if same else "new"
    merge = merge_imported_document(stored, stored_ms, "old", revision, updated_ms, content, keep)
    assert merge.replaces == ((revision, updated_ms) > (stored, stored_ms))
    if not merge.replaces:
        return
    assert merge.revision > stored or (merge.revision == revision and same)
    assert merge.keep_current == (keep > 0 and merge.revision > stored)
    again = merge_imported_document(
        merge.revision, updated_ms, content, revision, updated_ms, content, keep
    )
    assert not again.replaces
    if not same and revision <= stored:  # same number, other content: the next one
        assert merge.revision == stored + 1
