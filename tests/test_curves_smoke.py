"""`python -m benchmarks.curves` at tiny sizes: every curve measured, chart and JSON written."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.curves import main


def test_curves_measure_every_size_and_draw(tmp_path: Path) -> None:
    svg, js = tmp_path / "c.svg", tmp_path / "c.json"
    args = ["--facts", "200,400", "--messages", "100", "--agents", "2,3"]
    assert main([*args, "--svg", str(svg), "--json", str(js), "--tmp", str(tmp_path)]) == 0
    curves = json.loads(js.read_text(encoding="utf-8"))
    facts = curves["fact search p50 µs (x: facts)"]
    assert set(facts) == {"sqlmem all", "sqlmem any", "sqlmem hybrid", "raw AND", "raw OR"}
    assert all([x for x, _ in points] == [200, 400] for points in facts.values())
    opened = curves["factory open (x: agents)"]
    assert [x for x, _ in opened["factory ms/agent"]] == [2, 3]
    assert all(y > 0 for series in curves.values() for pts in series.values() for _, y in pts)
    text = svg.read_text(encoding="utf-8")
    assert text.startswith("<svg") and text.count("<polyline") == 5 + 4 + 2
