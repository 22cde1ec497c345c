"""SPEC 18: adapters are optional extras. `import sqlmem` (and `sqlmem.adapters`, and the
async API) never imports a framework; only importing an adapter module does."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("agents", "langchain_core", "langgraph", "openai", "anthropic")


def _loaded_after(code: str) -> set[str]:
    probe = f"{code}; import sys; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    return {name.split(".")[0] for name in out} & set(FRAMEWORKS)


def test_sqlmem_and_the_adapters_package_import_no_framework() -> None:
    code = "import sqlmem, sqlmem.adapters, sqlmem.aio; sqlmem.open"
    assert _loaded_after(code) == set()


@pytest.mark.parametrize(
    ("module", "framework"),
    [("openai_agents", "agents"), ("langchain", "langchain_core"), ("langgraph", "langgraph")],
)
def test_an_adapter_imports_its_framework_only(module: str, framework: str) -> None:
    pytest.importorskip(framework)
    assert _loaded_after(f"import sqlmem.adapters.{module}") & {"agents", framework} == {framework}


def test_the_anthropic_memory_tool_needs_no_sdk() -> None:
    """The handler runs on plain dicts: importing it loads no SDK, and without the SDK
    only `sdk_memory_tool` refuses, naming the extra."""
    assert _loaded_after("import sqlmem.adapters.anthropic") == set()
    code = (
        "import sys; sys.modules['anthropic'] = None\n"
        "import sqlmem.inmemory\n"
        "from sqlmem.adapters.anthropic import SqlmemMemoryTool, sdk_memory_tool\n"
        "tool = SqlmemMemoryTool(sqlmem.inmemory.open())\n"
        "print(tool.run({'command': 'view', 'path': '/memories'}).is_error)\n"
        "try:\n"
        "    sdk_memory_tool(tool)\n"
        "except sqlmem.SqlmemError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert out.splitlines() == [
        "False",
        "the anthropic SDK is not installed: pip install 'sqlmem[anthropic]'",
    ]
