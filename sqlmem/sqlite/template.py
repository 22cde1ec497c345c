"""New agent files start as a copy of a migrated template instead of running every migration.

Why: opening a new agent's memory used to apply each migration in its own write
transaction (about a dozen `BEGIN IMMEDIATE` ... `COMMIT` rounds, each re-parsing the schema),
which made creating an agent several times the cost of the schema itself. The template is
built once per process (per migration plan and tokenizer) by applying the very same
migrations with the very same runner to a scratch file, so its tables, triggers, ledger
rows and checksums are exactly what migrating a new file gives.

A new file gets the template's bytes; its ledger's `applied_at` is then set to the time
the file was made, by the opener's first write (`stamp_applied_at`). The bytes go to a
private temporary file in the destination folder (mode 0600), which is then hard-linked to
the final name: a link never replaces an existing file, so when several processes create
the same new file at once, exactly one copy wins and the others find a complete, migrated
file and open it as any existing one (no migration runs twice). Where hard links are not
available, or anything about the copy fails, the caller falls back to creating an empty
file and migrating it, as before.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from pathlib import Path

import apsw

from ..config import StoreConfig
from ..errors import SqlmemError
from ..rules.encoding import now_ms
from .connection import FILE_MODE, connect, ensure_folder, remove_folders
from .migrations import Migration, apply_migrations, load_migrations

__all__ = ["create_from_template", "stamp_applied_at"]

_SET_APPLIED_AT = "UPDATE schema_version SET applied_at = ?"

_templates: dict[tuple[tuple[Migration, ...], str], bytes] = {}
_building = threading.Lock()


def _fresh_lock_in_child() -> None:
    """A fork while another thread builds a template must not leave the child's lock held."""
    global _building
    _building = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_fresh_lock_in_child)


def create_from_template(path: Path, config: StoreConfig) -> bool:
    """Make `path` a migrated database if it does not exist yet; True when this call made it.

    False means "open it the ordinary way": the file already exists (another process or
    thread was first), or this filesystem cannot do the atomic no-replace link.
    """
    # Whatever the system refuses here (a name too long, a folder it may not search, a
    # fault while the template is built) the ordinary path meets again and reports with
    # the errors sqlmem promises, leaving nothing behind: so here it only means "no copy".
    try:
        if path.exists():
            return False
        image = _template(config)
        created = ensure_folder(path.parent)  # removes what it made when it fails
    except (OSError, apsw.Error, SqlmemError):
        return False
    try:
        fd, scratch = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".new", dir=path.parent)
    except OSError:  # the ordinary path reports it (and removes the folders it made)
        remove_folders(created)
        return False
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), FILE_MODE)
            out.write(image)
            out.flush()
            os.fsync(out.fileno())
        os.link(scratch, path)  # never replaces: a file made meanwhile wins
    except OSError:  # made meanwhile, no hard links here (FAT, some network mounts), full disk
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
    return True


def stamp_applied_at(conn: apsw.Connection) -> None:
    """Give the ledger rows of a file just made from the template the time it was made.

    Run by the opener on its own connection (which reads the schema anyway), right after
    the copy: the template's rows carry the time the template was built."""
    with conn:
        conn.execute(_SET_APPLIED_AT, (now_ms(),))


def _template(config: StoreConfig) -> bytes:
    """A file migrated to the latest version with the config's tokenizer, built once per
    process (per migration plan and tokenizer: nothing else in the config is in the file)."""
    key = (load_migrations(), config.tokenizer)
    found = _templates.get(key)
    if found is not None:
        return found
    with _building:
        found = _templates.get(key)
        if found is None:
            found = _templates[key] = _build(config)
    return found


def _build(config: StoreConfig) -> bytes:
    with tempfile.TemporaryDirectory(prefix="sqlmem-template-") as folder:
        scratch = Path(folder) / "template.db"
        # Left in rollback-journal mode: the opener switches the copy to WAL (or not) as
        # for any file.
        conn = connect(scratch, config, create=True)
        try:
            apply_migrations(conn, scratch, config.tokenizer)
        finally:
            conn.close()
        return scratch.read_bytes()
