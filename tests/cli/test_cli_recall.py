"""`sqlmem recall` and `sqlmem.evaluation` on a small synthetic file in LoCoMo's shape:
which questions count, recall@k computed by hand, each mode's row, the selection of
conversations, and bad input ending in one error line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sqlmem.cli import main
from sqlmem.embedders import HashEmbedder
from sqlmem.evaluation.conversations import load_conversations, pick
from sqlmem.evaluation.recall import measure


def _turn(dia_id: str, speaker: str, text: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text}


SAMPLES: list[dict[str, Any]] = [
    {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("D1:1", "Ana", "I adopted a kitten called Miso."),
                _turn("D1:2", "Bo", "Lovely! What colour is it?"),
                _turn("D1:3", "Ana", "Orange with white paws."),
            ],
            "session_2_date_time": "10:00 am on 9 June, 2023",
            "session_2": [
                _turn("D2:1", "Bo", "I started pottery classes on Tuesdays."),
                _turn("D2:2", "Ana", "Send me a photo of your first bowl."),
            ],
            "session_3_date_time": "9:00 am on 1 July, 2023",  # a date with no turns
        },
        "qa": [
            {"question": "What is the kitten called?", "evidence": ["D1:1"], "category": 1},
            {"question": "pottery bowl", "evidence": ["D2:1", "D2:2"], "category": 4},
            # two evidence ids in one string, as some LoCoMo entries write them
            {"question": "kitten paws", "evidence": ["D1:1; D1:3"], "category": 2},
            {"question": "Did Bo adopt a dog?", "evidence": ["D1:1"], "category": 5},
            {"question": "Where is the photo?", "evidence": ["D9:9"], "category": 1},
        ],
    },
    {
        "sample_id": "conv-b",
        "conversation": {
            "speaker_a": "Cy",
            "speaker_b": "Di",
            "session_1": [
                _turn("D1:1", "Cy", "My sister lives in Porto."),
                _turn("D1:2", "Di", "I have never been to Portugal."),
            ],
        },
        "qa": [{"question": "Where does the sister live?", "evidence": ["D1:1"]}],
    },
]


@pytest.fixture
def bench_file(tmp_path: Path) -> Path:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(SAMPLES), encoding="utf-8")
    return path


def test_which_questions_count(bench_file: Path) -> None:
    first, second = load_conversations(bench_file)
    assert [q.text for q in first.questions] == [
        "What is the kitten called?",
        "pottery bowl",
        "kitten paws",
    ]  # adversarial (category 5) and unknown evidence left out
    assert first.questions[2].evidence == {"D1:1", "D1:3"}
    assert [s.number for s in first.sessions] == [1, 2]
    assert first.sessions[0].started is not None and first.sessions[0].started.day == 8
    assert second.sessions[0].started is None and len(second.questions) == 1
    assert pick([first, second], "1") == [second]
    assert pick([first, second], "0-1") == [first, second]


def test_recall_at_k_by_hand(bench_file: Path, tmp_path: Path) -> None:
    """ "pottery bowl" matches D2:1 and D2:2 (both evidence), "kitten paws" D1:1 and D1:3
    (both evidence), the first question D1:1: every question finds all its evidence within
    five results, except none: recall 100 at every depth for BM25."""
    conversations = load_conversations(bench_file)
    (row,) = measure(conversations, tmp_path / "work", modes=["any"])
    assert row.questions == 4
    assert row.recall(5) == pytest.approx(100.0)
    assert len(row.latencies_ms) == len(row.cpu_ms) == 4


def test_partial_recall_counts_the_share_of_evidence_found(tmp_path: Path) -> None:
    sample = json.loads(json.dumps(SAMPLES[1]))
    sample["qa"] = [{"question": "sister", "evidence": ["D1:1", "D1:2"]}]
    path = tmp_path / "one.json"
    path.write_text(json.dumps(sample), encoding="utf-8")
    (row,) = measure(load_conversations(path), tmp_path / "w", modes=["any"])
    assert row.recall(5) == pytest.approx(50.0)  # only D1:1 holds the word


def test_every_mode_with_an_embedder(bench_file: Path, tmp_path: Path) -> None:
    rows = measure(
        load_conversations(bench_file),
        tmp_path / "w",
        modes=["any", "vector", "hybrid"],
        embedder=HashEmbedder(64),
        facts=True,
    )
    assert [(r.kind, r.mode) for r in rows] == [
        (kind, mode) for kind in ("history", "facts") for mode in ("any", "vector", "hybrid")
    ]
    for row in rows:
        assert row.questions == 4
        assert 0.0 <= row.recall(5) <= row.recall(10) <= row.recall(25) <= 100.0
    assert rows[0].recall(25) == pytest.approx(100.0)


def test_the_command(bench_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recall", str(bench_file), "--conversations", "0", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["conversations"] == ["conv-a"] and data["questions"] == 3
    assert [(r["kind"], r["mode"]) for r in data["rows"]] == [("history", "any")]
    assert data["rows"][0]["recall@5"] == 100.0
    assert main(["recall", str(bench_file)]) == 0
    text = capsys.readouterr().out
    assert "4 questions over 7 turns in 2 conversation(s)" in text
    assert "R@10" in text and "history  any" in text


@pytest.mark.parametrize(
    "argv",
    [
        ["--conversations", "7"],
        ["--conversations", "x-y"],
        ["--embedder", "bogus"],
        ["--embedder", "onnx:/nonexistent-model-folder"],
    ],
)
def test_bad_input_is_one_error_line(
    bench_file: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    status = main(["recall", str(bench_file), *argv])
    err = capsys.readouterr().err
    assert status != 0 and err.startswith("sqlmem") and len(err.strip().splitlines()) == 1


def test_a_file_of_another_shape_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "other.json"
    path.write_text('{"hello": 1}', encoding="utf-8")
    assert main(["recall", str(path)]) != 0
    assert "conversation" in capsys.readouterr().err
