"""`python -m benchmarks.tools` runs end to end at tiny sizes (no timing asserted: this
only pins that the memory-tools measurement keeps working and compares like with like)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_tools_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.tools", "--facts", "300", "--queries", "60",
         "--mcp-calls", "10"],
        cwd=ROOT, check=True, timeout=120, capture_output=True, text=True,
    )  # fmt: skip
    report = json.loads(done.stdout)
    assert report["T1"]["same_results"] is True  # the baseline encodes what call() returns
    assert report["T1"]["ratio_call_vs_search_json"] > 0
    assert report["T2"]["calls"] == 10 and report["T2"]["p50_ms"] > 0
