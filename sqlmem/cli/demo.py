"""`sqlmem demo`: one agent's memory, end to end, offline, in about a second.

It walks the path a real agent takes on each turn: the factory opens the agent's file,
the conversation (with a tool call and its result) is appended, an `LLMExtractor` turns it
into facts (driven by a fixed fake model, so no network and the same answer every time),
old turns are compacted under a summary, and memory is searched the way a user phrases
things: an apostrophe-laden English question and a two-character Chinese query.

Then the 0.2 loop: the facts go into the workspace's MEMORY.md (a document with revisions)
and today's note, and the memory pack for a question that shares no word with the answer
("Any restaurant ideas for me?" against "The user is vegetarian.") is built. With the
`embed` extra installed, the agent's facts get vectors from the offline WordLlama model and
the pack uses hybrid search, so it finds the answer BM25 alone cannot.

Running it again on the same folder gives the same result: the demo session is purged
first (it belongs to the demo alone), extracted facts have ids derived from their text, so
the second run finds them already remembered instead of adding copies, and writing the
same MEMORY.md again makes no new revision.
"""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..context import Consolidator, LLMExtractor, build_memory_pack, inject_memory
from ..errors import SqlmemError
from ..factory import MemoryFactory
from ..records import Message, ToolCall
from ..rules.documents import check_day, daily_path
from ..sqlite.db import MemoryDB
from .opening import CommandError
from .output import Output, fact_json, message_json, message_line, preview, sqlmem_command

__all__ = ["AGENT_ID", "SESSION_ID", "fake_complete", "run_demo"]

AGENT_ID = "demo-agent"
SESSION_ID = "demo:lisbon"
KEEP_LAST = 2

SUMMARY = (
    "The user has just moved to Lisbon with their dog Rex; the assistant looked up the "
    "weather (21 °C, sunny) and suggested a walk."
)

SEARCHES: tuple[tuple[str, str], ...] = (
    ("facts", "what's my dog's name?"),
    ("facts", "跑步"),
    ("history", "sunny weather in Lisbon"),
)

MEMORY_QUERY = "Where can I walk my dog in Lisbon?"

#: Shares no word with the fact that answers it: only vectors can connect them.
SEMANTIC_QUERY = "Any restaurant ideas for me?"


def conversation() -> list[Message]:
    """A short, realistic exchange: a tool call, its result, two languages."""
    return [
        Message(role="system", content="You are a friendly assistant with long-term memory."),
        Message(role="user", content="Hi! I just moved to Lisbon with my dog, Rex."),
        Message(
            role="assistant",
            tool_calls=[ToolCall(id="call_1", name="get_weather", arguments='{"city": "Lisbon"}')],
        ),
        Message(
            role="tool",
            name="get_weather",
            tool_call_id="call_1",
            content='{"temp_c": 21, "sky": "sunny"}',
        ),
        Message(
            role="assistant",
            content="Welcome to Lisbon! It's 21 °C and sunny: perfect for a first walk with Rex.",
        ),
        Message(
            role="user",
            content=(
                "我喜欢周日早上跑步. Any good running routes nearby? I'm vegetarian, by the way."
            ),
        ),
        Message(
            role="assistant",
            content="Try the riverside path from Cais do Sodré to Belém: flat, about 7 km.",
            metadata={"model": "fake-demo-model", "tokens": {"prompt": 212, "completion": 19}},
        ),
    ]


def fake_complete(prompt: str) -> str:
    """A stand-in for an LLM: answers the extraction prompt like a model would, offline.

    It only answers what the conversation supports, in the bulleted style models use,
    which `LLMExtractor` strips; the consolidation prompt gets the JSON it asks for.
    """
    if '"history_entry"' in prompt:
        return json.dumps({"history_entry": SUMMARY, "memory_update": ""})
    facts = []
    if "Rex" in prompt:
        facts.append("- The user's dog is called Rex.")
    if "Lisbon" in prompt:
        facts.append("- The user lives in Lisbon.")
    if "跑步" in prompt:
        facts.append("- 用户喜欢周日早上跑步")
    if "vegetarian" in prompt:
        facts.append("- The user is vegetarian.")
    return "\n".join(facts) or "NONE"


def run_demo(args: argparse.Namespace, out: Output) -> int:
    data_dir = Path(args.dir).expanduser().absolute()
    if data_dir.exists() and not data_dir.is_dir():
        raise CommandError(f"{data_dir}: exists and is not a folder")
    with MemoryFactory(data_dir, embedder=_offline_embedder()) as factory:
        db = factory.resolve(AGENT_ID)
        if not isinstance(db, MemoryDB):  # cannot happen: a file factory gives every agent one
            raise CommandError(f"{data_dir}: the factory gave {AGENT_ID!r} no memory")
        data = _walk_through(db, data_dir)
    out.result(data, _demo_text)
    return 0


def _offline_embedder() -> Any:
    """WordLlama when the `embed` extra is installed (offline, weights in its wheel), else
    None: the demo then shows BM25 alone."""
    try:
        from ..embedders.word_llama import WordLlamaEmbedder

        return WordLlamaEmbedder()
    except SqlmemError:
        return None


def _workspace(db: MemoryDB) -> dict[str, Any]:
    """MEMORY.md from what the agent remembers, a line in today's note, and the block an
    agent injects (golemcore's), plus the memory pack for a question BM25 cannot answer."""
    lines = sorted(f"- {f.content}" for f in db.facts.list(limit=100))
    written = db.docs.write("MEMORY.md", "# Memory\n" + "\n".join(lines) + "\n")
    _note_once(db, "Met a user who just moved to Lisbon with their dog.")
    pack = build_memory_pack(db.facts, SEMANTIC_QUERY)
    return {
        "memory_md_revision": written.revision,
        "memory_context": db.docs.render_memory_context(),
        "semantic_query": SEMANTIC_QUERY,
        "semantic_search": "hybrid" if db.facts.embedder is not None else "off",
        "bm25_results": [f.content for f in db.facts.search(SEMANTIC_QUERY, top_k=3)],
        "pack": pack.text,
        "pack_tokens": pack.tokens,
    }


def _note_once(db: MemoryDB, line: str) -> None:
    """The demo's line in today's note, unless an earlier run today wrote it: running the
    demo again must not grow the note by the same line each time."""
    today = check_day(None)
    note = db.docs.read(daily_path(today))
    if note is None or line not in note.content.splitlines():
        db.docs.append_daily(line, day=today)


def _walk_through(db: MemoryDB, data_dir: Path) -> dict[str, Any]:
    history, facts = db.history, db.facts
    history.purge(SESSION_ID)  # the demo's own session: start it afresh every run
    if db.docs.read("HISTORY.md") is not None:  # and its own consolidation log
        db.docs.delete("HISTORY.md")
    messages = conversation()
    seqs = history.append_many(SESSION_ID, messages)

    exchange = history.get_all(SESSION_ID)
    extractor = LLMExtractor(fake_complete)
    extracted = extractor.extract(SESSION_ID, exchange)  # what the model found
    new = extractor.extract(SESSION_ID, exchange, store=facts)  # what memory lacked

    # autobot's consolidation: the model folds the older turns into a HISTORY.md entry,
    # which also becomes the session summary, and they are archived: one transaction.
    consolidated = Consolidator(db, fake_complete, memory_window=4, keep_last=KEEP_LAST)
    archived = consolidated.maybe_consolidate(SESSION_ID).archived
    stored = history.get_all(SESSION_ID, include_archived=True)  # oldest, archived, first

    searches = []
    for kind, query in SEARCHES:
        if kind == "facts":
            results = [fact_json(f) for f in facts.search(query, top_k=3)]
        else:
            found = history.search(query, session_id=SESSION_ID, top_k=3)
            results = [message_json(m) for m in found]
        searches.append({"kind": kind, "query": query, "results": results})

    return {
        "data_dir": str(data_dir),
        "agent_id": AGENT_ID,
        "database": str(db.path),
        "session_id": SESSION_ID,
        "messages": [message_json(m, archived=i < archived) for i, m in enumerate(stored)],
        "appended": len(seqs),
        "extracted_facts": [fact_json(f) for f in extracted],
        "new_facts": [f.id for f in new],
        "facts_total": facts.count(),
        "compaction": {
            "archived": archived,
            "active": history.count(SESSION_ID),
            "summary": history.get_summary(SESSION_ID),
            "history_md": db.docs.read("HISTORY.md").content,  # type: ignore[union-attr]
        },
        "searches": searches,
        "memory_query": MEMORY_QUERY,
        "memory_block": inject_memory(facts, MEMORY_QUERY, max_facts=3),
        "workspace": _workspace(db),
    }


def _demo_text(data: dict[str, Any]) -> Iterator[str]:
    yield f"sqlmem demo: agent {data['agent_id']!r} in {data['data_dir']}"
    yield f"database: {data['database']}"
    yield ""
    yield f"1. Appended {data['appended']} messages to session {data['session_id']!r}:"
    for message in data["messages"]:
        yield f"     {message_line(message)}"
    yield ""
    new = set(data["new_facts"])
    yield (
        f"2. Extracted {len(data['extracted_facts'])} facts with LLMExtractor and a fake model "
        f"({len(new)} new, {len(data['extracted_facts']) - len(new)} already remembered):"
    )
    for fact in data["extracted_facts"]:
        mark = "new " if fact["id"] in new else "kept"
        yield f"     [{mark}] {fact['content']}  ({fact['id']})"
    yield f"   The agent now remembers {data['facts_total']} facts."
    yield ""
    compaction = data["compaction"]
    yield (
        f"3. Consolidated the session (Consolidator, fake model): {compaction['archived']} "
        f"messages archived, {compaction['active']} still active; HISTORY.md and the summary:"
    )
    yield f"     {preview(compaction['summary'], 200)}"
    yield ""
    yield "4. Searched memory:"
    for search in data["searches"]:
        where = "facts" if search["kind"] == "facts" else "history (archived included)"
        yield f"     {search['query']!r} in {where}:"
        if not search["results"]:
            yield "       (no match)"
        for item in search["results"]:
            if search["kind"] == "facts":
                yield f"       [{item['score']:.2f}] {item['content']}"
            else:
                yield f"       [{item['score']:.2f}] {message_line(item)}"
    yield ""
    yield f"5. The memory block an agent would put in its prompt for {data['memory_query']!r}:"
    for line in data["memory_block"].splitlines() or ["(nothing relevant)"]:
        yield f"     {line}" if line else ""
    yield ""
    work = data["workspace"]
    yield f"6. Wrote MEMORY.md (revision {work['memory_md_revision']}) and today's note; the"
    yield "   workspace block an agent puts in its prompt:"
    for line in work["memory_context"].splitlines()[:8]:
        yield f"     {line}" if line else ""
    yield ""
    found = ", ".join(repr(c) for c in work["bm25_results"]) or "nothing"
    yield f"7. {work['semantic_query']!r}: BM25 alone finds {found}."
    if work["semantic_search"] == "off":
        yield "   (pip install 'sqlmem[embed]' for semantic search; the pack below is BM25's)"
    else:
        yield "   With the offline WordLlama model (hybrid search), the memory pack is:"
    for line in work["pack"].splitlines() or ["(empty)"]:
        yield f"     {line}" if line else ""
    yield ""
    yield "Look inside:"
    sqlmem, database = sqlmem_command(), shlex.quote(data["database"])
    yield f"  {sqlmem} info {database}"
    yield f"  {sqlmem} history {database} {shlex.quote(data['session_id'])} --all"
    yield f"  {sqlmem} search {database} \"what's my dog's name?\""
