"""Every workload `python -m benchmarks` knows, by id and group, imported only when run.

Adding a workload is one line in `REGISTRY`: `Entry(id, group, "module:function")`, where
`benchmarks.<module>.<function>(ctx: Context) -> list[Row]`. Modules are imported when
their workload runs, not before: a module that is not there yet (another branch adds
it), or whose optional dependency is not installed, turns into "skipped" rows with the
reason, and the rest of the run goes on. `placeholders` name the rows (and targets) a
workload owes, so a target whose module is missing still has its row, marked skipped.

A workload may raise `harness.Skip("reason")` (no PostgreSQL server, no peer installed).
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from .context import Context
from .harness import Row, Skip

__all__ = ["GROUPS", "REGISTRY", "TARGETS", "Entry", "run_entry"]


@dataclass(frozen=True)
class Entry:
    id: str
    group: str
    #: "module:function" inside the benchmarks package.
    where: str
    #: Left out of the default run; runs when named in --only.
    opt_in: bool = False
    #: (row name, target) the workload owes, reported as skipped when it cannot run.
    placeholders: tuple[tuple[str, str], ...] = ()


_PG = "the PostgreSQL backend (issue 21)"

REGISTRY: list[Entry] = [
    # -- 0.1 ------------------------------------------------------------------------------
    Entry("W1", "0.1", "history_workloads:w1_append"),
    Entry("W1b", "0.1", "history_workloads:w1b_append_many"),
    Entry("W2", "0.1", "history_workloads:w2_get_recent"),
    Entry("W3", "0.1", "fact_workloads:w3_fact_search"),
    Entry("W3s", "0.1", "small_store:w3s_small_store"),
    Entry("W3p", "0.1", "fact_workloads:w3p_any_prototypes", opt_in=True),
    Entry("W3b", "0.1", "fact_workloads:w3b_filtered_search"),
    Entry("W3m", "0.1", "fact_workloads:w3m_metadata_search"),
    Entry("W3c", "0.1", "fact_workloads:w3c_index_facts"),
    Entry("W4", "0.1", "other_workloads:w4_open_agents"),
    Entry("W5", "0.1", "history_workloads:w5_history_search"),
    Entry("W6", "0.1", "other_workloads:w6_mixed"),
    # -- 0.2 ------------------------------------------------------------------------------
    Entry("W3d", "items", "item_workloads:w3d_remember"),
    Entry("W8", "pack", "context_workloads:w8_memory_pack"),
    Entry("W7", "documents", "doc_workloads:w7_documents"),
    Entry("W9", "context", "context_workloads:w9_context_window"),
    Entry("T1", "tools", "extra_workloads:t1_tool_call"),
    Entry("T2", "tools", "extra_workloads:t2_mcp_round_trip"),
    Entry("W10", "vector", "vector_workloads:w10_vector_search", placeholders=(
        ("W10 vector top-10, 100,000 x 384, no filter (vs matrix @ q + argpartition)",
         "p50 <= 1.5x"),
        ("W10 vector top-10 with a 2% filter (vs the same rows read from SQLite)",
         "p50 <= 2x"),
    )),
    Entry("W11", "vector", "vector_workloads:w11_hybrid_search", placeholders=(
        ("W11 hybrid top-10 (vs any + vector + 1 ms)", "p50 <= 1x"),
        ("W11 index_many with an embedder: write-lock hold time (vs without)", "<= 1.3x"),
    )),
    Entry("W12", "vector", "vector_workloads:w12_session_search", placeholders=(
        ("W12 history search within one session", "report"),
    )),
    Entry("A1", "async", "extra_workloads:a1_async"),
    Entry("U1", "ui", "ui_workloads:u1_inspector_pages"),
    Entry("P1", "peers", "peers:p1_append"),
    Entry("P2", "peers", "peers:p2_recent"),
    Entry("P3", "peers", "peers:p3_fact_search"),
    Entry("P4", "adapters", "peer_adapters:p4_session"),
    Entry("P5", "adapters", "peer_adapters:p5_store"),
    Entry("P6", "adapters", "peer_adapters:p6_saver"),
    Entry("P7", "adapters", "peer_adapters_next:p7_adk_sessions"),
    Entry("P8", "adapters", "peer_adapters_next:p8_adk_memory"),
    Entry("AD", "adapters", "adapters:adapter_workloads", placeholders=(
        ("AD adapters, 4 processes x 4 threads on one file (vs the frameworks' backends)",
         "no error; at least as fast"),
    )),
    Entry("PG", "postgres", "postgres_workloads:pg_workloads", placeholders=(
        (f"PG appends/s, 1 process ({_PG})", "report, beside SQLite"),
        (f"PG appends/s, 4 processes x 4 threads ({_PG})", "report, beside SQLite"),
        (f"PG get_recent(50) ({_PG})", "report, beside SQLite"),
        (f"PG fact search 'all', 100,000 facts x 40 agents ({_PG})", "report"),
        (f"PG fact search 'any' (vs 'all' on the same server) ({_PG})",
         "p50 <= 3x 'all', agreement >= 0.9"),
    )),
]  # fmt: skip

GROUPS: dict[str, list[str]] = {}
for _entry in REGISTRY:
    GROUPS.setdefault(_entry.group, []).append(_entry.id)

#: Targets decided in issue 22 for rows another module emits: (row name, metric) ->
#: (target text, limit). Applied by the runner so the decision lives in one place.
TARGETS: dict[tuple[str, str], tuple[str, float | None]] = {
    ("W1 append, history_search on (vs raw + FTS triggers)", "msgs/s"):
        ("<= 1.15x raw with the same FTS triggers (issue 22)", 1.15),
    ("W1 append, history_search on", "msgs/s"):
        ("report (target moved to the FTS-trigger row, issue 22)", None),
    ("W6 append latency under load", "p99 µs"): ("p99 <= 1.5x raw (issue 22)", 1.5),
}  # fmt: skip


def _load(entry: Entry) -> Callable[[Context], list[Row]]:
    module, _, name = entry.where.partition(":")
    found = getattr(importlib.import_module(f"benchmarks.{module}"), name, None)
    if found is None:
        raise Skip(f"benchmarks.{module} has no {name}() yet")
    return found  # type: ignore[no-any-return]


def run_entry(entry: Entry, ctx: Context) -> list[Row]:
    """Run one workload; skipped rows (with the reason) when it cannot run here."""
    try:
        rows = _load(entry)(ctx)
    except Skip as why:
        return _skipped(entry, str(why))
    except ImportError as exc:  # the module, or one of its optional dependencies
        return _skipped(entry, f"not importable: {exc}")
    except Exception as exc:  # a broken workload fails its row, not the whole run
        traceback.print_exc(file=sys.stderr)
        nan = float("nan")
        return [Row(entry.id, "-", nan, nan, None, group=entry.group,
                    failed_condition=f"error: {exc!r}")]  # fmt: skip
    for row in rows:
        row.group = entry.group
        override = TARGETS.get((row.workload, row.metric))
        if override is not None:
            row.target, row.limit = override
    return rows


def _skipped(entry: Entry, reason: str) -> list[Row]:
    owed = entry.placeholders or ((entry.id, "report"),)
    nan = float("nan")
    return [
        Row(name, "-", nan, nan, None, target, group=entry.group, skipped=reason)
        for name, target in owed
    ]
