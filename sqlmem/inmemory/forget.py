"""`InMemoryDB.forget(source)`: the SQLite database's forgetting (`sqlite.forget`) over the
twins, all or nothing under the database's lock (the plan: `rules.forget`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..rules.forget import ForgetReport, derived_only_from, parse_source, remaining_refs

if TYPE_CHECKING:
    from .twins import Twins

__all__ = ["forget"]


def forget(db: Twins, source: str) -> ForgetReport:
    target = parse_source(source)
    messages = documents = revisions = 0
    with db.atomic():
        if target.kind == "session":
            messages = len(db.history.get_all(target.session, include_archived=True))
            db.history.purge(target.session)
        elif target.kind == "message":
            messages = db.history.forget_message(target.session, target.seq)
        elif db.docs.read(target.path) is not None:
            revisions = len(db.docs.revisions(target.path))
            db.docs.delete(target.path)
            documents = 1
        gone = db.facts.ids_where(lambda refs, src: derived_only_from(refs, src, target))
        facts = db.facts.delete_many(gone)
        db.facts.rewrite_refs(lambda refs: remaining_refs(refs, target))
    return ForgetReport(messages, facts, documents, revisions)
