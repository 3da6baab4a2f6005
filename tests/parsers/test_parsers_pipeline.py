"""The fast path read by two processes (parsers.sglang_fast._Classifier, issue 7) gives exactly
what the line-by-line path gives; a worker that fails or disagrees only costs speed."""

from __future__ import annotations

import os
import random
from datetime import datetime
from pathlib import Path

import pytest

from parsers import framing, parse_file, sglang_fast
from timeline.scenario import Launch, sglang_launch_lines

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sglang"
LOGS = sorted(FIXTURES.glob("*.log"))

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _text(parsed) -> str:
    return repr([vars(r) for r in parsed.runs]) + "\n" + "\n".join(map(str, parsed.diagnostics))


def both(path: Path, monkeypatch, samples: bool = False) -> tuple[str, str]:
    workers = []
    real = sglang_fast._Classifier

    def spy(*args):
        workers.append(1)
        return real(*args)

    with monkeypatch.context() as patch:
        patch.setattr(sglang_fast, "FAST_MIN_BYTES", 0)
        patch.setattr(sglang_fast, "PIPELINE_MIN_BYTES", 0)
        patch.setattr(sglang_fast, "_cores", lambda: 2)
        patch.setattr(sglang_fast, "_Classifier", spy)
        fast = parse_file(path, source="x.log", keep_samples=samples)
    assert workers, "the worker was not used"
    with monkeypatch.context() as patch:
        patch.setattr(sglang_fast, "FAST_MIN_BYTES", 1 << 62)
        slow = parse_file(path, source="x.log", keep_samples=samples)
    return _text(fast), _text(slow)


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_fixtures_give_the_same_result(log: Path, monkeypatch) -> None:
    monkeypatch.setattr(framing, "HEAD_BYTES", 300)
    monkeypatch.setattr(framing, "BLOCK_BYTES", 700)
    for samples in (False, True):
        fast, slow = both(log, monkeypatch, samples)
        assert fast == slow


def test_scenario_log_with_noise(tmp_path: Path, monkeypatch) -> None:
    rng = random.Random(3)
    lines = sglang_launch_lines(Launch(datetime(2026, 1, 1, 8), 30, 93.0, decode_every_s=2), rng)
    lines += sglang_launch_lines(Launch(datetime(2026, 1, 1, 9), 5, 60.0, accept_len=None, speculative=None), rng)
    noisy = []
    for i, line in enumerate(lines):
        noisy.append(line)
        if i % 13 == 0:
            noisy.append('INFO:     127.0.0.1:5555 - "POST /generate HTTP/1.1" 200 OK')
        if i % 97 == 0:
            noisy.append(line.replace("gen throughput (token/s): ", "gen throughput (token/s): 1e"))
    path = tmp_path / "scenario.log"
    path.write_text("\n".join(noisy) + "\n" + "x" * 500 + "\n", encoding="utf-8")
    monkeypatch.setattr(framing, "BLOCK_BYTES", 4096)
    monkeypatch.setattr(framing, "MAX_LINE_CHARS", 300)  # the long line comes as a text block
    monkeypatch.setattr(sglang_fast, "MAX_SHAPES", 8)  # shapes forgotten on both sides, again and again
    for samples in (False, True):
        fast, slow = both(path, monkeypatch, samples)
        assert fast == slow


def test_a_worker_that_fails_costs_only_speed(tmp_path: Path, monkeypatch) -> None:
    log = LOGS[0]
    monkeypatch.setattr(framing, "BLOCK_BYTES", 700)
    monkeypatch.setattr(sglang_fast, "_classify", lambda *args: 1 / 0)
    fast, slow = both(log, monkeypatch)
    assert fast == slow
