"""SPEC 18: adapters are optional extras. `import sqlmem` (and `sqlmem.adapters`, and the
async API) never imports a framework; only importing an adapter module does."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("agents", "langchain_core", "langgraph", "openai")


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
