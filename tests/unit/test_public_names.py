"""`sqlmem`'s public names come from one table (`sqlmem._PUBLIC`): `__all__`, `dir()`, the
lazy attributes and the imports type checkers read must all agree with it, and every name
must resolve. (They had drifted: mypy saw `sqlmem.build_memory_pack` as `object`.)"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import sqlmem

INIT = Path(sqlmem.__file__)
TABLE = sqlmem._PUBLIC
NAMES = {name for names in TABLE.values() for name in names}


def _imports(tree: ast.Module, *, type_checking: bool) -> dict[str, tuple[str, ...]]:
    """{module: names} of the `from .x import A as A` statements, at module level or in
    the `if TYPE_CHECKING:` block."""
    found: dict[str, list[str]] = {}
    if type_checking:
        blocks = [
            node.body
            for node in tree.body
            if isinstance(node, ast.If)
            and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING"
        ]
        assert len(blocks) == 1
        statements = blocks[0]
    else:
        statements = tree.body
    for node in statements:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                # `A as A`: an explicit re-export that strict type checkers accept
                assert alias.asname == alias.name, f"{alias.name} is not imported as itself"
                found.setdefault(f".{node.module}", []).append(alias.name)
    return {module: tuple(sorted(names)) for module, names in found.items()}


def test_the_type_checking_imports_are_the_table() -> None:
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    eager = _imports(tree, type_checking=False)
    lazy = _imports(tree, type_checking=True)
    assert eager == {".errors": tuple(sorted(TABLE[".errors"]))}
    expected = {m: tuple(sorted(n)) for m, n in TABLE.items() if m != ".errors"}
    assert lazy == expected


def test_all_and_dir_are_the_table() -> None:
    assert set(sqlmem.__all__) == (NAMES - {"open"}) | {"__version__"}
    assert sorted(sqlmem.__all__) == sqlmem.__all__
    assert set(dir(sqlmem)) >= NAMES


def test_every_name_resolves_to_its_modules_object() -> None:
    for module, names in TABLE.items():
        source = importlib.import_module(module, "sqlmem")
        for name in names:
            assert getattr(sqlmem, name) is getattr(source, name), name


def test_the_0_2_names_and_database_are_public() -> None:
    for name in (
        "build_memory_pack", "PackConfig", "MemoryPack", "PackItem", "Consolidator",
        "ConsolidationResult", "WorkspaceExtractor", "ExtractionOutcome",
        "consolidate_daily_notes", "ContextWindow", "BuiltContext", "MemoryTools",
        "DocumentStore", "InMemoryDocumentStore", "Document", "DocumentInfo",
        "DocumentWrite", "DocumentHit", "RevisionInfo", "DocumentImport", "Embedder",
        "Database", "open", "MemoryDB", "MemoryFactory",
    ):  # fmt: skip
        assert name in NAMES, name


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        sqlmem.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("no AttributeError")
