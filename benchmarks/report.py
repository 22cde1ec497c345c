"""The results header (machine, versions, pragmas) and the markdown / JSON outputs."""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw

import sqlmem

from .harness import Row
from .raw import FTS_PAGE_SIZE, PRAGMAS

__all__ = ["environment", "markdown", "write_results"]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=5, check=False,
            cwd=Path(__file__).resolve().parent,
        )  # fmt: skip
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def _sqlmem_pragmas(tmp: Path) -> dict[str, Any]:
    """Read back what sqlmem's writer connection actually runs with."""
    with sqlmem.open(tmp / "pragmas" / "memory.db") as db:
        conn = db._engine._writer.connection  # type: ignore[union-attr]  # a peek, for the header
        names = ("journal_mode", "synchronous", "foreign_keys", "recursive_triggers",
                 "journal_size_limit", "trusted_schema", "busy_timeout")  # fmt: skip
        found: dict[str, Any] = {name: conn.pragma(name) for name in names}
        pgsz = conn.execute("SELECT v FROM facts_fts_config WHERE k = 'pgsz'").fetchall()
        found["fts5_pgsz"] = pgsz[0][0] if pgsz else "default"
        return found


def environment(tmp: Path) -> dict[str, Any]:
    try:
        sq_pragmas: dict[str, Any] = _sqlmem_pragmas(tmp)
    except Exception as exc:  # the header must not stop the run
        sq_pragmas = {"error": repr(exc)}
    return {
        "python": sys.version.split()[0],
        "apsw": apsw.apsw_version(),
        "sqlite": apsw.sqlite_lib_version(),
        "sqlmem": sqlmem.__version__,
        "commit": _git_commit(),
        "platform": platform.platform(),
        "nproc": os.cpu_count(),
        "cpu": _cpu_model(),
        "raw_pragmas": {**PRAGMAS, "fts5_pgsz": FTS_PAGE_SIZE},
        "sqlmem_pragmas": sq_pragmas,
        "synchronous_note": "synchronous NORMAL on both sides (WAL)",
    }


def _fmt(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}" if value < 10 else f"{value:.1f}"


def markdown(env: dict[str, Any], meta: dict[str, Any], rows: list[Row]) -> str:
    lines = [
        "# sqlmem benchmarks",
        "",
        f"- Python {env['python']}, apsw {env['apsw']}, SQLite {env['sqlite']}, "
        f"sqlmem {env['sqlmem']} ({env['commit']})",
        f"- {env['nproc']} CPUs ({env['cpu']}), {env['platform']}",
        f"- raw apsw: {', '.join(f'{k}={v}' for k, v in env['raw_pragmas'].items())}",
        f"- sqlmem: {', '.join(f'{k}={v}' for k, v in env['sqlmem_pragmas'].items())}",
        f"- size: {meta['size']}, seed {meta['seed']}, workloads {', '.join(meta['workloads'])}, "
        f"run time {meta['seconds']:.0f} s",
        "- ratio = sqlmem cost / raw cost (time per op, or latency); lower is better, 1.0 = raw",
        "",
        "| workload | metric | sqlmem | raw | ratio | target | result |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for row in rows:
        status = row.status
        if row.failed_condition:
            status += f" ({row.failed_condition})"
        extra = ""
        if "agreement" in row.extra:
            extra = f", agreement {row.extra['agreement']:.3f}"
        lines.append(
            f"| {row.workload} | {row.metric} | {_fmt(row.sqlmem)} | {_fmt(row.raw)} | "
            f"{_fmt(row.ratio)}x | {row.target}{extra} | {status} |"
        )
    return "\n".join(lines) + "\n"


def write_results(
    out: Path, env: dict[str, Any], meta: dict[str, Any], rows: list[Row]
) -> tuple[Path, Path]:
    out.mkdir(parents=True, exist_ok=True)
    md = out / "results.md"
    md.write_text(markdown(env, meta, rows), encoding="utf-8")
    data = {"environment": env, "run": meta, "results": [r.to_json() for r in rows]}
    js = out / "results.json"
    js.write_text(json.dumps(data, indent=2, default=_json_default), encoding="utf-8")
    return md, js


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)
