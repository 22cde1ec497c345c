"""The wheel carries the migrations, and an installed (non-editable) sqlmem finds them."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        timeout=300,
    )
    (found,) = out.glob("sqlmem-*.whl")
    return found


def test_wheel_lists_every_migration(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(
        Path(n).name
        for n in names
        if n.startswith("sqlmem/_migrations/") and "/postgres/" not in n  # PostgreSQL's below
    )
    expected = sorted(p.name for p in (ROOT / "migrations").glob("*.sql"))
    assert shipped == expected and expected
    postgres = sorted(Path(n).name for n in names if n.startswith("sqlmem/_migrations/postgres/"))
    assert postgres == sorted(p.name for p in (ROOT / "migrations" / "postgres").glob("*.sql"))
    assert postgres
    assert "sqlmem/py.typed" in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "sqlmem = sqlmem.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_package_finds_its_migrations(wheel: Path, tmp_path: Path) -> None:
    """Unpacked away from the checkout, the package opens a database by itself."""
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        f"import sys; sys.path.insert(0, {str(site)!r}); "
        "import sqlmem, sqlmem.sqlite.core.migrations as m; "
        "print(m.migrations_dir()); "
        f"db = sqlmem.open({str(tmp_path / 'x.db')!r}); "
        "print(db.stats()['schema_version']); db.close()"
    )
    result = subprocess.run(
        [sys.executable, "-I", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    folder, version = result.stdout.split()
    assert Path(folder) == site / "sqlmem" / "_migrations"
    assert int(version) == len(list((ROOT / "migrations").glob("*.sql")))
