"""The import graph reads top-down: what every backend shares never imports a backend, no
backend imports another, and backends never reach up into the layers written against the
protocols (context helpers, CLI, factory). No two modules import each other when loaded,
and the code cites no document a user does not have.

Read from the source with `ast`, so a lazy import inside a function counts too (for the
rooms; the cycle check counts only what runs when a module is loaded).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "sqlmem"

SHARED = {
    "errors",
    "config",
    "records",
    "protocols",
    "agent_ids",
    "forksafe",
    "search",
    "rules",
    "embedders",
}
BACKENDS = {"sqlite", "memory", "postgres"}
LAYERS = {"context", "cli", "factory", "aio", "tools", "adapters"}


def _room(module: str) -> str:
    """The top-level room of a dotted module name inside sqlmem ("sqlite", "rules"...)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Dotted sqlmem modules `path` imports (relative imports resolved)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("sqlmem"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("sqlmem"):
                continue
            if node.module is None or target in ("sqlmem",):  # from . import x
                found.update(f"{target}.{a.name}" for a in node.names)
            else:
                found.add(target)
    return found


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__main__.py")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_read_top_down(path: Path) -> None:
    here = _room(_module_name(path))
    if _module_name(path) == "sqlmem":
        return  # the facade re-exports every room
    rooms = {_room(m) for m in _imports(path)} - {"", here}
    if here in SHARED:
        assert not rooms & (BACKENDS | LAYERS), f"shared module imports {rooms}"
    elif here in BACKENDS:
        assert not rooms & ((BACKENDS - {here}) | LAYERS), f"backend imports {rooms}"


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
