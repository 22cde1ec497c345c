"""`python -m benchmarks` keeps working: the runner end to end at tiny sizes, and its
pieces (merging runs, PASS/FAIL against raw and peers, the registry's tolerance of a
module that is not there, the background load, the chart).

No timing is asserted: only that every workload reports, and the outputs are sound.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from benchmarks.chart import rows_from_json, write_chart
from benchmarks.context import SIZES, Context
from benchmarks.data import Corpus
from benchmarks.harness import Row, background_load, with_peers
from benchmarks.registry import GROUPS, REGISTRY, TARGETS, Entry, run_entry
from benchmarks.report import side_by_side
from benchmarks.runner import merge_runs, select

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, *args: str) -> dict:
    """The timeout only catches a hang: a loaded 2-core machine takes minutes, an idle one
    well under one."""
    out = tmp_path / "results"
    subprocess.run(
        [sys.executable, "-m", "benchmarks", "--smoke", "--quiet", "--out", str(out),
         "--tmp", str(tmp_path), *args],
        cwd=ROOT, check=True, timeout=900, capture_output=True,
    )  # fmt: skip
    assert (out / "results.md").read_text(encoding="utf-8").startswith("# sqlmem benchmarks")
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_every_workload_reports_with_json_and_chart(tmp_path: Path) -> None:
    chart, js = tmp_path / "chart.svg", tmp_path / "copy.json"
    data = _run(tmp_path, "--runs", "1", "--json", str(js), "--chart", str(chart))
    default = [e.id for e in REGISTRY if not e.opt_in]
    assert data["run"]["workloads"] == default
    reported = {row["workload"].split()[0] for row in data["results"]}
    assert reported == set(default)  # measured, or skipped with its reason
    for row in data["results"]:
        assert row["status"] in {"PASS", "FAIL", "report", "skipped"}
        assert (row["status"] == "skipped") == (row["skipped"] is not None)
        assert not (row["failed_condition"] or "").startswith("error:"), row
        assert row["group"] in GROUPS
    # The copy is the same standard JSON (nan written as null, never NaN).
    assert json.loads(js.read_text(encoding="utf-8")) == data
    assert "NaN" not in js.read_text(encoding="utf-8")
    assert data["environment"]["sqlite"] and data["environment"]["apsw"]
    # W6 counts its writes: none may be lost, no call may fail.
    (w6,) = [r for r in data["results"] if r["workload"].startswith("W6 mixed")]
    for side in ("raw", "sqlmem"):
        assert w6["extra"][side]["errors"] == 0
        assert w6["extra"][side]["lost_writes"] == 0
    # The chart is well-formed SVG with one label per measured row.
    root = ET.parse(chart).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    labels = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    measured = [r for r in data["results"] if r["status"] != "skipped" and r["ratio"] is not None]
    assert measured
    for row in measured[:5]:
        assert any(label and label.startswith(row["workload"][:40]) for label in labels)
    # Issue 22's decision on W1 is applied to the row W1 emits.
    w1_name = "W1 append, history_search on (vs raw + FTS triggers)"
    (w1,) = [r for r in data["results"] if r["workload"] == w1_name]
    assert w1["limit"] == 1.15


def test_runs_groups_and_load(tmp_path: Path) -> None:
    data = _run(tmp_path, "--only", "W3,context", "--runs", "2", "--load", "1")
    assert data["run"]["workloads"] == ["W3", "W9"]
    assert data["run"]["runs"] == 2 and data["run"]["load"] == 1
    # A saved run charts again, and compares with itself row by row.
    assert write_chart(tmp_path / "again.svg", rows_from_json(data)).stat().st_size > 0
    table = side_by_side(data, data).splitlines()
    assert len(table) == 2 + len(data["results"])
    assert all(line.endswith("| - |") for line in table[2:])  # nothing moved
    (pid,) = data["run"]["load_pids"]
    assert not Path(f"/proc/{pid}").exists() or _is_zombie_or_other(pid)
    for row in data["results"]:
        assert row["extra"]["runs"] == 2
        if row["ratio"] is not None:
            lo, hi = row["extra"]["ratio_range"]
            assert lo <= row["ratio"] <= hi


def _is_zombie_or_other(pid: int) -> bool:
    """The pid was reused by someone else, or is not our load process any more."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True
    return b"load-0.bin" not in cmdline


def test_opt_in_prototypes_run(tmp_path: Path) -> None:
    """W3p (the mode "any" prototypes) is left out of the default run: run it here so it
    cannot rot unnoticed."""
    data = _run(tmp_path, "--only", "W3p", "--runs", "1")
    assert data["run"]["workloads"] == ["W3p"]
    rows = data["results"]
    assert {row["workload"].split()[0] for row in rows} == {"W3p"}
    agreements = [row["extra"]["agreement"] for row in rows if "agreement" in row["extra"]]
    assert len(agreements) == 5 and all(0.0 <= a <= 1.0 for a in agreements)


def test_unknown_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="unknown workload or group 'W99'"):
        select("W2,W99")


def test_select_by_group_and_id() -> None:
    assert [e.id for e in select("peers,W2")] == ["W2", "P1", "P2", "P3"]
    assert "W3p" not in [e.id for e in select("0.1")]  # opt-in stays out of its group
    assert [e.id for e in select("w3p")] == ["W3p"]


def _ctx(tmp_path: Path) -> Context:
    return Context(SIZES["smoke"], Corpus(1), tmp_path, verbose=False)


def test_a_missing_module_gives_its_placeholder_rows(tmp_path: Path) -> None:
    entry = Entry("X1", "vector", "no_such_module:run",
                  placeholders=(("X1 one", "p50 <= 2x"), ("X1 two", "report")))  # fmt: skip
    rows = run_entry(entry, _ctx(tmp_path))
    assert [(r.workload, r.target, r.status, r.group) for r in rows] == [
        ("X1 one", "p50 <= 2x", "skipped", "vector"),
        ("X1 two", "report", "skipped", "vector"),
    ]
    assert "no_such_module" in (rows[0].skipped or "")
    missing = run_entry(Entry("X2", "tools", "harness:no_such_function"), _ctx(tmp_path))
    assert [(r.workload, r.status) for r in missing] == [("X2", "skipped")]
    broken = run_entry(Entry("X3", "tools", "harness:percentile"), _ctx(tmp_path))
    assert [(r.workload, r.status) for r in broken] == [("X3", "FAIL")]
    assert (broken[0].failed_condition or "").startswith("error: TypeError")


def test_target_overrides_name_rows_that_exist() -> None:
    """Each issue-22 target override names a row some workload emits (a renamed row would
    silently lose its target)."""
    sources = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "benchmarks").glob("*.py"))
    for name, _metric in TARGETS:
        assert name.split(",")[0] in sources


def _row(ratio: float, limit: float | None = 2.0) -> Row:
    return Row("W", "p50 µs", ratio * 10, 10.0, ratio, "t", limit)


def test_status_against_raw_and_peer() -> None:
    assert _row(1.5).status == "PASS"
    assert _row(2.5).status == "FAIL"
    assert _row(2.5, None).status == "report"
    faster = with_peers(_row(1.5), {"a": 30.0, "b": 20.0, "c": math.nan}, rate=False, limit=1.0)
    assert (faster.peer_name, faster.peer, faster.peer_ratio) == ("b", 20.0, 0.75)
    assert faster.status == "PASS"
    slower = with_peers(_row(1.5), {"a": 12.0}, rate=False, limit=1.0)
    assert slower.status == "FAIL"  # within the raw limit, slower than the peer
    rate = Row("W", "msgs/s", 100.0, 200.0, 2.0, "t", 3.0)
    with_peers(rate, {"p": 400.0, "q": 50.0}, rate=True, limit=None)
    assert (rate.peer_name, rate.peer_ratio, rate.status) == ("p", 4.0, "PASS")
    none = with_peers(_row(1.0), {}, rate=False, limit=1.0)
    assert none.peer is None and none.status == "PASS"


def test_merge_runs_medians_and_ranges() -> None:
    runs = [[_row(r), Row("S", "-", math.nan, math.nan, None, skipped="why")]
            for r in (1.0, 3.0, 1.5)]  # fmt: skip
    merged, skipped = merge_runs(runs)
    assert merged.ratio == 1.5 and merged.sqlmem == 15.0
    assert merged.extra["ratio_range"] == [1.0, 3.0]
    assert merged.extra["runs"] == 3 and merged.extra["runs_passed"] == 2
    assert merged.status == "PASS"  # judged on the median
    assert skipped.status == "skipped" and skipped.extra["runs"] == 3


def test_background_load_starts_and_stops(tmp_path: Path) -> None:
    with background_load(2, tmp_path) as pids:
        assert len(pids) == 2
        for pid in pids:
            os.kill(pid, 0)  # alive
    for pid in pids:
        assert _is_gone(pid)


def _is_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return _is_zombie_or_other(pid)


def test_chart_of_rows(tmp_path: Path) -> None:
    rows = [_row(0.5), _row(40.0), _row(1.0, None), with_peers(_row(2.5), {"p": 5.0},
            rate=False, limit=1.0)]  # fmt: skip
    rows.append(Row("skipped one", "-", math.nan, math.nan, None, skipped="no"))
    path = write_chart(tmp_path / "c.svg", rows, title="t <&>")
    root = ET.parse(path).getroot()
    rects = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.find(
        "{http://www.w3.org/2000/svg}title") is not None]  # fmt: skip
    assert len(rects) == 5  # 4 raw bars and 1 peer bar; the skipped row has none
    widths = [float(r.get("width", "0")) for r in rects]
    assert all(w >= 1.0 for w in widths)
