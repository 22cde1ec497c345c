"""What each memory tool does, over the stores' public protocols (SPEC 16).

Each handler takes arguments already checked against the tool's schema (defaults not yet
filled) and returns the JSON-ready result. They raise the stores' own errors
(`FactNotFoundError`, `InvalidArgumentError`, `StorageBusyError`...), which `MemoryTools`
turns into error codes; nothing here catches them, so a refused write is refused by the
store before it writes anything.

Results carry only what a model needs to act (ids to refer back to, text, category, tags,
layer, score): every extra key costs tokens on every call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

from ..context.inject import search_mode_for
from ..errors import DocumentNotFoundError, FactNotFoundError, InvalidArgumentError
from ..protocols import Database
from ..records import Fact, Message

__all__ = ["HANDLERS", "Handler"]


Handler = Callable[[Database, dict[str, Any]], dict[str, Any]]


def _stamp(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="milliseconds")


def _fact_items(facts: list[Fact]) -> Iterator[dict[str, Any]]:
    for fact in facts:
        item = {
            "id": fact.id,
            "content": fact.content,
            "category": fact.category,
            "tags": fact.tags,
            "layer": fact.layer,
            "score": fact.score,
        }
        if fact.key:  # only when set: every key costs the model tokens
            item["key"] = fact.key
        yield item


def save_memory(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    fields = {k: v for k, v in args.items() if k != "confidence"}
    fields.update(_unit(args))
    fact = Fact(**fields)
    stored_id = db.facts.remember(fact)
    # remember() merges into an older fact when the text is the same (SPEC 12): the id it
    # returns is then that fact's, not the fresh one generated here.
    return {"id": stored_id, "merged": stored_id != fact.id}


def _unit(args: dict[str, Any]) -> dict[str, float]:
    """confidence/salience as floats (the schema accepts an integral 0 or 1 as a number)."""
    return {k: float(args[k]) for k in ("confidence", "salience") if k in args}


def _as_of(value: str | None) -> datetime | None:
    """A model's ISO 8601 date or time (UTC when it names no zone)."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgumentError(
            f"argument 'as_of' must be an ISO 8601 date or time, got {value[:40]!r}"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def search_memory(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    query = args.get("query", "")
    top_k = args.get("top_k", 10)
    narrow: dict[str, Any] = {
        "category": args.get("category") or None,
        "tags": args.get("tags") or None,
        "layer": args.get("layer"),
    }
    as_of = _as_of(args.get("as_of"))
    if as_of is not None:
        narrow["as_of"] = as_of
    if query.strip():  # by meaning too when the store has an embedder, as inject_memory
        found = db.facts.search(query, top_k, mode=search_mode_for(db.facts), **narrow)
    else:  # nothing to look for: the newest memories, for a model getting its bearings
        found = db.facts.list(limit=top_k, **narrow)
    return {"results": list(_fact_items(found))}


def memory_history(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    if ("key" in args) == ("id" in args):
        raise InvalidArgumentError("give exactly one of 'key' and 'id'")
    chain = db.facts.history(key=args.get("key"), id=args.get("id"))
    if not chain and "id" in args:
        raise FactNotFoundError(f"no memory with id {args['id']!r}")
    return {
        "history": [
            {
                "id": f.id,
                "content": f.content,
                "key": f.key,
                "valid_from": _stamp(f.valid_from or f.created_at),
                "valid_to": _stamp(f.valid_to),
                "superseded_by": f.superseded_by,
            }
            for f in chain
        ]
    }


def list_categories(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    return {"categories": db.facts.categories()}


def list_tags(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    return {"tags": db.facts.tags()}


def update_memory(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    changes = {k: v for k, v in args.items() if k not in ("id", "confidence", "salience")}
    changes.update(_unit(args))
    if not changes:
        raise InvalidArgumentError(
            "nothing to update: give at least one of content, category, tags, confidence, salience"
        )
    with db.atomic():  # read and rewrite as one step: a concurrent update is not undone
        fact = db.facts.get(args["id"])
        if fact is None:
            raise FactNotFoundError(f"no memory with id {args['id']!r}")
        data = fact.model_dump(exclude={"score", "fingerprint", "updated_at"})
        updated = Fact(**{**data, **changes})
        db.facts.index(updated)
    return {
        "id": updated.id,
        "content": updated.content,
        "category": updated.category,
        "tags": updated.tags,
        "layer": updated.layer,
        "confidence": updated.confidence,
        "salience": updated.salience,
    }


def forget_memory(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    try:
        db.facts.delete(args["id"])
    except FactNotFoundError:
        raise FactNotFoundError(f"no memory with id {args['id']!r}") from None
    return {"id": args["id"], "forgotten": True}


def promote_memory(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    try:
        fact = db.facts.promote(args["id"], args["layer"])
    except FactNotFoundError:
        raise FactNotFoundError(f"no memory with id {args['id']!r}") from None
    return {"id": fact.id, "layer": fact.layer}


def list_workspace_memory_files(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    infos = db.docs.list(args.get("filename_prefix", ""))
    return {
        "files": [
            {
                "filename": info.path,
                "size": info.size,
                "revision": info.revision,
                "enabled": info.enabled,
                "updated_at": _stamp(info.updated_at),
            }
            for info in infos
        ]
    }


def read_workspace_memory_file(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    doc = db.docs.read(args["filename"])
    if doc is None:
        raise DocumentNotFoundError(f"no workspace file {args['filename']!r}")
    return {
        "filename": doc.path,
        "content": doc.content,
        "revision": doc.revision,
        "size": doc.size,
        "updated_at": _stamp(doc.updated_at),
    }


def write_workspace_memory_file(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    done = db.docs.write(args["filename"], args["content"])
    return {
        "created": done.created,
        "overwritten": done.overwritten,
        "bytesWritten": done.bytes,
        "revision": done.revision,
    }


def edit_workspace_memory_file(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    path = args["filename"]
    with db.atomic():  # the size reported is the one this edit left
        try:
            count = db.docs.edit(
                path, args["old_text"], args["new_text"], replace_all=args.get("replace_all", False)
            )
        except DocumentNotFoundError:
            raise DocumentNotFoundError(f"no workspace file {path!r}") from None
        doc = db.docs.read(path)
    return {"replacements": count, "fileSizeAfter": doc.size if doc is not None else 0}


def _message_item(message: Message) -> dict[str, Any]:
    return {
        "session_id": message.session_id,
        "seq": message.seq,
        "role": message.role,
        "content": message.content,
        "created_at": _stamp(message.created_at),
        "score": message.score,
    }


def search_conversations(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    found = db.history.search(
        args["query"],
        session_id=args.get("session_id"),
        top_k=args.get("top_k", 10),
        mode=search_mode_for(db.history),
    )
    return {"results": [_message_item(m) for m in found]}


HANDLERS: dict[str, Handler] = {
    "save_memory": save_memory,
    "search_memory": search_memory,
    "memory_history": memory_history,
    "list_categories": list_categories,
    "list_tags": list_tags,
    "update_memory": update_memory,
    "forget_memory": forget_memory,
    "promote_memory": promote_memory,
    "list_workspace_memory_files": list_workspace_memory_files,
    "read_workspace_memory_file": read_workspace_memory_file,
    "write_workspace_memory_file": write_workspace_memory_file,
    "edit_workspace_memory_file": edit_workspace_memory_file,
    "search_conversations": search_conversations,
}
