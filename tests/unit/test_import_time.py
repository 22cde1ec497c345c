"""`import sqlmem` stays cheap: numpy, the CLI and the backends load only when used.

Each check runs in a fresh interpreter, since this test process has long imported
everything. Timings are not asserted (a shared CI machine makes them flaky); what keeps
the import fast is what it loads, and that is asserted exactly.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import sqlmem

ROOT = Path(__file__).resolve().parents[2]


def _loaded_after(code: str, cwd: Path) -> set[str]:
    """The modules a fresh interpreter has loaded after running `code`."""
    script = code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_import_loads_only_the_errors(tmp_path: Path) -> None:
    """Everything else (pydantic models, SQLite backend, numpy, CLI) waits for first use."""
    loaded = _loaded_after("import sqlmem", tmp_path)
    assert {m for m in loaded if m.startswith("sqlmem")} == {"sqlmem", "sqlmem.errors"}
    assert "numpy" not in loaded
    assert "wordllama" not in loaded
    assert "pydantic" not in loaded


def test_open_and_search_need_no_numpy_and_no_cli(tmp_path: Path) -> None:
    code = (
        "import sqlmem\n"
        f"with sqlmem.open({str(tmp_path / 'memory.db')!r}) as db:\n"
        "    db.history.append('chat:1', sqlmem.Message(role='user', content='my dog Rex'))\n"
        '    db.facts.index(sqlmem.Fact(content="The user\'s dog is called Rex"))\n'
        "    assert db.facts.search('dog')\n"
        "    assert db.history.search('dog')\n"
    )
    loaded = _loaded_after(code, tmp_path)
    assert "numpy" not in loaded
    assert "wordllama" not in loaded
    assert not {m for m in loaded if m.startswith(("sqlmem.cli", "sqlmem.inmemory"))}


def test_every_public_name_resolves_to_its_module() -> None:
    """The lazy table and `__all__` agree, and a lazy name is the defining module's object."""
    assert set(sqlmem.__all__) <= set(dir(sqlmem))
    for name in [*sqlmem.__all__, "open"]:
        value = getattr(sqlmem, name)
        module = sqlmem._LAZY.get(name)
        if module is not None:
            assert value is getattr(sys.modules["sqlmem" + module], name)
    assert set(sqlmem._LAZY) - {"open"} <= set(sqlmem.__all__)


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        sqlmem.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("sqlmem.no_such_name resolved")


def test_cli_help_and_version_load_no_pydantic(tmp_path: Path) -> None:
    """`sqlmem --version` / `--help` start in tens of ms (they loaded the records before)."""
    for argv in (["--version"], ["--help"]):
        code = (
            "import sys\nfrom sqlmem.cli import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        )
        loaded = _loaded_after(code, tmp_path)
        assert "pydantic" not in loaded, argv
        assert "numpy" not in loaded, argv


def test_import_sqlmem_never_loads_the_postgres_extra(tmp_path: Path) -> None:
    """The `postgres` extra is optional: psycopg loads only with `sqlmem.postgres`."""
    code = (
        "import sqlmem\n"
        f"with sqlmem.open({str(tmp_path / 'memory.db')!r}) as db:\n"
        "    db.facts.index(sqlmem.Fact(content='x'))\n"
        "from sqlmem.factory import MemoryFactory\n"
    )
    loaded = _loaded_after(code, tmp_path)
    assert not {m for m in loaded if m.startswith(("psycopg", "sqlmem.postgres"))}
    assert {"psycopg", "psycopg_pool"} <= _loaded_after("import sqlmem.postgres", tmp_path)
