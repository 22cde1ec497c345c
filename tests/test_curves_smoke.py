"""`python -m benchmarks.curves` at tiny sizes: every curve measured, chart and JSON written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.curves import _built, main, merged


def test_curves_measure_every_size_and_draw(tmp_path: Path) -> None:
    svg, js = tmp_path / "c.svg", tmp_path / "c.json"
    args = ["--facts", "200,400", "--messages", "100", "--agents", "2,3"]
    args += ["--writers", "1,2", "--writer-seconds", "0.2"]
    assert main([*args, "--svg", str(svg), "--json", str(js), "--tmp", str(tmp_path)]) == 0
    curves = json.loads(js.read_text(encoding="utf-8"))
    facts = curves["fact search p50 µs (x: facts)"]
    assert set(facts) == {"sqlmem all", "sqlmem any", "sqlmem hybrid", "raw AND", "raw OR"}
    assert all([x for x, _ in points] == [200, 400] for points in facts.values())
    opened = curves["factory open (x: agents)"]
    assert [x for x, _ in opened["factory ms/agent"]] == [2, 3]
    writers = curves["appends/s (x: writer processes)"]
    assert set(writers) == {"sqlmem, one SQLite file", "raw apsw, one file (bare table)"}
    assert all([x for x, _ in points] == [1, 2] for points in writers.values())
    assert all(y > 0 for series in curves.values() for pts in series.values() for _, y in pts)
    text = svg.read_text(encoding="utf-8")
    assert text.startswith("<svg") and text.count("<polyline") == 5 + 4 + 2 + 2


def test_cached_stores_are_built_once_and_never_half(tmp_path: Path) -> None:
    """A store in the cache is reused as it is; an interrupted build leaves only its
    partial file, which the next build starts over."""
    path = tmp_path / "store.db"
    builds: list[Path] = []

    def fail(partial: Path) -> None:
        partial.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _built(path, fail)
    assert not path.exists()
    _built(path, lambda p: (builds.append(p), p.write_text("whole")))
    _built(path, lambda p: (builds.append(p), p.write_text("again")))
    assert path.read_text() == "whole" and len(builds) == 1


def test_redraw_merges_kept_figures_without_measuring(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    title = "fact search p50 µs (x: facts)"
    first.write_text(json.dumps({title: {"raw AND": [[10, 5.0], [100, 9.0]]}}), encoding="utf-8")
    second.write_text(
        json.dumps({title: {"raw AND": [[1000, 30.0], [100, 8.0]]}, "other": {"s": [[1, 2.0]]}}),
        encoding="utf-8",
    )
    assert merged([first, second]) == {
        title: {"raw AND": [(10, 5.0), (100, 8.0), (1000, 30.0)]},
        "other": {"s": [(1, 2.0)]},
    }
    svg = tmp_path / "c.svg"
    assert main(["--redraw", str(first), str(second), "--svg", str(svg)]) == 0
    assert svg.read_text(encoding="utf-8").count("<polyline") == 2
