"""Child of test_crash.py: writes to a memory.db without pause until it is SIGKILLed.

Run as `python crash_child.py` it is a zygote: it imports sqlmem once, then reads one JSON
job per line on stdin and forks a writer for each (a fork costs milliseconds, a fresh
interpreter a quarter of a second, which would eat the test's time budget). The writer
prints, on the shared stdout, one line per write: `I {op}` before it starts and `A {result}`
once the call returned, that is after its transaction committed. Each line is one
os.write() of less than PIPE_BUF bytes, so it is atomic and survives the kill. When the
writer has died the zygote prints `exit STATUS`.

Job fields: path, synchronous, run (makes every word unique), seed, facts (ids alive
now), docs (path -> its current word, for the documents alive now), seconds (a
deadline, in case nobody kills it), broken (None, or a deliberately wrong writer to
prove the test can fail: "ack-early" acknowledges before writing, "split-batch" stores a
batch as separate appends, "split-compact" stores the summary and moves the boundary in
two transactions, "split-import" imports a folder's files one transaction each).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from typing import Any

import sqlmem
from sqlmem import Fact, Message

SESSIONS = ("s0", "s1", "s2", "s3")
MAX_FACTS = 120
DOC_PATHS = ("MEMORY.md", "notes/a.md", "memory/2026-01-01.md", "HISTORY.md")


def doc_content(word: str, size: int) -> str:
    """A document's whole content from its op (ops stay one short line): its unique word,
    then `size` filler lines (up to ~24 KB, so a kill can land inside a large write)."""
    return f"doc {word}\n\n" + "filler line of a workspace document\n" * size


def next_doc_op(rng: random.Random, word: str, docs: dict[str, str], folder: str) -> dict[str, Any]:
    size = rng.choice((0, 3, 700))
    roll = rng.random()
    if roll < 0.45 or not docs:
        return {"op": "doc_write", "path": rng.choice(DOC_PATHS), "word": word, "size": size}
    if roll < 0.75:
        path = rng.choice(sorted(docs))
        return {"op": "doc_edit", "path": path, "old": docs[path], "word": word}
    if roll < 0.92:
        paths = rng.sample(DOC_PATHS, rng.randint(1, 3))
        files = [[p, f"{word}i{j}", size] for j, p in enumerate(paths)]
        return {"op": "doc_import", "dir": f"{folder}/{word}", "files": files}
    return {"op": "doc_delete", "path": rng.choice(sorted(docs))}


def emit(kind: str, payload: Any) -> None:
    os.write(1, f"{kind} {json.dumps(payload)}\n".encode())


def next_op(
    rng: random.Random, run: int, n: int, live: list[str], docs: dict[str, str], folder: str
) -> dict[str, Any]:
    """One random write; its words are unique (r<run>o<n>...) and survive stemming."""
    word = f"r{run}o{n}"
    if rng.random() < 0.25:
        return next_doc_op(rng, word, docs, folder)
    sid = rng.choice(SESSIONS)
    roll = rng.random()
    if roll < 0.30:
        return {"op": "append", "sid": sid, "words": [word]}
    if roll < 0.45:
        return {
            "op": "append_many",
            "sid": sid,
            "words": [f"{word}b{j}" for j in range(rng.randint(2, 6))],
        }
    if roll < 0.70 or not live:
        k = 1 if rng.random() < 0.7 else rng.randint(2, 4)
        facts: list[list[str]] = []
        for j in range(k):
            reuse = live and (len(live) >= MAX_FACTS or rng.random() < 0.5)
            fid = rng.choice(live) if reuse else f"f{word}j{j}"
            if fid not in {f[0] for f in facts}:
                facts.append([fid, f"{word}f{j}"])
        return {"op": "index", "facts": facts}
    if roll < 0.85:
        ids = rng.sample(live, min(len(live), 1 if rng.random() < 0.7 else 3))
        return {"op": "delete", "ids": ids}
    if roll < 0.97:
        return {"op": "compact", "sid": sid, "keep": rng.randint(0, 6), "summary": f"sum {word}"}
    return {"op": "purge", "sid": sid}


def execute(db: sqlmem.MemoryDB, op: dict[str, Any], broken: str | None) -> Any:
    kind = op["op"]
    if kind == "append":
        return [db.history.append(op["sid"], Message(role="user", content=f"msg {op['words'][0]}"))]
    if kind == "append_many":
        messages = [Message(role="user", content=f"msg {w}") for w in op["words"]]
        if broken == "split-batch":
            return [db.history.append(op["sid"], m) for m in messages]
        return db.history.append_many(op["sid"], messages)
    if kind == "index":
        facts = [Fact(id=fid, content=f"fact {w}") for fid, w in op["facts"]]
        return db.facts.index(facts[0]) if len(facts) == 1 else db.facts.index_many(facts)
    if kind == "delete":
        if len(op["ids"]) == 1:
            db.facts.delete(op["ids"][0])
            return 1
        return db.facts.delete_many(op["ids"])
    if kind == "compact":
        if broken == "split-compact":
            db.history.set_summary(op["sid"], op["summary"])
            return db.history.compact(op["sid"], op["keep"])
        return db.history.compact(op["sid"], op["keep"], summary=op["summary"])
    if kind == "purge":
        db.history.purge(op["sid"])
        return None
    if kind == "doc_write":
        return db.docs.write(op["path"], doc_content(op["word"], op["size"])).revision
    if kind == "doc_edit":
        return db.docs.edit(op["path"], f"doc {op['old']}\n", f"doc {op['word']}\n")
    if kind == "doc_import":
        if broken == "split-import":
            for path, word, size in op["files"]:
                db.docs.write(path, doc_content(word, size))
            return None
        for path, word, size in op["files"]:
            file = os.path.join(op["dir"], path)
            os.makedirs(os.path.dirname(file), exist_ok=True)
            with open(file, "w", encoding="utf-8") as fp:
                fp.write(doc_content(word, size))
        done = db.docs.import_dir(op["dir"])
        return [done.created, done.updated, done.unchanged, done.skipped]
    if kind == "doc_delete":
        db.docs.delete(op["path"])
        return None
    raise ValueError(kind)


def writer(job: dict[str, Any]) -> None:
    emit("pid", os.getpid())
    deadline = time.monotonic() + job["seconds"]
    db = sqlmem.open(job["path"], sqlmem.StoreConfig(synchronous=job["synchronous"]))
    emit("ready", None)
    rng = random.Random(job["seed"])
    live: list[str] = list(job["facts"])
    docs: dict[str, str] = dict(job["docs"])
    folder = f"{job['path']}.imports"
    broken = job.get("broken")
    n = 0
    while time.monotonic() < deadline:
        op = next_op(rng, job["run"], n, live, docs, folder)
        emit("I", op)
        if broken == "ack-early":
            emit("A", None)
        result = execute(db, op, broken)
        if broken != "ack-early":
            emit("A", result)
        if op["op"] == "index":
            live.extend(fid for fid, _ in op["facts"] if fid not in live)
        elif op["op"] == "delete":
            live = [fid for fid in live if fid not in op["ids"]]
        elif op["op"] in ("doc_write", "doc_edit"):
            docs[op["path"]] = op["word"]
        elif op["op"] == "doc_import":
            docs.update((path, word) for path, word, _ in op["files"])
        elif op["op"] == "doc_delete":
            del docs[op["path"]]
        n += 1
    db.close()


def zygote() -> None:
    for line in sys.stdin:
        job = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            status = 0
            try:
                writer(job)
            except BaseException as exc:
                sys.stderr.write(f"crash_child writer failed: {exc!r}\n")
                sys.stderr.flush()
                status = 1
            os._exit(status)
        _, status = os.waitpid(pid, 0)
        os.write(1, f"exit {status}\n".encode())


if __name__ == "__main__":
    zygote()
