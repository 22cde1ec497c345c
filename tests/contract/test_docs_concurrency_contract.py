"""Documents under concurrent writers: `expected_revision` on write, edit and append, and an
edit's size worked out before its result is built. Every backend (the `make_docs` fixture)."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

import sqlmem
from sqlmem import (
    DocumentNotFoundError,
    EditMismatchError,
    InvalidArgumentError,
    MemoryTools,
    RevisionConflictError,
    SqlmemError,
)
from sqlmem.protocols import DocumentStore

MakeDocs = Callable[..., DocumentStore]


def _state(docs: DocumentStore, path: str) -> tuple[Any, ...]:
    doc = docs.read(path)
    if doc is None:
        return (None,)
    return doc.content, doc.revision, [r.revision for r in docs.revisions(path)]


def test_the_conflict_is_an_sqlmem_error_exported_from_the_package() -> None:
    assert issubclass(RevisionConflictError, SqlmemError)
    assert not issubclass(RevisionConflictError, InvalidArgumentError)
    assert sqlmem.RevisionConflictError is RevisionConflictError


def test_write_applies_only_at_the_expected_revision(docs: DocumentStore) -> None:
    first = docs.write("MEMORY.md", "one", expected_revision=0)
    assert first.created and first.revision == 1
    with pytest.raises(RevisionConflictError, match=r"MEMORY\.md"):
        docs.write("MEMORY.md", "two", expected_revision=0)  # must not exist: it does
    assert docs.write("MEMORY.md", "two", expected_revision=1).revision == 2
    before = _state(docs, "MEMORY.md")
    with pytest.raises(RevisionConflictError, match="revision 2"):
        docs.write("MEMORY.md", "stale rewrite", expected_revision=1)
    assert _state(docs, "MEMORY.md") == before  # nothing changed, no revision kept
    with pytest.raises(RevisionConflictError, match="does not exist"):
        docs.write("new.md", "x", expected_revision=3)
    assert docs.read("new.md") is None
    # flags too: nothing changes on a conflict
    with pytest.raises(RevisionConflictError):
        docs.write("MEMORY.md", "two", enabled=False, sort_order=7, expected_revision=5)
    info = docs.list()[0]
    assert info.enabled and info.sort_order == 3


def test_edit_checks_the_revision_before_anything_else(docs: DocumentStore) -> None:
    docs.write("a.md", "alpha beta")
    docs.write("a.md", "alpha beta gamma")
    before = _state(docs, "a.md")
    with pytest.raises(RevisionConflictError):  # not EditMismatchError: the revision first
        docs.edit("a.md", "not there", "x", expected_revision=1)
    with pytest.raises(RevisionConflictError):
        docs.edit("a.md", "beta", "B", expected_revision=1)
    with pytest.raises(RevisionConflictError):
        docs.edit("a.md", "", "B", expected_revision=0)  # it exists
    with pytest.raises(RevisionConflictError):
        docs.edit("missing.md", "a", "b", expected_revision=4)
    with pytest.raises(DocumentNotFoundError):
        docs.edit("missing.md", "a", "b", expected_revision=0)  # matches: then not found
    assert _state(docs, "a.md") == before
    with pytest.raises(EditMismatchError):
        docs.edit("a.md", "not there", "x", expected_revision=2)
    assert docs.edit("a.md", "beta", "B", expected_revision=2) == 1
    assert docs.read("a.md").content == "alpha B gamma"  # type: ignore[union-attr]


def test_append_applies_only_at_the_expected_revision(docs: DocumentStore) -> None:
    created = docs.append("log.md", "first", expected_revision=0)
    assert created.revision == 1 and created.content == "first"
    with pytest.raises(RevisionConflictError):
        docs.append("log.md", "again", expected_revision=0)
    with pytest.raises(RevisionConflictError):
        docs.append("other.md", "x", expected_revision=1)
    assert docs.read("other.md") is None
    assert docs.append("log.md", "second", expected_revision=1).content == "first\nsecond"
    assert docs.append("log.md", "third").revision == 3  # None: no check, as before


@pytest.mark.parametrize("bad", [-1, "1", 1.0, True])
def test_a_bad_expected_revision_is_an_invalid_argument(docs: DocumentStore, bad: Any) -> None:
    docs.write("a.md", "x")
    for call in (
        lambda: docs.write("a.md", "y", expected_revision=bad),
        lambda: docs.edit("a.md", "x", "y", expected_revision=bad),
        lambda: docs.append("a.md", "y", expected_revision=bad),
    ):
        with pytest.raises(InvalidArgumentError, match="expected_revision"):
            call()
    assert _state(docs, "a.md") == ("x", 1, [])


def test_a_huge_replace_all_is_refused_before_the_result_is_built(docs: DocumentStore) -> None:
    # 1M characters, each replaced by 200: the result would be ~200 MB. The size comes from
    # the counts, so the refusal allocates nothing near it (traced peak well under the
    # result's size; the document itself is 1 MB).
    docs.write("big.md", "a" * 1_000_000)
    gc.collect()
    tracemalloc.start()
    try:
        with pytest.raises(InvalidArgumentError, match="10 MiB"):
            docs.edit("big.md", "a", "b" * 200, replace_all=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000, peak  # the result alone would be 200,000,000 bytes
    assert _state(docs, "big.md") == ("a" * 1_000_000, 1, [])


def test_an_edit_up_to_the_limit_is_made_and_one_byte_more_refused(docs: DocumentStore) -> None:
    limit = 10 * 1024 * 1024
    docs.write("big.md", "ab" * 50 + "\u00e9" + "x" * (limit - 100 - 2 - 100))  # limit - 100
    assert docs.edit("big.md", "ab", "abc", replace_all=True) == 50  # limit - 50
    assert docs.edit("big.md", "abc", "abcd", replace_all=True) == 50  # exactly the limit
    assert docs.read("big.md").size == limit  # type: ignore[union-attr]
    with pytest.raises(InvalidArgumentError, match="10 MiB"):
        docs.edit("big.md", "\u00e9", "\u00e9!")  # one byte more
    with pytest.raises(InvalidArgumentError, match="10 MiB"):
        docs.edit("big.md", "\u00e9", "ee\u00e9")  # fewer characters than the bytes it adds
    assert docs.edit("big.md", "\u00e9", "e") == 1  # one byte less
    assert docs.read("big.md").revision == 4  # type: ignore[union-attr]


def test_memory_tools_report_a_revision_conflict_as_conflict(tmp_path: Any) -> None:
    class RacedDocs:
        """A real store whose writes find the document changed by another writer."""

        def __init__(self, docs: DocumentStore) -> None:
            self.inner = docs

        def write(self, path: str, content: str, **kwargs: Any) -> Any:
            self.inner.write(path, "changed by someone else")
            revision = self.inner.read(path).revision  # type: ignore[union-attr]
            return self.inner.write(path, content, expected_revision=revision - 1)

    with sqlmem.open(tmp_path / "m.db") as db:
        db.docs.write("MEMORY.md", "x")

        class Raced:
            docs = RacedDocs(db.docs)
            history = db.history
            facts = db.facts

            def atomic(self) -> Any:
                return db.atomic()

        tools = MemoryTools(Raced(), groups=("docs",))  # type: ignore[arg-type]
        answer = tools.call(
            "write_workspace_memory_file", {"filename": "MEMORY.md", "content": "mine"}
        )
        assert '"conflict"' in answer, answer
        assert db.docs.read("MEMORY.md").content == "changed by someone else"  # type: ignore[union-attr]


# -- export_dir checks every name before writing any file -----------------------------------


def test_export_writes_the_longest_names_write_accepts(docs: DocumentStore, tmp_path: Any) -> None:
    # Regression: the temporary name added ~18 characters to the file's, past the file
    # system's 255, so a ~240-character name failed half way through the export.
    long = "n" * 247 + ".md"  # 250 characters, a valid path
    nested = "f" * 100 + "/" + "g" * 150 + ".md"
    docs.write("a.md", "first")
    docs.write(long, "long")
    docs.write(nested, "nested")
    assert docs.export_dir(tmp_path / "out") == 3
    assert (tmp_path / "out" / long).read_text() == "long"
    assert (tmp_path / "out" / nested).read_text() == "nested"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(["a.md", long, "f" * 100])


def test_export_refuses_a_document_that_is_also_a_folder_before_writing_anything(
    docs: DocumentStore, tmp_path: Any
) -> None:
    docs.write("0-first.md", "x")
    docs.write("a.md", "file")
    docs.write("a.md/b.md", "inside")
    docs.write("z.md", "last")
    out = tmp_path / "out"
    with pytest.raises(InvalidArgumentError, match=r"'a\.md'") as raised:
        docs.export_dir(out)
    assert "no file was written" in str(raised.value)
    assert not out.exists() or list(out.rglob("*")) == []
