"""`python -m benchmarks.recall`: a run on a synthetic LoCoMo-shaped file, and the fetch of
the public file failing cleanly (no network here: an unreachable address stands in)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import recall

REPO = Path(__file__).resolve().parents[1]

SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a kitten called Miso."},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "What colour is it?"},
        ],
    },
    "qa": [{"question": "kitten name", "evidence": ["D1:1"], "category": 1}],
}


def test_a_run_prints_json_rows(tmp_path: Path) -> None:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.recall", str(path), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(out.stdout)
    assert data["rows"][0]["recall@5"] == 100.0 and data["questions"] == 1
    assert data["command"].startswith("python -m benchmarks.recall")


def test_offline_fetch_says_so_and_returns_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(recall, "LOCOMO_URL", "http://127.0.0.1:9/locomo10.json")
    assert recall.fetch_locomo(tmp_path, timeout=2) is None
    assert "skipped" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_a_cached_file_is_used_without_the_network(tmp_path: Path) -> None:
    cached = tmp_path / "locomo10.json"
    cached.write_text("[]", encoding="utf-8")
    assert recall.fetch_locomo(tmp_path) == cached


def test_the_synthetic_benchmark_runs_as_history() -> None:
    """`python -m benchmarks.retrieval --history`: the same questions over the corpus
    stored as conversation history, every mode reported."""
    from benchmarks import retrieval

    results = retrieval.evaluate(30, history=True)
    assert set(results) == {
        f"{mode} ({part})"
        for mode in ("any", "vector", "hybrid")
        for part in ("paraphrase", "specific", "all")
    }
    for metrics in results.values():
        assert 0.0 <= metrics["recall@1"] <= metrics["recall@5"] <= metrics["recall@10"] <= 1.0
    # an exact code is found by its words: BM25 alone finds most specifics
    assert results["any (specific)"]["recall@10"] >= 0.8
