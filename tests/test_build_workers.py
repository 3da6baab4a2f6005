"""Many logs are parsed by one worker process a core (for speed): the same timeline, in the same order."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import pytest

from timeline import builder
from timeline.builder import build
from timeline.environment import Environment
from timeline.export import dumps
from timeline.parsers import reading
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


def test_the_workers_parse_the_logs(tmp_path, monkeypatch):
    """Each log is parsed by a worker, not by the main process after the workers failed (its
    fallback gives the same timeline, so only where the parsing ran tells them apart)."""
    folder = _folder(tmp_path / "logs")
    where = tmp_path / "pids"
    parse = reading.parse_file

    def noting(*args, **kwargs):
        with open(where, "a") as f:  # forked workers write here too
            f.write(f"{os.getpid()}\n")
        return parse(*args, **kwargs)

    monkeypatch.setattr(reading, "parse_file", noting)
    _document(folder, "2")
    pids = where.read_text().split()
    assert len(pids) == 21
    assert str(os.getpid()) not in pids


def test_the_workers_are_told_to_stop_as_the_last_result_comes_in(tmp_path, monkeypatch):
    """Their exit overlaps the joining and reading of the last result, and the build does not wait
    for it: they end on their own."""
    import concurrent.futures
    import multiprocessing
    import time

    folder = _folder(tmp_path)
    events: list[str] = []  # each result handed on, each shutdown asked for, in order
    stopping = builder._stopping_at_last

    def noting(pool, results, count):
        for result in stopping(pool, results, count):
            events.append("result")
            yield result

    monkeypatch.setattr(builder, "_stopping_at_last", noting)
    shutdown = concurrent.futures.ProcessPoolExecutor.shutdown

    def recording(self, wait=True, **kwargs):
        events.append(f"shutdown, wait={wait}")
        return shutdown(self, wait, **kwargs)

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "shutdown", recording)
    _document(folder, "2")
    assert events == ["result"] * 20 + ["shutdown, wait=False", "result", "shutdown, wait=True"]
    waited = 0.0
    while multiprocessing.active_children() and waited < 30:
        time.sleep(0.05)
        waited += 0.05
    assert not multiprocessing.active_children()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_logs_of_one_server_share_one_config(tmp_path, jobs):
    """Logs of the same ``server_args`` text hold one config dict (the JSON and the shifts work on
    it once), read in one process, or by the workers (one a chunk of logs a worker sends back)."""
    start = datetime(2026, 1, 1, 8)
    for i in range(48):
        launch = Launch(start + timedelta(hours=i), minutes=1, throughput=90.0)
        write_sglang_log(tmp_path / f"server-{i:02d}.log", [launch], seed=i)
    env = Environment(environ={"TIMELINE_JOBS": jobs, "TZ": "UTC"})
    runs = build([tmp_path], log_tz="UTC", env=env, cache=False).runs
    assert len(runs) == 48 and all(run.config == runs[0].config for run in runs)
    shared = len({id(run.config) for run in runs})
    assert shared == 1 if jobs == "1" else shared < 48


def test_how_many_workers(monkeypatch):
    monkeypatch.setattr(builder.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(builder.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(builder.os, "getloadavg", lambda: (0.5, 0.5, 0.5), raising=False)
    spare = builder.WORKERS_MIN_SPARE_BYTES
    below = builder.PIECE_MIN_BYTES - 1
    assert builder._jobs([below], {}) == 1  # one log: one process
    assert builder._jobs([below, spare - 1], {}) == 1  # too little besides the largest
    assert builder._jobs([400 << 20], {}) == 4  # one log big enough to be read in pieces: one a core
    assert builder._jobs([400 << 20], {"TIMELINE_JOBS": "2"}) == 2
    assert builder._jobs([3_000_000, 3_000_000], {}) == 1  # 3 MB besides the largest: too little
    assert builder._jobs([100 << 20] * 4, {}) == 4  # a few big logs: one a core (at most one a log)
    assert builder._jobs([40_000] * 100, {}) == 1  # 4 MB of small logs: too little
    assert builder._jobs([40_000] * 1000, {}) == 4  # 40 MB of them
    assert builder._jobs([40_000] * 10, {}) == 1  # 0.4 MB of them
    assert builder._jobs([1 << 30] * 1000, {"TIMELINE_JOBS": "1"}) == 1
    assert builder._jobs([10] * 5, {"TIMELINE_JOBS": "3"}) == 3
    assert builder._jobs([10] * 2, {"TIMELINE_JOBS": "3"}) == 2
    assert builder._jobs([], {}) == 1


def test_no_workers_when_every_core_is_busy(monkeypatch):
    """The load average of the last minute at or over the cores: one process (``make -l``)."""
    monkeypatch.setattr(builder.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(builder.os, "cpu_count", lambda: 2)
    sizes = [100 << 20] * 4
    for load, jobs in ((0.0, 2), (1.9, 2), (2.0, 1), (7.5, 1)):
        monkeypatch.setattr(builder.os, "getloadavg", lambda load=load: (load, 0.0, 0.0), raising=False)
        assert builder._jobs(sizes, {}) == jobs
        assert builder._jobs(sizes, {"TIMELINE_JOBS": "2"}) == 2  # asked for: whatever the load

    def unknown():
        raise OSError("no load average")

    monkeypatch.setattr(builder.os, "getloadavg", unknown, raising=False)
    assert builder._jobs(sizes, {}) == 2


def test_a_busy_machine_is_judged_by_all_its_cores(monkeypatch):
    """A process pinned to 2 of a machine's 64 cores (a container): the load average is the whole
    machine's, so 10 busy cores of 64 leave room for its 2 workers; 64 do not."""
    monkeypatch.setattr(builder.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(builder.os, "cpu_count", lambda: 64)
    sizes = [100 << 20] * 4
    for load, jobs in ((10.0, 2), (63.9, 2), (64.0, 1)):
        monkeypatch.setattr(builder.os, "getloadavg", lambda load=load: (load, 0.0, 0.0), raising=False)
        assert builder._jobs(sizes, {}) == jobs


def test_workers_that_fail_leave_the_work_here(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    expected = _document(folder, "1")

    class Broken:
        def __init__(self, *args, **kwargs):
            raise OSError("no processes here")

    import concurrent.futures

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Broken)
    assert _document(folder, "2") == expected


def _dying(item):
    """A worker's task that ends its worker as the kernel's OOM killer would (a module's function:
    the pool sends it to the workers by name)."""
    os._exit(9)


def test_a_worker_killed_leaves_the_rest_here(tmp_path, monkeypatch):
    """A worker that dies breaks the pool: what it had not sent back is read in the main process,
    and the timeline is the same."""
    folder = _folder(tmp_path)
    expected = _document(folder, "1")
    monkeypatch.setattr(builder, "_work", _dying)
    assert _document(folder, "2") == expected


def test_the_parsers_are_imported_before_the_workers_fork(tmp_path, monkeypatch):
    """Imported once in the main process, not again in each worker."""
    import concurrent.futures

    folder = _folder(tmp_path)
    calls = []
    monkeypatch.setattr(builder, "preload", lambda: calls.append("preload"))
    real = concurrent.futures.ProcessPoolExecutor

    def pool(*args, **kwargs):
        calls.append("fork")
        return real(*args, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", pool)
    _document(folder, "2")
    assert calls == ["preload", "fork"]
    calls.clear()
    _document(folder, "1")
    assert calls == []  # no workers: imported when first needed, as ever


def test_preload_imports_the_parsers_but_not_the_grammar():
    """The parsers before the workers fork; pyparsing only where a ``server_args`` text needs it."""
    code = (
        "import sys; from timeline.parsers import preload; preload(); "
        "print(all(m in sys.modules for m in ('timeline.parsers.reading', 'timeline.parsers.vllm')), "
        "'pyparsing' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False"]
