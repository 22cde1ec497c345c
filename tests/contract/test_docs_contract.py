"""The DocumentStore contract, run against every backend."""

from __future__ import annotations

import stat
from collections.abc import Callable
from datetime import date, datetime, timezone
from pathlib import Path

import pytest

import sqlmem
from sqlmem import DocumentNotFoundError, EditMismatchError, InvalidArgumentError
from sqlmem.protocols import DocumentStore

MakeDocs = Callable[..., DocumentStore]  # the `make_docs` fixture (conftest.py)

BAD_PATHS = [
    "../x.md",
    "a/../x.md",
    "/etc/passwd.md",
    "a\\b.md",
    ".hidden.md",
    "a/.hidden/x.md",
    "notes.txt",
    "notes.MD",
    "notes",
    ".md",
    "a//b.md",
    "a/",
    "",
    "./x.md",
    "x" * 253 + ".md",  # 256 characters
    "a\x00.md",
    "\ud800.md",
    "caf\u00e9.md",
    "x.md\n",
    " x.md",
]


def test_the_stores_are_document_stores(docs: DocumentStore) -> None:
    assert isinstance(docs, sqlmem.DocumentStore)


# -- paths and content ----------------------------------------------------------------------


@pytest.mark.parametrize("path", BAD_PATHS)
def test_a_refused_path_names_itself_and_leaves_nothing(docs: DocumentStore, path: str) -> None:
    calls = [
        lambda: docs.write(path, "x"),
        lambda: docs.read(path),
        lambda: docs.edit(path, "x", "y"),
        lambda: docs.append(path, "x"),
        lambda: docs.delete(path),
        lambda: docs.set_enabled(path, True),
        lambda: docs.set_sort_order(path, 1),
        lambda: docs.revisions(path),
        lambda: docs.read_revision(path, 1),
        lambda: docs.restore(path, 1),
    ]
    for call in calls:
        with pytest.raises(InvalidArgumentError) as caught:
            call()
        assert not isinstance(caught.value, EditMismatchError)
        assert repr(path)[:20] in str(caught.value) or len(path) > 80
    assert docs.list() == []


def test_the_longest_path_is_255_characters(docs: DocumentStore) -> None:
    path = "a/" * 100 + "x" * 52 + ".md"
    assert len(path) == 255
    docs.write(path, "deep")
    assert docs.read(path) is not None


def test_paths_that_are_allowed(docs: DocumentStore) -> None:
    for path in ("MEMORY.md", "memory/2026-01-02.md", "a.b/c-d_e.md", "x..y.md", "A/B/C.md"):
        docs.write(path, path)
        doc = docs.read(path)
        assert doc is not None and doc.content == path


def test_non_str_arguments_are_refused(docs: DocumentStore) -> None:
    with pytest.raises(InvalidArgumentError):
        docs.write(Path("a.md"), "x")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        docs.write("a.md", b"x")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        docs.write("a.md", "x", enabled=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        docs.write("a.md", "x", sort_order=True)
    with pytest.raises(InvalidArgumentError):
        docs.write("a.md", "x", sort_order=2**63)
    assert docs.list() == []


def test_content_is_any_text_up_to_10_mib(docs: DocumentStore) -> None:
    text = "ünïcödé 🐍 \x00 NUL\r\nCRLF\n\n\u2028 end"
    docs.write("a.md", text)
    doc = docs.read("a.md")
    assert doc is not None and doc.content == text and doc.size == len(text.encode())
    docs.write("big.md", "x" * (10 * 1024 * 1024))
    with pytest.raises(InvalidArgumentError, match="10 MiB"):
        docs.write("too-big.md", "x" * (10 * 1024 * 1024 + 1))
    with pytest.raises(InvalidArgumentError, match="10 MiB"):
        docs.write("too-big.md", "é" * (5 * 1024 * 1024 + 1))  # 2 bytes each
    with pytest.raises(InvalidArgumentError, match="surrogate"):
        docs.write("bad.md", "a\ud800b")
    assert [i.path for i in docs.list()] == ["a.md", "big.md"]


def test_an_edit_or_append_past_the_limit_changes_nothing(docs: DocumentStore) -> None:
    docs.write("a.md", "x" * (10 * 1024 * 1024 - 2))
    with pytest.raises(InvalidArgumentError, match="10 MiB"):
        docs.append("a.md", "abc")
    with pytest.raises(InvalidArgumentError, match="10 MiB"):
        docs.edit("a.md", "xx", "yyy", replace_all=True)
    doc = docs.read("a.md")
    assert doc is not None and doc.revision == 1


def test_doc_revisions_is_checked() -> None:
    assert sqlmem.StoreConfig().doc_revisions == 50
    with pytest.raises(InvalidArgumentError, match="doc_revisions"):
        sqlmem.StoreConfig(doc_revisions=-1)


# -- write and read -------------------------------------------------------------------------


def test_write_creates_with_the_defaults_of_spec_14(docs: DocumentStore) -> None:
    names = ["AGENTS.md", "SOUL.md", "PROFILE.md", "MEMORY.md", "HISTORY.md", "x/MEMORY.md"]
    for name in names:
        done = docs.write(name, "text")
        assert done == sqlmem.DocumentWrite(
            path=name, created=True, overwritten=False, bytes=4, revision=1
        )
    flags = {i.path: (i.enabled, i.sort_order) for i in docs.list()}
    assert flags == {
        "AGENTS.md": (True, 0),
        "SOUL.md": (True, 1),
        "PROFILE.md": (True, 2),
        "MEMORY.md": (True, 3),
        "HISTORY.md": (False, 100),
        "x/MEMORY.md": (False, 100),
    }
    assert [i.path for i in docs.list()] == [*names[:4], "HISTORY.md", "x/MEMORY.md"]


def test_a_document_reads_back_whole(docs: DocumentStore) -> None:
    before = datetime.now(timezone.utc).replace(microsecond=0)
    docs.write("notes/a.md", "héllo", enabled=True, sort_order=-5)
    doc = docs.read("notes/a.md")
    assert doc is not None
    assert (doc.path, doc.content, doc.enabled, doc.sort_order, doc.revision, doc.size) == (
        "notes/a.md",
        "héllo",
        True,
        -5,
        1,
        6,
    )
    assert doc.created_at == doc.updated_at >= before
    assert doc.created_at.tzinfo is not None
    assert docs.read("notes/b.md") is None
    info = docs.list()[0]
    assert info.model_dump() == {k: v for k, v in doc.model_dump().items() if k != "content"}


def test_identical_content_changes_nothing(docs: DocumentStore) -> None:
    docs.write("MEMORY.md", "same")
    first = docs.read("MEMORY.md")
    done = docs.write("MEMORY.md", "same")
    assert (done.created, done.overwritten, done.revision, done.bytes) == (False, False, 1, 4)
    assert docs.read("MEMORY.md") == first
    assert docs.revisions("MEMORY.md") == []


def test_flags_are_kept_unless_given(docs: DocumentStore) -> None:
    docs.write("a.md", "1", enabled=True, sort_order=7)
    docs.write("a.md", "2")
    doc = docs.read("a.md")
    assert doc is not None and (doc.enabled, doc.sort_order, doc.revision) == (True, 7, 2)
    done = docs.write("a.md", "2", enabled=False, sort_order=3)  # same content, new flags
    assert not done.overwritten and done.revision == 2
    doc = docs.read("a.md")
    assert doc is not None and (doc.enabled, doc.sort_order, doc.revision) == (False, 3, 2)


def test_overwrite_counts_a_revision(docs: DocumentStore) -> None:
    docs.write("a.md", "one")
    done = docs.write("a.md", "two!")
    assert (done.created, done.overwritten, done.revision, done.bytes) == (False, True, 2, 4)


# -- edit and append ------------------------------------------------------------------------


def test_edit_replaces_exact_text(docs: DocumentStore) -> None:
    docs.write("a.md", "The cat sat. The cat ran.")
    assert docs.edit("a.md", "sat", "slept") == 1
    assert docs.edit("a.md", "cat", "dog", replace_all=True) == 2
    doc = docs.read("a.md")
    assert doc is not None and doc.content == "The dog slept. The dog ran." and doc.revision == 3


def test_edit_says_how_many_times_it_found_the_text(docs: DocumentStore) -> None:
    docs.write("a.md", "x x x")
    with pytest.raises(EditMismatchError, match="3 times"):
        docs.edit("a.md", "x", "y")
    with pytest.raises(EditMismatchError, match="0 times"):
        docs.edit("a.md", "z", "y")
    with pytest.raises(EditMismatchError, match="empty"):
        docs.edit("a.md", "", "y")
    assert isinstance(EditMismatchError("m"), InvalidArgumentError)
    with pytest.raises(DocumentNotFoundError):
        docs.edit("b.md", "x", "y")
    with pytest.raises(KeyError):
        docs.edit("b.md", "x", "y")
    doc = docs.read("a.md")
    assert doc is not None and doc.content == "x x x" and doc.revision == 1


def test_an_edit_to_the_same_text_keeps_the_revision(docs: DocumentStore) -> None:
    docs.write("a.md", "abc")
    assert docs.edit("a.md", "b", "b") == 1
    doc = docs.read("a.md")
    assert doc is not None and doc.revision == 1


def test_append_adds_a_line(docs: DocumentStore) -> None:
    doc = docs.append("HISTORY.md", "first")
    assert (doc.content, doc.revision, doc.enabled, doc.sort_order) == ("first", 1, False, 100)
    assert docs.append("HISTORY.md", "second").content == "first\nsecond"
    docs.write("b.md", "ends with newline\n")
    assert docs.append("b.md", "next").content == "ends with newline\nnext"
    assert docs.append("MEMORY.md", "x").enabled  # created with the defaults
    stored = docs.read("HISTORY.md")
    assert stored is not None and stored.content == "first\nsecond" and stored.revision == 2


def test_append_daily(docs: DocumentStore) -> None:
    day = date(2026, 3, 4)
    doc = docs.append_daily("ran 5 km", day=day)
    assert doc.path == "memory/2026-03-04.md"
    assert doc.content == "# 2026-03-04\n\nran 5 km"
    assert docs.append_daily("swam", day=day).content == "# 2026-03-04\n\nran 5 km\nswam"
    today = datetime.now(timezone.utc).date()
    assert docs.append_daily("now").path == f"memory/{today.isoformat()}.md"
    with pytest.raises(InvalidArgumentError):
        docs.append_daily("x", day="2026-01-01")  # type: ignore[arg-type]


# -- delete, list, flags --------------------------------------------------------------------


def test_delete_removes_the_document_and_its_revisions(docs: DocumentStore) -> None:
    docs.write("a.md", "one")
    docs.write("a.md", "two")
    docs.delete("a.md")
    assert docs.read("a.md") is None
    with pytest.raises(DocumentNotFoundError):
        docs.revisions("a.md")
    with pytest.raises(DocumentNotFoundError):
        docs.delete("a.md")
    assert docs.write("a.md", "three").revision == 1
    assert docs.revisions("a.md") == []
    with pytest.raises(DocumentNotFoundError):
        docs.read_revision("a.md", 1 + 1)


def test_list_by_prefix_in_sort_order(docs: DocumentStore) -> None:
    for path in ("memory/b.md", "memory/a.md", "MEMORY.md", "memoryx.md", "z.md"):
        docs.write(path, "x")
    docs.set_sort_order("z.md", -1)
    assert [i.path for i in docs.list()] == [
        "z.md",
        "MEMORY.md",
        "memory/a.md",
        "memory/b.md",
        "memoryx.md",
    ]
    assert [i.path for i in docs.list("memory/")] == ["memory/a.md", "memory/b.md"]
    assert [i.path for i in docs.list(prefix="memory")] == [
        "memory/a.md",
        "memory/b.md",
        "memoryx.md",
    ]
    assert docs.list("%") == [] and docs.list("nothing") == []
    with pytest.raises(InvalidArgumentError):
        docs.list(None)  # type: ignore[arg-type]


def test_set_enabled_and_sort_order(docs: DocumentStore) -> None:
    docs.write("a.md", "x")
    docs.set_enabled("a.md", True)
    docs.set_sort_order("a.md", 42)
    doc = docs.read("a.md")
    assert doc is not None and (doc.enabled, doc.sort_order, doc.revision) == (True, 42, 1)
    for call in (lambda: docs.set_enabled("b.md", True), lambda: docs.set_sort_order("b.md", 1)):
        with pytest.raises(DocumentNotFoundError):
            call()
    with pytest.raises(InvalidArgumentError):
        docs.set_enabled("a.md", 1)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        docs.set_sort_order("a.md", "1")  # type: ignore[arg-type]


# -- revisions ------------------------------------------------------------------------------


def test_revisions_keep_previous_contents(docs: DocumentStore) -> None:
    for text in ("one", "two2", "three"):
        docs.write("MEMORY.md", text)
    kept = docs.revisions("MEMORY.md")
    assert [(r.revision, r.size) for r in kept] == [(2, 4), (1, 3)]
    assert kept[0].updated_at >= kept[1].updated_at
    assert docs.read_revision("MEMORY.md", 1) == "one"
    assert docs.read_revision("MEMORY.md", 2) == "two2"
    assert docs.read_revision("MEMORY.md", 3) == "three"  # the current one
    with pytest.raises(DocumentNotFoundError, match="revision 9"):
        docs.read_revision("MEMORY.md", 9)
    done = docs.restore("MEMORY.md", 1)
    assert (done.overwritten, done.revision, done.bytes) == (True, 4, 3)
    doc = docs.read("MEMORY.md")
    assert doc is not None and doc.content == "one"
    assert [r.revision for r in docs.revisions("MEMORY.md")] == [3, 2, 1]
    assert not docs.restore("MEMORY.md", 4).overwritten  # identical: nothing changes
    with pytest.raises(DocumentNotFoundError):
        docs.restore("nope.md", 1)


def test_revisions_are_pruned_to_doc_revisions(make_docs: MakeDocs) -> None:
    docs = make_docs(doc_revisions=2)
    for n in range(1, 6):
        docs.write("a.md", f"v{n}")
    assert [r.revision for r in docs.revisions("a.md")] == [4, 3]
    with pytest.raises(DocumentNotFoundError, match="pruned"):
        docs.read_revision("a.md", 2)
    none = make_docs(doc_revisions=0)
    none.write("a.md", "1")
    none.write("a.md", "2")
    assert none.revisions("a.md") == [] and none.read("a.md").revision == 2  # type: ignore[union-attr]


def test_the_default_keeps_50(docs: DocumentStore) -> None:
    for n in range(53):
        docs.write("a.md", str(n))
    kept = [r.revision for r in docs.revisions("a.md")]
    assert kept == list(range(52, 2, -1))


# -- search ---------------------------------------------------------------------------------


def test_search_finds_blocks_with_their_lines(docs: DocumentStore) -> None:
    docs.write("MEMORY.md", "# Memory\n\nThe user's dog is Rex.\nHe likes walks.\n\n\nCats: none\n")
    docs.write("notes/b.md", "nothing here\n\ndog food brand: Acme")
    hits = docs.search("dog walks")
    assert [(h.path, h.start_line, h.end_line) for h in hits] == [
        ("MEMORY.md", 3, 4),
        ("notes/b.md", 3, 3),
    ]
    assert hits[0].text == "The user's dog is Rex.\nHe likes walks."
    assert hits[0].score > hits[1].score
    assert [h.path for h in docs.search("dog", prefix="notes/")] == ["notes/b.md"]
    assert docs.search("dog", top_k=1) == docs.search("dog")[:1]
    assert docs.search("dog")[0].path == "notes/b.md"  # the shorter block ranks first
    assert docs.search("dog", top_k=0) == [] and docs.search("dog", top_k=-1) == []
    assert docs.search("cats")[0].start_line == 7


def test_search_takes_any_text(docs: DocumentStore) -> None:
    text = 'C++ AND OR NOT NEAR(x) "quoted" what\'s 用户喜欢周日早上跑步 我喜欢Python编程'
    docs.write("a.md", text)
    for query in ('"', "NEAR(", "AND", "*", "a:b", "🐍", "x" * 10_000, "what's", "\ud800", ""):
        docs.search(query)
    assert [h.path for h in docs.search("跑步")] == ["a.md"]
    assert [h.path for h in docs.search("python")] == ["a.md"]
    assert docs.search("...") == []
    with pytest.raises(InvalidArgumentError):
        docs.search(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        docs.search("x", top_k="1")  # type: ignore[arg-type]


def test_search_forgets_replaced_and_deleted_text(docs: DocumentStore) -> None:
    docs.write("a.md", "alpha\n\nbeta")
    docs.edit("a.md", "alpha", "gamma")
    assert docs.search("alpha") == []
    found = {(h.start_line, h.text) for h in docs.search("gamma beta")}
    assert found == {(1, "gamma"), (3, "beta")}
    docs.edit("a.md", "gamma", "gamma\nline\n\nnew")  # beta moves down 3 lines
    assert [(h.start_line, h.end_line) for h in docs.search("beta")] == [(6, 6)]
    assert [(h.start_line, h.end_line) for h in docs.search("line")] == [(1, 2)]
    docs.delete("a.md")
    assert docs.search("beta") == [] and docs.search("gamma") == []


def test_a_long_query_keeps_its_rarest_words(docs: DocumentStore) -> None:
    docs.write("a.md", "zebra")
    words = " ".join(f"w{i}" for i in range(100))
    docs.write("b.md", f"{words}\n\n{words}")  # two blocks: commoner than zebra
    query = " ".join(f"w{i}" for i in range(100)) + " zebra"
    assert {h.path for h in docs.search(query)} == {"a.md", "b.md"}


# -- the prompt blocks ----------------------------------------------------------------------


def test_render_files(docs: DocumentStore) -> None:
    assert docs.render_files() == ""
    docs.write("MEMORY.md", "remember\n")
    docs.write("AGENTS.md", "be kind")
    docs.write("notes.md", "hidden")
    docs.write("extra.md", "shown", enabled=True, sort_order=1)
    assert docs.render_files() == (
        "--- AGENTS.md ---\nbe kind\n\n--- extra.md ---\nshown\n\n--- MEMORY.md ---\nremember\n\n"
    )
    docs.set_enabled("AGENTS.md", False)
    docs.set_enabled("MEMORY.md", False)
    assert docs.render_files() == "--- extra.md ---\nshown\n"


def test_render_memory_context(docs: DocumentStore) -> None:
    today = date(2026, 5, 10)
    assert docs.render_memory_context(today=today) == ""
    docs.write("MEMORY.md", "User: Ana\n")
    assert docs.render_memory_context(today=today) == "## Long-term Memory\nUser: Ana\n"
    docs.append_daily("ran", day=today)
    docs.append_daily("rested", day=date(2026, 5, 9))
    docs.append_daily("worked", day=date(2026, 5, 7))
    docs.append_daily("too old", day=date(2026, 5, 2))
    docs.append_daily("future", day=date(2026, 5, 11))
    docs.write("memory/2026-05-08.md", "# 2026-05-08\n\n")  # nothing but the heading
    assert docs.render_memory_context(today=today) == (
        "## Long-term Memory\nUser: Ana\n\n"
        "## Today's Notes\nran\n\n"
        "## Recent Context\n### 2026-05-09\nrested\n\n### 2026-05-07\nworked\n"
    )
    assert docs.render_memory_context(today=today, recent_days=1) == (
        "## Long-term Memory\nUser: Ana\n\n## Today's Notes\nran\n\n"
        "## Recent Context\n### 2026-05-09\nrested\n"
    )
    assert docs.render_memory_context(today=today, recent_days=8).count("###") == 3
    docs.delete("MEMORY.md")
    assert docs.render_memory_context(today=date(2026, 5, 3), recent_days=0) == ""
    assert docs.render_memory_context(today=date(2026, 5, 2)) == "## Today's Notes\ntoo old\n"
    with pytest.raises(InvalidArgumentError):
        docs.render_memory_context(recent_days=-1)


def test_recent_days_follows_the_integer_rule_of_every_count(make_docs: MakeDocs) -> None:
    """Any integer type, never a bool or a numeric string; a huge count reads every day."""
    docs = make_docs()
    docs.append_daily("long ago", day=date(1000, 1, 1))
    today = date(2026, 5, 10)
    for bad in (True, "3", 2.0, None):
        with pytest.raises(InvalidArgumentError, match="recent_days must be an integer"):
            docs.render_memory_context(today=today, recent_days=bad)
    assert "long ago" in docs.render_memory_context(today=today, recent_days=10**30)
    assert docs.render_memory_context(today=today, recent_days=_Index(0)) == ""


class _Index:
    """An integer type that is not int (numpy's are such), usable through `__index__`."""

    def __init__(self, value: int) -> None:
        self._value = value

    def __index__(self) -> int:
        return self._value


# -- folder sync ----------------------------------------------------------------------------


def test_export_and_import_a_folder(make_docs: MakeDocs, tmp_path: Path) -> None:
    docs = make_docs()
    docs.write("MEMORY.md", "remember")
    docs.write("memory/2026-01-01.md", "# 2026-01-01\n\nnote ü")
    folder = tmp_path / "new" / "out"
    assert docs.export_dir(folder) == 2
    assert (folder / "memory" / "2026-01-01.md").read_text("utf-8") == "# 2026-01-01\n\nnote ü"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder.parent).stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "memory").stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "MEMORY.md").stat().st_mode) == 0o600
    (folder / "MEMORY.md").write_text("remember more", "utf-8")
    (folder / "PROFILE.md").write_text("name: Ana", "utf-8")
    (folder / "notes.txt").write_text("not markdown", "utf-8")
    (folder / ".hidden.md").write_text("hidden", "utf-8")
    (folder / "bad name.md").write_text("space", "utf-8")
    (folder / "latin1.md").write_bytes(b"caf\xe9")
    done = docs.import_dir(folder)
    assert done == sqlmem.DocumentImport(created=1, updated=1, unchanged=1, skipped=4)
    memory = docs.read("MEMORY.md")
    assert memory is not None and memory.content == "remember more" and memory.revision == 2
    profile = docs.read("PROFILE.md")
    assert profile is not None and profile.enabled and profile.sort_order == 2
    other = make_docs()
    assert other.import_dir(folder).created == 3
    assert other.import_dir(folder) == sqlmem.DocumentImport(
        created=0, updated=0, unchanged=3, skipped=4
    )
    with pytest.raises(sqlmem.SqlmemError):
        other.import_dir(tmp_path / "missing")
