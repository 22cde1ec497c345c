"""The import graph reads top-down: the rooms stand in tiers (what everything shares, the
search algorithms, the records with their rules and the protocols, the embedders, the store
fronts, the backends, then the layers written against the protocols) and a module imports
only downwards; no backend imports another; no two modules depend on each other; the error
module loads no database driver; and the code cites no document a user does not have.

Read from the source with `ast`, so an import inside a function or under
`if TYPE_CHECKING:` counts too.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "sqlmem"

#: The rooms from the bottom up. A module imports only its own room and the rooms of lower
#: tiers; rooms of one tier import each other only where the tier says so (the records,
#: their rules and the protocols are one vocabulary; no backend imports another).
TIERS: tuple[tuple[frozenset[str], bool], ...] = (
    (frozenset({"errors", "extras", "forksafe", "agent_ids", "config"}), True),
    (frozenset({"search"}), False),  # tokenising and matching, BM25, vector arithmetic
    (frozenset({"records", "doc_records", "rules", "protocols"}), True),
    (frozenset({"embedders"}), False),
    (frozenset({"stores"}), False),  # one front per store protocol, over a backend's port
    (frozenset({"sqlite", "inmemory", "postgres"}), False),
    (frozenset({"memory"}), False),  # the in-memory backend's earlier name, re-exporting it
    (frozenset({"opening"}), False),  # `sqlmem.open`: picks a backend
    *((frozenset({layer}), False) for layer in ("context", "tools", "aio", "adapters")),
    *((frozenset({layer}), False) for layer in ("factory", "evaluation", "ui", "cli")),
)

#: Upward imports kept on purpose, each until the modules named stop needing it (a
#: shrinking list: an entry goes when its reason does).
UPWARD: dict[tuple[str, str], str] = {
    ("sqlmem.errors", "sqlmem.sqlite.apsw_errors"): (
        "translate_errors and map_apsw_error stay importable from sqlmem.errors (loaded on "
        "first use) for code written before they moved; sqlmem itself imports them from "
        "sqlite/apsw_errors.py"
    ),
    ("sqlmem.search.embedding", "sqlmem.rules.embedding"): (
        "Embedding moved down to rules; the old name serves the stores that import it from "
        "search (sqlite/, postgres/ and memory/ facts and history, rules/history_hybrid.py)"
    ),
}


def _room(module: str) -> str:
    """The top-level room of a dotted module name inside sqlmem ("sqlite", "rules"...)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _tier(room: str) -> tuple[int, bool]:
    for number, (rooms, mutual) in enumerate(TIERS):
        if room in rooms:
            return number, mutual
    raise AssertionError(f"room {room!r} is in no tier: add it to TIERS")


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__main__.py")
KNOWN = frozenset(_module_name(p) for p in MODULES)


def _imports(path: Path) -> set[str]:
    """Every sqlmem module `path` imports, wherever the import statement stands: at the
    top, inside a function (a lazy import), or under `if TYPE_CHECKING:` (a module that
    needs another's types to be read depends on it too). `from pkg import name` counts as
    importing `pkg.name` when that is a module, else `pkg`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("sqlmem"))
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(path, node)
            if target.startswith("sqlmem"):
                for alias in node.names:
                    child = f"{target}.{alias.name}"
                    found.add(child if child in KNOWN else target)
    return found - {_module_name(path)}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_read_top_down(path: Path) -> None:
    """Rooms import downwards only: what every backend shares never imports a backend, no
    backend imports another, and no backend reaches up into the layers written against the
    protocols (context helpers, tools, adapters, factory, CLI)."""
    name = _module_name(path)
    if name == "sqlmem":
        return  # the facade re-exports every room
    here = _room(name)
    tier, mutual = _tier(here)
    wrong = []
    for target in sorted(_imports(path) - {"sqlmem"}):
        there = _room(target)
        if there == here or (name, target) in UPWARD:
            continue
        other, _ = _tier(there)
        if other > tier or (other == tier and not mutual):
            wrong.append(target)
    assert not wrong, f"{name} ({here}) imports upwards or sideways: {wrong}"


def test_upward_imports_kept_on_purpose_still_exist() -> None:
    """An entry of UPWARD whose import is gone is removed, so the list only shrinks."""
    graph = {_module_name(p): _imports(p) for p in MODULES}
    stale = [edge for edge in UPWARD if edge[1] not in graph.get(edge[0], set())]
    assert not stale, f"remove from UPWARD: {stale}"


def _resolve(path: Path, node: ast.ImportFrom) -> str:
    """The dotted module a `from ... import` names, relative levels resolved."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _load_time_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements that run when a module is loaded: its top level, and inside `try`,
    `with` and `if` blocks there (not the body of a function or class method, and not an
    `if TYPE_CHECKING:` block, which only the type checker reads)."""
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.If):
            if not _is_type_checking(node):
                found += _load_time_statements(node.body) + _load_time_statements(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                found += _load_time_statements(block)
            for handler in node.handlers:
                found += _load_time_statements(handler.body)
        elif isinstance(node, ast.With):
            found += _load_time_statements(node.body)
        else:
            found.append(node)
    return found


def _load_time_imports(path: Path, known: set[str]) -> set[str]:
    """The sqlmem modules `path` imports when it is loaded (`from pkg import mod` counts as
    importing `pkg.mod` when that is a module, else as importing `pkg`)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    for node in _load_time_statements(tree.body):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("sqlmem"))
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(path, node)
            if not target.startswith("sqlmem"):
                continue
            for alias in node.names:
                child = f"{target}.{alias.name}"
                found.add(child if child in known else target)
    return found - {_module_name(path)}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def _load_time_graph() -> dict[str, set[str]]:
    known = {_module_name(p) for p in MODULES}
    return {_module_name(p): _load_time_imports(p, known) & known for p in MODULES}


def test_cycle_finder_finds_a_cycle() -> None:
    """The finder itself: a two-module cycle and a three-module one, beside a chain."""
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}}
    assert _cycles(graph) == [["a", "b"], ["c", "d", "e"]]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycle_at_all() -> None:
    """No two modules depend on each other in any way: not at load time, not through an
    import inside a function, not through the types one needs to be read. A cycle makes
    neither module readable without the other; a type-only one is broken by declaring the
    few members used as a `Protocol` beside their user (as `sqlite/calls.py` does for the
    engine). The facade (`sqlmem/__init__.py`) re-exports every room and is left out."""
    graph = {_module_name(p): _imports(p) - {"sqlmem"} for p in MODULES}
    graph.pop("sqlmem", None)
    for module, target in UPWARD:
        graph[module].discard(target)
    assert _cycles(graph) == []


def test_no_import_cycle_when_modules_load() -> None:
    """A cycle makes a module's names depend on which of the two was imported first (a
    partly loaded module), and makes neither readable without the other. The facade
    (`sqlmem/__init__.py`) re-exports every room and is left out."""
    graph = {name: deps - {"sqlmem"} for name, deps in _load_time_graph().items()}
    graph.pop("sqlmem", None)
    assert _cycles(graph) == []


#: What only the team's own documents explain: numbered references to the specification
#: or the issue tracker, and the names of the projects sqlmem was first written for.
_CITATION = re.compile(
    r"\bSPEC [0-9]|\b[Ss]ection [0-9]|\b[Ii]ssue [0-9]"
    r"|\b(?:golemcore|MateClaw|autobot|RockBot|sclaw|OpenClaw)\b"
)


def _citations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and path.suffix in {".py", ".sql", ".html", ".js", ".css"}:
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if _CITATION.search(line):
                    found.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    return found


def test_citation_pattern_catches_each_kind() -> None:
    for text in ("(SPEC 17)", "issue 23 item 7", "Issue 4", "section 3", "golemcore's block"):
        assert _CITATION.search(text), text
    for text in ("spec: 17", "the issues", "respec 3", "a section of the pack"):
        assert not _CITATION.search(text), text


def test_code_cites_no_document_users_lack() -> None:
    """Comments, docstrings and messages say why in this repository's own terms, not by
    pointing at a document or a project the reader does not have."""
    found = _citations()
    assert not found, f"{len(found)} citations left:\n" + "\n".join(found)


def test_the_error_module_loads_no_database_driver() -> None:
    """`sqlmem.errors` is what every backend and every caller shares: importing it (as
    `import sqlmem` does, and code that only catches our errors) loads neither apsw nor
    psycopg. Checked in a fresh interpreter, where nothing else has loaded them."""
    code = (
        "import sys, sqlmem.errors\n"
        "from sqlmem.errors import SqlmemError, StorageBusyError, map_os_error\n"
        "print(sorted(m for m in ('apsw', 'psycopg') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_sqlite_error_helpers_keep_their_old_import_path() -> None:
    """`translate_errors` and `map_apsw_error` moved beside the SQLite backend; importing
    them from `sqlmem.errors` still gives the same functions."""
    from sqlmem import errors
    from sqlmem.sqlite import apsw_errors

    assert errors.translate_errors is apsw_errors.translate_errors
    assert errors.map_apsw_error is apsw_errors.map_apsw_error
    with pytest.raises(AttributeError):
        errors.no_such_name  # noqa: B018


#: A module a reader can hold in mind, and a function that fits on a screen.
MODULE_LINES = 450
FUNCTION_LINES = 80

#: Modules still over the limit; none are left (a new one is split, not listed).
LONG_MODULES: frozenset[str] = frozenset()
#: Functions still over the limit ("module.py:name"); none are left.
LONG_FUNCTIONS: frozenset[str] = frozenset()


def _function_lengths(text: str, name: str) -> dict[str, int]:
    """Lines of each function or method of a module (its `def` to its last line), keyed
    "module.py:function" (the longest, when several share a name)."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(text, name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            key = f"{name}:{node.name}"
            found[key] = max(length, found.get(key, 0))
    return found


def _sizes() -> tuple[dict[str, int], dict[str, int]]:
    """Lines per module, and lines per function or method."""
    modules: dict[str, int] = {}
    functions: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(PACKAGE))
        text = path.read_text()
        modules[name] = len(text.splitlines())
        functions.update(_function_lengths(text, name))
    return modules, functions


def test_modules_and_functions_stay_short() -> None:
    modules, functions = _sizes()
    long_modules = {name for name, lines in modules.items() if lines > MODULE_LINES}
    long_functions = {name for name, lines in functions.items() if lines > FUNCTION_LINES}
    new = sorted((long_modules - LONG_MODULES) | (long_functions - LONG_FUNCTIONS))
    assert not new, f"split these (over {MODULE_LINES} / {FUNCTION_LINES} lines): {new}"
    shrunk = sorted((LONG_MODULES - long_modules) | (LONG_FUNCTIONS - long_functions))
    assert not shrunk, f"short now, remove from the allow-list: {shrunk}"


def test_function_lengths_count_methods_and_nested_functions() -> None:
    body = "\n".join(f"        x{i} = {i}" for i in range(FUNCTION_LINES))
    text = (
        "class C:\n"
        "    @property\n"
        f"    async def long(self):\n{body}\n"
        "        def inner():\n"
        "            return 1\n"
        "        return inner\n"
        "def short():\n"
        "    return 2\n"
    )
    assert _function_lengths(text, "m.py") == {
        "m.py:long": FUNCTION_LINES + 4,
        "m.py:inner": 2,
        "m.py:short": 2,
    }
