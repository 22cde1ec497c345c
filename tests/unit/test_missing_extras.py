"""A module whose optional extra is missing says which extra to install.

Regression: importing `sqlmem.adapters.langgraph`, `.openai_agents` or `sqlmem.postgres`
without their extra raised Python's bare `ModuleNotFoundError`; `embed` and `mcp` already
named their extra. Each import runs in a fresh interpreter where the extra's package is
blocked (`sys.modules[name] = None` makes importing it fail as if it were not installed).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
for name in {blocked!r}:
    sys.modules[name] = None
import sqlmem
try:
    import {module}
except sqlmem.SqlmemError as exc:
    print(json.dumps({{"ok": False, "cls": type(exc).__name__, "message": str(exc),
                      "import_error": isinstance(exc, ImportError)}}))
else:
    print(json.dumps({{"ok": True}}))
"""


def _import_without(module: str, blocked: list[str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module, blocked=blocked)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr  # anything but a SqlmemError is a failure
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize(
    ("module", "extra", "blocked"),
    [
        ("sqlmem.adapters.langgraph", "langgraph", ["langgraph"]),
        ("sqlmem.adapters.langgraph", "langgraph", ["langchain_core"]),
        ("sqlmem.adapters.openai_agents", "openai-agents", ["agents"]),
        ("sqlmem.adapters.langchain", "langchain", ["langchain_core"]),
        ("sqlmem.postgres", "postgres", ["psycopg"]),
        ("sqlmem.postgres", "postgres", ["psycopg_pool"]),
    ],
)
def test_a_missing_extra_is_named(module: str, extra: str, blocked: list[str]) -> None:
    result = _import_without(module, blocked)
    assert result["ok"] is False
    assert result["cls"] == "MissingExtraError" and result["import_error"] is True
    assert f"pip install 'sqlmem[{extra}]'" in str(result["message"])
    assert module in str(result["message"])


@pytest.mark.parametrize(
    "module",
    [
        "sqlmem.adapters.langgraph",
        "sqlmem.adapters.openai_agents",
        "sqlmem.adapters.langchain",
        "sqlmem.postgres",
    ],
)
def test_with_the_extra_installed_the_import_works(module: str) -> None:
    assert _import_without(module, []) == {"ok": True}


def test_a_missing_module_of_no_extra_is_not_disguised() -> None:
    """Only the extra's own packages are translated: anything else is a bug to see."""
    from sqlmem.extras import needs_extra

    with pytest.raises(ModuleNotFoundError) as caught, needs_extra("postgres", "x"):
        import sqlmem_no_such_module  # type: ignore[import-not-found]  # noqa: F401
    assert type(caught.value) is ModuleNotFoundError
