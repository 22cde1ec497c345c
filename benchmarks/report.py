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

__all__ = ["environment", "markdown", "side_by_side", "write_results"]


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
        found["qpsg"] = conn.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, -1)
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
        "peers": _peer_versions(),
    }


def _peer_versions() -> dict[str, str]:
    """The installed versions of the peers (and frameworks) measured beside sqlmem."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("openai-agents", "langgraph", "langgraph-checkpoint-sqlite", "sqlite-utils",
                 "psycopg", "wordllama", "mcp"):  # fmt: skip
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def _fmt(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}" if value < 10 else f"{value:.1f}"


def _ratio_cell(value: float | None, span: list[float] | None) -> str:
    if value is None:
        return "-"
    cell = f"{_fmt(value)}x"
    if span is not None and span[0] != span[1]:
        cell += f" ({_fmt(span[0])}-{_fmt(span[1])})"
    return cell


def _status_cell(row: Row) -> str:
    status = row.status
    if row.skipped:
        return f"skipped: {row.skipped}"
    runs = row.extra.get("runs", 1)
    if status in {"PASS", "FAIL"} and runs > 1:
        status += f" ({row.extra.get('runs_passed', 0)}/{runs} runs pass)"
    if row.failed_condition:
        status += f" ({row.failed_condition})"
    return status


def markdown(env: dict[str, Any], meta: dict[str, Any], rows: list[Row]) -> str:
    load = meta.get("load", 0)
    lines = [
        "# sqlmem benchmarks",
        "",
        f"- Python {env['python']}, apsw {env['apsw']}, SQLite {env['sqlite']}, "
        f"sqlmem {env['sqlmem']} ({env['commit']})",
        f"- {env['nproc']} CPUs ({env['cpu']}), {env['platform']}",
        f"- peers: {', '.join(f'{k} {v}' for k, v in env.get('peers', {}).items()) or 'none'}",
        f"- raw apsw: {', '.join(f'{k}={v}' for k, v in env['raw_pragmas'].items())}",
        f"- sqlmem: {', '.join(f'{k}={v}' for k, v in env['sqlmem_pragmas'].items())}",
        f"- `{meta.get('command', 'python -m benchmarks')}`: size {meta['size']}, "
        f"{meta.get('runs', 1)} run(s), --load {load}, seed {meta['seed']}, "
        f"run time {meta['seconds']:.0f} s, load average before / after: "
        f"{meta.get('loadavg_before', '?')} / {meta.get('loadavg_after', '?')}",
        "- ratio = sqlmem cost / raw cost (time per op, or latency); lower is better, 1.0 = raw;"
        " vs peer = sqlmem cost / the fastest peer's cost. Ratios: median over the runs"
        " (min-max)",
        "",
        "| group | workload | metric | sqlmem | raw | ratio | best peer | vs peer | target "
        "| result |",
        "|---|---|---|---:|---:|---:|---|---:|---|---|",
    ]
    for row in rows:
        extra = ""
        if "agreement" in row.extra:
            extra = f", agreement {row.extra['agreement']:.3f}"
        peer = f"{row.peer_name} {_fmt(row.peer)}" if row.peer_name else "-"
        lines.append(
            f"| {row.group} | {row.workload} | {row.metric} | {_fmt(row.sqlmem)} | "
            f"{_fmt(row.raw)} | {_ratio_cell(row.ratio, row.extra.get('ratio_range'))} | "
            f"{peer} | {_ratio_cell(row.peer_ratio, row.extra.get('peer_ratio_range'))} | "
            f"{row.target}{extra} | {_status_cell(row)} |"
        )
    return "\n".join(lines) + "\n"


def write_results(
    out: Path, env: dict[str, Any], meta: dict[str, Any], rows: list[Row],
    json_path: Path | None = None,
) -> tuple[Path, Path]:  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    md = out / "results.md"
    md.write_text(markdown(env, meta, rows), encoding="utf-8")
    data = {"environment": env, "run": meta, "results": [r.to_json() for r in rows]}
    text = json.dumps(_finite(data), indent=2, default=_json_default)
    js = out / "results.json"
    js.write_text(text, encoding="utf-8")
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(text, encoding="utf-8")
        js = json_path
    return md, js


def _finite(value: Any) -> Any:
    """nan and inf become null: the JSON stays standard (json.dumps would write NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return str(value)


def _cell(row: dict[str, Any] | None, key: str, span_key: str) -> str:
    if row is None:
        return "-"
    return _ratio_cell(row.get(key), row["extra"].get(span_key))


def _result(row: dict[str, Any] | None) -> str:
    if row is None:
        return "-"
    if row["status"] == "skipped":
        return "skipped"
    runs = row["extra"].get("runs", 1)
    if row["status"] in {"PASS", "FAIL"} and runs > 1:
        return f"{row['status']} {row['extra'].get('runs_passed', 0)}/{runs}"
    return str(row["status"])


def _shift(a: dict[str, Any] | None, b: dict[str, Any] | None, key: str) -> float | None:
    if a is None or b is None or not a.get(key) or not b.get(key):
        return None
    return float(b[key]) / float(a[key])


def side_by_side(idle: dict[str, Any], loaded: dict[str, Any]) -> str:
    """The README's table: two results.json (idle, then `--load N`) row by row, with the
    rows whose ratio moved by more than 25% marked."""
    keyed = {(r["workload"], r["metric"]): r for r in loaded["results"]}
    load = loaded["run"].get("load", "?")
    lines = [
        f"| group | workload | metric | target | idle: vs raw | vs best peer | result | "
        f"--load {load}: vs raw | vs best peer | result | moved |",
        "|---|---|---|---|---:|---:|---|---:|---:|---|---|",
    ]
    for a in idle["results"]:
        b = keyed.get((a["workload"], a["metric"]))
        moved = [f"{name} x{m:.2f}" for name, m in (
            ("raw", _shift(a, b, "ratio")), ("peer", _shift(a, b, "peer_ratio")),
        ) if m is not None and (m > 1.25 or m < 0.8)]  # fmt: skip
        peer = f" ({a['peer_name']})" if a.get("peer_name") else ""
        lines.append(
            f"| {a['group']} | {a['workload']} | {a['metric']} | {a['target']} | "
            f"{_cell(a, 'ratio', 'ratio_range')} | {_cell(a, 'peer_ratio', 'peer_ratio_range')}"
            f"{peer} | {_result(a)} | {_cell(b, 'ratio', 'ratio_range')} | "
            f"{_cell(b, 'peer_ratio', 'peer_ratio_range')} | {_result(b)} | "
            f"{', '.join(moved) or '-'} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m benchmarks.report IDLE.json LOADED.json
    first, second = (json.loads(Path(p).read_text(encoding="utf-8")) for p in sys.argv[1:3])
    print(side_by_side(first, second), end="")
