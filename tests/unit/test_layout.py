"""The import graph reads top-down (issue 14): what every backend shares never imports a
backend, no backend imports another, and backends never reach up into the layers written
against the protocols (context helpers, CLI, factory).

Read from the source with `ast`, so a lazy import inside a function counts too.
"""

from __future__ import annotations

import ast
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
