"""Many logs are parsed by one worker process a core (for speed): the same timeline, in the same order."""

from __future__ import annotations

import os
import random
from datetime import datetime, timedelta, timezone

import pytest

from timeline import builder
from timeline.builder import build
from timeline.environment import Environment
from timeline.export import dumps
from timeline.scenario import Launch, write_sglang_log

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _folder(tmp_path, count: int = 20):
    rng = random.Random(5)
    for i in range(count):
        start = datetime(2026, 1, 1, 8) + timedelta(hours=rng.randint(0, 400))
        sub = tmp_path / f"d{i % 3}"
        write_sglang_log(sub / f"server-{i:02d}.log", [Launch(start, minutes=3, throughput=90.0 + i % 5)], seed=i)
    (tmp_path / "d0" / "broken.log").write_bytes(b"\x00\x01" * 500)
    return tmp_path


def _document(folder, jobs: str) -> str:
    env = Environment(
        environ={"TIMELINE_JOBS": jobs, "TZ": "UTC"}, now=lambda: datetime(2026, 3, 1, tzinfo=timezone.utc)
    )
    return dumps(build([folder], log_tz="UTC", env=env))


def test_workers_give_the_same_timeline(tmp_path):
    folder = _folder(tmp_path)
    assert _document(folder, "2") == _document(folder, "1")


def test_how_many_workers():
    assert builder._jobs(3, 1 << 30, {}) == 1  # few files
    assert builder._jobs(1000, 1000, {}) == 1  # little data
    assert builder._jobs(1000, 1 << 30, {"TIMELINE_JOBS": "1"}) == 1
    assert builder._jobs(5, 10, {"TIMELINE_JOBS": "3"}) == 3
    assert builder._jobs(2, 10, {"TIMELINE_JOBS": "3"}) == 2


def test_workers_that_fail_leave_the_work_here(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    expected = _document(folder, "1")

    class Broken:
        def __init__(self, *args, **kwargs):
            raise OSError("no processes here")

    import concurrent.futures

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Broken)
    assert _document(folder, "2") == expected
