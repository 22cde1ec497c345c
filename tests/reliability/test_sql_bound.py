"""SQL stays bound: user values travel as bindings, never inside SQL text.

Two independent checks:

1. Statically, every `execute` / `executemany` / `pragma` call in `sqlmem/` gets its SQL
   from a string literal, a module constant, a cached shape-only builder (its parameters
   are ints, bools or filter keys, never text), or one of a few reviewed dynamic pieces
   listed below with the reason each is safe. Module constants built with f-strings
   interpolate only other module constants. No `%` or `.format()` builds SQL. A new
   dynamic statement fails this test until it is reviewed and listed.
2. Dynamically, an exec tracer installed on every connection (`apsw.connection_hooks`)
   records every statement SQLite prepares while hypothesis drives every public entry
   point with hostile strings; each string carries a unique marker, and no marker may ever
   appear in SQL text.
"""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterator
from contextlib import suppress
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlmem
from sqlmem import Fact, InvalidArgumentError, Message

PACKAGE = Path(sqlmem.__file__).resolve().parent

# -- 1. static -----------------------------------------------------------------------------

_CONSTANT = re.compile(r"_?[A-Z][A-Z0-9_]*\Z")
_SQL_WORD = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|PRAGMA|CREATE|DROP|ALTER|WHERE)\b")

#: (file, unparsed first argument) -> why it is safe. Reviewed by hand.
REVIEWED_DYNAMIC = {
    ("maintenance.py", "f\"INSERT INTO {table}({table}) VALUES ('optimize')\""): (
        "table iterates the module constant _FTS_TABLES"
    ),
    ("maintenance.py", "f\"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)\""): (
        "table iterates the module constant _FTS_TABLES"
    ),
    ("fts_any.py", "queries.averages"): (
        "an AnyQueries field: built once at import by fts_any.any_queries() from module "
        "constants (the FTS table name and the store's column list), no value inside"
    ),
    ("fts_any.py", "self.queries.phrase_docs"): (
        "an AnyQueries field: built once at import by fts_any.any_queries() from module "
        "constants (the FTS table name and the store's column list), no value inside"
    ),
    ("fts_any.py", "self.queries.vocabulary"): (
        "an AnyQueries field: built once at import by fts_any.any_queries() from module "
        "constants (the FTS table name and the store's column list), no value inside"
    ),
    ("file_open.py", "statement"): (
        "iterates the module constant READER_TEMP_TABLES, built at import by "
        "fts_any.vocabulary_table() from the literal FTS table names"
    ),
    ("fts_any.py", "queries.token_docs"): (
        "an AnyQueries field: built once at import by fts_any.any_queries() from module "
        "constants (the FTS table name), no value inside; the tokens are one bound JSON array"
    ),
    ("fts_any.py", "q.bm25"): (
        "an AnyQueries field: built once at import by fts_any.any_queries() from module "
        "constants (the FTS table name and the store's column list), no value inside"
    ),
    ("migrations.py", "f'PRAGMA user_version = {int(migration.version)}'"): (
        "an int from our own migration plan; PRAGMA cannot take a binding"
    ),
    ("migrations.py", "migration.sql.replace('{tokenizer}', tokenizer)"): (
        "schema text from our own files; the tokenizer is StoreConfig-validated and "
        "re-checked against a strict pattern just before"
    ),
    ("migrations.py", "migration.sql.encode('utf-8')"): (
        "sqlmem.postgres: schema text from our own files (migrations/postgres), as bytes"
    ),
}

#: Interpolations allowed in f-string SQL, per file: savepoint names are built from ints.
REVIEWED_NAMES = {
    "writer.py": {"name", "savepoint", "self._savepoint"},
}

#: Local variables passed to execute(), per (file, variable): assigned from a builder.
REVIEWED_LOCALS = {
    ("facts.py", "text"): "list_sql.list_sql(...), a shape-only builder",
    ("facts.py", "window"): "list_sql.list_sql(..., window=True), a shape-only builder",
    ("facts.py", "statement"): "_SEARCH_UNFILTERED or sql.search_sql(...), shape-only",
    ("history.py", "query"): "sql.READ_ALL or sql.READ_ALL_ACTIVE",
    ("vectors.py", "statement"): "sql.candidates_sql(...), a shape-only builder",
}

_SHAPE_ANNOTATIONS = {"int", "bool", "FilterKey", "ItemKey", "tuple[bool, ...]", "FactState"}


def _sources() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _builders() -> dict[str, ast.FunctionDef]:
    """Every function whose name ends in `_sql`: the SQL builders."""
    found: dict[str, ast.FunctionDef] = {}
    for _, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_sql"):
                found[node.name] = node
    return found


def _terminal_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _sql_argument_problem(path: Path, arg: ast.expr, builders: set[str]) -> str | None:
    source = ast.unparse(arg)
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return None
    if (path.name, source) in REVIEWED_DYNAMIC:
        return None
    name = _terminal_name(arg)
    if name is not None and _CONSTANT.match(name):
        return None
    if isinstance(arg, ast.Name) and (path.name, arg.id) in REVIEWED_LOCALS:
        return None
    if isinstance(arg, ast.Call) and _terminal_name(arg.func) in builders:
        return None
    if isinstance(arg, ast.IfExp):
        for branch in (arg.body, arg.orelse):
            problem = _sql_argument_problem(path, branch, builders)
            if problem:
                return problem
        return None
    if isinstance(arg, ast.JoinedStr):
        allowed = REVIEWED_NAMES.get(path.name, set())
        for part in arg.values:
            if isinstance(part, ast.FormattedValue):
                inner = ast.unparse(part.value)
                if inner not in allowed and not inner.startswith("int("):
                    return f"f-string interpolates {inner!r}"
        return None
    return f"SQL from {source!r}"


def _enclosing_functions(tree: ast.Module) -> dict[ast.AST, ast.FunctionDef]:
    found: dict[ast.AST, ast.FunctionDef] = {}
    for func in ast.walk(tree):
        if isinstance(func, ast.FunctionDef):
            for node in ast.walk(func):
                found[node] = func  # inner functions overwrite: walk visits them later
    return found


def _passed_through(
    path: Path, tree: ast.Module, func: ast.FunctionDef, param: str, builders: set[str]
) -> str | None:
    """SQL that arrives as a parameter of a module function (`_run(conn, text, params)`):
    vetted when every call of that function in the module passes vetted SQL."""
    names = [a.arg for a in func.args.args]
    index = names.index(param)
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _terminal_name(node.func) == func.name
    ]
    if not calls:
        return f"{func.name}({param}) is never called with SQL we can see"
    for call in calls:
        if len(call.args) <= index:
            return f"{func.name} called without positional {param}"
        problem = _sql_argument_problem(path, call.args[index], builders)
        if problem:
            return f"{func.name}(..., {param}=...): {problem}"
    return None


def test_every_execute_gets_vetted_sql() -> None:
    builders = set(_builders())
    problems = []
    calls = 0
    for path, tree in _sources():
        enclosing = _enclosing_functions(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("execute", "executemany", "pragma")
                and node.args
            ):
                calls += 1
                arg = node.args[0]
                problem = _sql_argument_problem(path, arg, builders)
                func = enclosing.get(node)
                if (
                    problem
                    and isinstance(arg, ast.Name)
                    and func is not None
                    and arg.id in [a.arg for a in func.args.args]
                ):
                    problem = _passed_through(path, tree, func, arg.id, builders)
                if problem:
                    problems.append(f"{path.name}:{node.lineno}: {problem}")
    assert calls > 40  # the scan sees the package (it would pass vacuously otherwise)
    assert not problems, "\n".join(problems)


def test_sql_builders_take_only_shapes() -> None:
    """A builder's text depends on how many rows / which filters, never on a value."""
    builders = _builders()
    assert {"search_sql", "list_sql", "upsert_sql", "insert_messages_sql"} <= set(builders)
    # every builder, also those of the same name in another backend (_builders keeps one)
    every = [
        node
        for _, tree in _sources()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name.endswith("_sql")
    ]
    assert len(every) > len(builders)
    for func in every:
        name = func.name
        for arg in func.args.args + func.args.kwonlyargs:
            annotation = ast.unparse(arg.annotation) if arg.annotation else ""
            assert annotation in _SHAPE_ANNOTATIONS, f"{name}({arg.arg}: {annotation})"


def test_module_sql_constants_interpolate_only_constants() -> None:
    for path, tree in _sources():
        for node in tree.body:
            if not isinstance(node, ast.Assign):
                continue
            for sub in ast.walk(node.value):
                if isinstance(sub, ast.FormattedValue):
                    inner = _terminal_name(sub.value)
                    assert inner is not None and _CONSTANT.match(inner), (
                        f"{path.name}:{node.lineno}: {ast.unparse(sub.value)}"
                    )


def test_no_percent_or_format_sql() -> None:
    problems = []
    for path, tree in _sources():
        for node in ast.walk(tree):
            text = None
            if (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, ast.Mod)
                and isinstance(node.left, ast.Constant)
            ):
                text = node.left.value
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "format"
                and isinstance(node.func.value, ast.Constant)
            ):
                text = node.func.value.value
            if isinstance(text, str) and _SQL_WORD.search(text):
                problems.append(f"{path.name}:{getattr(node, 'lineno', '?')}")
    assert not problems, problems


def test_the_static_scan_can_fail() -> None:
    """The checker flags a value formatted into SQL (so a green run means something)."""
    bad = ast.parse("conn.execute(f'SELECT * FROM facts WHERE id = {fact_id}')").body[0]
    call = bad.value  # type: ignore[attr-defined]
    assert _sql_argument_problem(Path("facts.py"), call.args[0], set()) is not None
    local = ast.parse("conn.execute(user_sql)").body[0].value  # type: ignore[attr-defined]
    assert _sql_argument_problem(Path("facts.py"), local.args[0], set()) is not None


# -- 2. dynamic ----------------------------------------------------------------------------

MARK = "Zq7mark"
_counter = iter(range(10**9))

_NASTY = [
    "'; DROP TABLE facts; --",
    '" OR 1=1 --',
    "') OR ('1'='1",
    "NEAR(a b)",
    "a:b",
    "*",
    "C++",
    "{content}: x",
    "\x00nul",
    "🙂 emoji",
    "用户喜欢跑步",
    "AND OR NOT",
    "%s %d {0}",
    "?1 :name @x $y",
]

_text = st.one_of(st.sampled_from(_NASTY), st.text(max_size=40))


@st.composite
def marked(draw: st.DrawFn) -> str:
    """A hostile string carrying a unique marker word."""
    return f"{draw(_text)} {MARK}{next(_counter)} {draw(_text)}"


def _category(text: str) -> str:
    cleaned = "".join(c for c in text if c in string.ascii_letters + string.digits + "-_")
    return cleaned or "c"


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[sqlmem.MemoryDB, list[str]]]:
    seen: list[str] = []

    def tracer(cursor: apsw.Cursor, sql: str, bindings: Any) -> bool:
        seen.append(sql)
        return True

    def hook(conn: apsw.Connection) -> None:
        conn.exec_trace = tracer

    apsw.connection_hooks.append(hook)
    try:
        db = sqlmem.open(tmp_path / "memory.db")
        try:
            yield db, seen
        finally:
            db.close()
    finally:
        apsw.connection_hooks.remove(hook)


def _drive(db: sqlmem.MemoryDB, s: str, t: str) -> None:
    """Every public entry point that takes text, with hostile text."""
    h, f = db.history, db.facts
    session = s[:500]
    calls: list[Any] = [
        lambda: h.append(session, Message(role="user", content=t, name=s, metadata={s: t})),
        lambda: h.append_many(session, [Message(role="tool", content=s, tool_call_id=t)]),
        lambda: h.set_summary(session, t),
        lambda: h.get_recent(session, 3),
        lambda: h.get_all(session, include_archived=True),
        lambda: h.count(session),
        lambda: h.get_summary(session),
        lambda: h.search(t, session_id=session),
        lambda: h.search(s),
        lambda: h.compact(session, 1, summary=s),
        lambda: h.around(session, 1, before=2, after=2),
        lambda: h.pop(session),
        lambda: h.get_recent(session, 2, pair_safe=False),
        lambda: f.index(
            Fact(
                id=s[:500],
                content=t,
                source=s,
                tags=[s, t],
                category=_category(s),
                metadata={s: t, "n": 1},
            )
        ),
        lambda: f.index_many([Fact(content=s, source=t, tags=[t])]),
        lambda: f.get(s),
        lambda: f.search(t),
        lambda: f.search(s, mode="all", tags=[s], source=t, metadata={s: t}),
        lambda: f.search(t, mode="raw"),
        lambda: f.search(s, category=_category(t), since=datetime(2000, 1, 1, tzinfo=timezone.utc)),
        lambda: f.search_by_metadata(s, t),
        lambda: f.list(tags=[t], source=s),
        lambda: f.list(metadata={s: {"$gte": t, "$ne": s}, t: {"$in": [s, 1]}}),
        lambda: f.search(s, tags=[t], metadata={s: {"$nin": [t]}, t: {"$exists": False}}),
        lambda: f.list(tags=[s], metadata={t: {"$eq": {s: t}}, s: {"$lt": 1}}),
        lambda: f.delete_many([s, t]),
        lambda: f.delete(s),
        lambda: h.purge(session),
    ]
    d, doc = db.docs, _category(s)[:200] + ".md"  # a valid path that carries the marker
    calls += [
        lambda: d.write(doc, t, sort_order=1),
        lambda: d.append(doc, s),
        lambda: d.edit(doc, s, t),
        lambda: d.edit(doc, "\n", t, replace_all=True),
        lambda: d.read(doc),
        lambda: d.search(t, prefix=s),
        lambda: d.search(s),
        lambda: d.list(s),
        lambda: d.revisions(doc),
        lambda: d.read_revision(doc, 1),
        lambda: d.restore(doc, 1),
        lambda: d.append_daily(t),
        lambda: d.delete(doc),
        lambda: d.write(s, t),
    ]
    for call in calls:
        # Refused values are fine; what matters is where accepted values go.
        with suppress(InvalidArgumentError, sqlmem.FactNotFoundError, sqlmem.DocumentNotFoundError):
            call()


@settings(max_examples=60)
@given(s=marked(), t=marked())
def test_hostile_strings_never_reach_sql_text(
    traced: tuple[sqlmem.MemoryDB, list[str]], s: str, t: str
) -> None:
    db, seen = traced
    start = len(seen)
    _drive(db, s, t)
    statements = seen[start:]
    assert statements  # the tracer is live
    leaked = [sql for sql in statements if MARK in sql]
    assert not leaked, leaked[:3]


def test_the_tracer_can_fail(traced: tuple[sqlmem.MemoryDB, list[str]]) -> None:
    """A formatted value does show up in the trace (so a green run means something)."""
    db, seen = traced
    with db._engine.read() as conn:
        conn.execute(f"SELECT '{MARK}-formatted'").fetchall()
    assert any(MARK in sql for sql in seen)
