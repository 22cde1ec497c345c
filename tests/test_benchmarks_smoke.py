"""The benchmark runner runs end to end at tiny sizes and reports every workload.

No timing is asserted: this only pins that `python -m benchmarks` keeps working.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = [
    "W1", "W1b", "W2", "W3", "W3b", "W3m", "W3c", "W3d", "W4", "W5", "W6", "W7", "W8", "W9",
]  # fmt: skip


def test_runner_writes_every_workload(tmp_path: Path) -> None:
    out = tmp_path / "results"
    subprocess.run(
        [sys.executable, "-m", "benchmarks", "--smoke", "--quiet", "--out", str(out),
         "--tmp", str(tmp_path)],
        cwd=ROOT, check=True, timeout=120, capture_output=True,
    )  # fmt: skip
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert data["run"]["workloads"] == list(WORKLOADS)
    reported = {row["workload"].split()[0] for row in data["results"]}
    assert reported == set(WORKLOADS)
    assert all(row["status"] in {"PASS", "FAIL", "report"} for row in data["results"])
    assert data["environment"]["sqlite"] and data["environment"]["apsw"]
    assert (out / "results.md").read_text(encoding="utf-8").startswith("# sqlmem benchmarks")
    # W6 counts its writes: none may be lost, no call may fail.
    (w6,) = [r for r in data["results"] if r["workload"].startswith("W6 mixed")]
    for side in ("raw", "sqlmem"):
        assert w6["extra"][side]["errors"] == 0
        assert w6["extra"][side]["lost_writes"] == 0


def test_opt_in_prototypes_run(tmp_path: Path) -> None:
    """W3p (the mode "any" prototypes) is left out of the default run: run it here so it
    cannot rot unnoticed."""
    out = tmp_path / "results"
    subprocess.run(
        [sys.executable, "-m", "benchmarks", "--smoke", "--quiet", "--only", "W3p",
         "--out", str(out), "--tmp", str(tmp_path)],
        cwd=ROOT, check=True, timeout=120, capture_output=True,
    )  # fmt: skip
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert data["run"]["workloads"] == ["W3p"]
    rows = data["results"]
    assert {row["workload"].split()[0] for row in rows} == {"W3p"}
    agreements = [row["extra"]["agreement"] for row in rows if "agreement" in row["extra"]]
    assert len(agreements) == 5 and all(0.0 <= a <= 1.0 for a in agreements)
