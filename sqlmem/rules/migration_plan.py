"""Migration files, read and checked as one plan: the rule every backend's runner shares.

A folder of `NNNN_slug.sql` files, versions unique and contiguous from 1, each with the
sha256 of its bytes (the ledger stores it; an edited applied file is refused). Read once per
folder and cached: the files ship with the package and do not change while it runs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..errors import MigrationError

__all__ = ["Migration", "find_folder", "read_plan"]

_FILE_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str
    sha256: str


def find_folder(package: Path, *relative: str) -> Path:
    """The migrations shipped in the wheel (`sqlmem/_migrations/...`), else the checkout's
    top-level `migrations/...` folder."""
    for candidate in (
        package.joinpath("_migrations", *relative),
        package.parent.joinpath("migrations", *relative),
    ):
        if candidate.is_dir():
            return candidate
    where = "/".join(("migrations", *relative))
    raise MigrationError(f"{where} folder not found next to {package}")


@cache
def read_plan(folder: Path) -> tuple[Migration, ...]:
    """Every migration of `folder`, validated as a whole plan before any is applied."""
    found: dict[int, Migration] = {}
    for path in sorted(folder.glob("*.sql")):
        match = _FILE_NAME.match(path.name)
        if not match:
            raise MigrationError(f"{path}: migration files are named NNNN_slug.sql")
        version = int(match.group(1))
        if version in found:
            raise MigrationError(f"{path}: version {version} appears twice")
        data = path.read_bytes()
        found[version] = Migration(
            version, path.stem, data.decode("utf-8"), hashlib.sha256(data).hexdigest()
        )
    versions = sorted(found)
    if versions != list(range(1, len(versions) + 1)):
        raise MigrationError(f"{folder}: versions must run 1, 2, 3 ... without gaps: {versions}")
    return tuple(found[v] for v in versions)
