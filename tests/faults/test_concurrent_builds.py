"""Two ``timeline build`` processes on the same logs and the same empty cache at once (20 pairs):
both give the same answer, and the cache they filled together is whole (every entry a hit that
loads, the build from it the same answer, no temporary file left)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from timeline.builder import build, collect_logs
from timeline.cache import MIN_LOG_BYTES, ParseCache
from timeline.export import dumps
from timeline.scenario import Launch, write_sglang_log

PAIRS = range(20)
VOLATILE = ("generated_at", "host")


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    """Two logs big enough for the cache to keep (it skips small ones), written long ago (it
    keeps a file only once it is still)."""
    folder = tmp_path_factory.mktemp("logs")
    start = datetime(2026, 3, 2, 10, 0)
    for number, level in enumerate((90.0, 60.0)):
        log = write_sglang_log(
            folder / f"run{number}.log",
            [Launch(start.replace(hour=10 + 2 * number), 25, level, decode_every_s=0.25)],
            seed=number,
        )
        assert log.stat().st_size >= MIN_LOG_BYTES
        os.utime(log, (1_700_000_000, 1_700_000_000))
    return folder


def answer(text: str) -> dict:
    document = json.loads(text)
    for key in VOLATILE:
        document.pop(key, None)
    return document


def build_process(logs: Path, cache: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "timeline", "build", str(logs), "--log-tz", "UTC", "--json", str(out)],
        env=dict(os.environ, TIMELINE_CACHE_DIR=str(cache)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def test_two_builds_at_once_agree_and_leave_a_whole_cache(logs, tmp_path):
    reference = answer(dumps(build([logs], log_tz="UTC", cache=False)))
    problems = []
    for pair in PAIRS:
        cache = tmp_path / f"cache{pair}"
        outs = [tmp_path / f"{pair}-{side}.json" for side in "ab"]
        processes = [build_process(logs, cache, out) for out in outs]
        for process, out in zip(processes, outs, strict=True):
            _, stderr = process.communicate(timeout=120)
            if process.returncode != 0 or "cache" in stderr.decode():
                problems.append(f"pair {pair}: {out.name} exit {process.returncode}: {stderr.decode()[-300:]}")
            elif answer(out.read_text()) != reference:
                problems.append(f"pair {pair}: {out.name} differs from a build without the cache")
        parse_cache = ParseCache(cache)
        for source, path in collect_logs([logs]).files:
            lookup = parse_cache.look(path, source, False)
            if lookup is None or not lookup.hit or parse_cache.load(lookup) is None:
                problems.append(f"pair {pair}: the entry of {source} is not a loadable hit")
        leftovers = [p.name for p in cache.rglob("*") if p.name.endswith(".tmp")]
        if leftovers:
            problems.append(f"pair {pair}: temporary files left in the cache: {leftovers}")
        again = answer(dumps(build([logs], log_tz="UTC", cache=parse_cache)))
        if again != reference:
            problems.append(f"pair {pair}: a build from the cache differs")
    assert problems == []
