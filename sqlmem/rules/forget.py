"""Forgetting a source and what was derived from it: the plan every backend executes
(`db.forget(source)` on SQLite, PostgreSQL and the in-memory database).

A source is a message (`"msg:{session}#{seq}"`), a document (`"doc:{path}"`, or a path
ending in `.md`), or else a session id. Facts name where they came from in `references`
(`"msg:{session}#{seq}"`, `"doc:{path}@{revision}"`, `"doc:{path}"`). Forgetting removes
the source and every fact derived only from it: a fact with references, all of them
pointing into the source, or, with no references, whose `source` field is the forgotten
session. A fact that also came from somewhere else stays, without its references into
the source: what is left of it is still known from there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal, NamedTuple

from ..errors import InvalidArgumentError
from .checks import check_session_id
from .encoding import dumps_json

__all__ = [
    "ForgetReport",
    "ForgetSource",
    "derived_only_from",
    "parse_source",
    "ref_needle",
    "remaining_refs",
]

_REVISION = re.compile(r"@[0-9]+\Z")


class ForgetReport(NamedTuple):
    """What `forget` removed: messages, facts, documents and document revisions."""

    messages: int = 0
    facts: int = 0
    documents: int = 0
    revisions: int = 0


@dataclass(frozen=True)
class ForgetSource:
    """A parsed `forget` argument."""

    kind: Literal["session", "message", "document"]
    session: str = ""
    seq: int = 0
    path: str = ""


def parse_source(source: object) -> ForgetSource:
    """`"msg:{session}#{seq}"`, `"doc:{path}"` (an `@revision` suffix names the same
    document), a path ending in `.md`, or a session id."""
    if not isinstance(source, str) or not source:
        raise InvalidArgumentError(
            "forget takes a non-empty string: a session id, msg:... or doc:..."
        )
    if source.startswith("msg:"):
        session, sep, seq = source[4:].rpartition("#")
        if not sep or not seq.isdigit() or not session:
            raise InvalidArgumentError(
                f"a message reference is 'msg:{{session}}#{{seq}}'; got {source!r:.80}"
            )
        return ForgetSource("message", session=check_session_id(session), seq=int(seq))
    if source.startswith("doc:"):
        path = _REVISION.sub("", source[4:])
        if not path:
            raise InvalidArgumentError("a document reference is 'doc:{path}'")
        return ForgetSource("document", path=path)
    if source.endswith(".md"):
        return ForgetSource("document", path=source)
    return ForgetSource("session", session=check_session_id(source))


def _points_into(ref: str, target: ForgetSource) -> bool:
    if target.kind == "document":
        if not ref.startswith("doc:"):
            return False
        return _REVISION.sub("", ref[4:]) == target.path
    if not ref.startswith("msg:"):
        return False
    session, sep, seq = ref[4:].rpartition("#")
    if not sep or session != target.session:
        return False
    return target.kind == "session" or seq == str(target.seq)


def derived_only_from(refs_json: str, fact_source: str, target: ForgetSource) -> bool:
    """Whether a fact (its references as stored JSON, its `source`) goes with `target`."""
    refs = json.loads(refs_json) if refs_json != "[]" else []
    if refs:
        return all(isinstance(r, str) and _points_into(r, target) for r in refs)
    return target.kind == "session" and fact_source == target.session


def remaining_refs(refs_json: str, target: ForgetSource) -> str | None:
    """A kept fact's references without those pointing into `target` (they would name
    what no longer exists, and hold its id): the new JSON, or None when none did."""
    refs = json.loads(refs_json) if refs_json != "[]" else []
    kept = [r for r in refs if not (isinstance(r, str) and _points_into(r, target))]
    return None if len(kept) == len(refs) else dumps_json(kept)


def ref_needle(target: ForgetSource) -> str:
    """Text every matching stored reference list contains (a LIKE prefilter for the
    backends; `derived_only_from` decides)."""
    if target.kind == "document":
        return "doc:" + target.path
    if target.kind == "message":
        return f"msg:{target.session}#{target.seq}"
    return f"msg:{target.session}#"
