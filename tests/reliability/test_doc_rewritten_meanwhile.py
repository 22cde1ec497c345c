"""A large document write cuts its blocks from a read taken before the write lock. If the
document is deleted and written again in between, it can be back at the very revision
number that read saw, with other content: the blocks cut from the first read would then
be applied to the wrong content, leaving the search index out of step with the document.
The write must notice the content changed, not only the number, and cut again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import sqlmem
from sqlmem.sqlite.stores.doc_index import prepare_from


def _paragraphs(word: str, n: int) -> str:
    return "\n\n".join(f"{word} paragraph {i} " + "filler " * 12 for i in range(n))


def test_a_document_rewritten_at_the_same_revision_is_indexed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = sqlmem.open(tmp_path / "a.db")
    try:
        first = _paragraphs("alpha", 800)  # about 80 KB: past the small-document path
        assert len(first.encode()) > 64 * 1024
        db.docs.write("a.md", first)
        wanted = first.replace("alpha paragraph 400 ", "omega paragraph 400 ")
        rewritten = _paragraphs("zulu", 800)
        meddled = False

        def prepare_then_meddle(*args: Any, **kwargs: Any) -> Any:
            nonlocal meddled
            prepared = prepare_from(*args, **kwargs)
            if not meddled:  # another writer, between the read and the write lock
                meddled = True
                db.docs.delete("a.md")
                assert db.docs.write("a.md", rewritten).revision == 1
            return prepared

        monkeypatch.setattr("sqlmem.sqlite.stores.docs.prepare_from", prepare_then_meddle)
        done = db.docs.write("a.md", wanted)
        assert meddled
        assert (done.revision, db.docs.read("a.md").content) == (2, wanted)  # type: ignore[union-attr]
        assert db.docs.search("zulu") == []  # nothing of the replaced content stays indexed
        hits = db.docs.search("alpha paragraph 399", top_k=1)
        assert [(h.start_line, h.text.split()[:3]) for h in hits] == [
            (799, ["alpha", "paragraph", "399"])
        ]
        assert [h.text.split()[:3] for h in db.docs.search("omega")] == [
            ["omega", "paragraph", "400"]
        ]
        assert db.check().ok
    finally:
        db.close()
