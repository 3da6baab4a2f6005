"""One log read in pieces, a process each (timeline.pieces), gives exactly what reading it whole
gives: the same runs, line numbers, diagnostics in the same order, samples; cut at every launch a
piece can start at, one at a time and all at once, on the fixtures and on generated logs of
several launches (dated and time-only stamps, midnights, clocks going back, crashes), with the
compiled line scanner and with numpy alone."""

from __future__ import annotations

import concurrent.futures
import os
import random
import re
import tempfile
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timeline import builder, pieces
from timeline.builder import build
from timeline.environment import Environment
from timeline.export import dumps
from timeline.parsers import parse_file, reading, sglang_fast
from timeline.scenario import Launch, sglang_launch_lines

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LOGS = sorted(FIXTURES.rglob("*.log"))
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True, params=["compiled", "numpy"])
def scanner(request, monkeypatch) -> str:
    """The block reader with the compiled scanner (skipped where it is not built), or numpy alone."""
    compiled = request.param == "compiled"
    if compiled and sglang_fast._scan is None:
        pytest.skip("the compiled scanner (parsers/_scan.c) is not built")
    monkeypatch.setattr(reading, "SGLANG_SHAPES", sglang_fast.Shapes(reading.OTHER_FAMILIES, compiled=compiled))
    monkeypatch.setattr(sglang_fast, "FAST_MIN_BYTES", 0)  # small logs take the block reader too, as big ones
    return request.param


def _text(parsed) -> str:
    return repr([vars(r) for r in parsed.runs]) + "\n" + "\n".join(map(str, parsed.diagnostics))


def _in_pieces(path: Path, cuts: list[tuple[int, str]], samples: bool):
    spans = pieces.spans_at(pieces.launches(path).stamp, cuts)
    read = [pieces.read_piece(path, span, "x.log", samples, None) for span in spans]
    data = path.read_bytes()
    for piece, span in zip(read, spans, strict=True):  # each piece's count of lines numbers the next one's
        lines = data[span.start : span.end]
        assert piece is None or piece.line_number == lines.count(b"\n") + (not lines.endswith(b"\n"))
    return pieces.joined(read, "x.log", samples)


def _cuttings(path: Path) -> list[list[tuple[int, str]]]:
    """Every launch a piece can start at, one at a time, then all of them."""
    cuts = pieces.launches(path).lines
    return [[cut] for cut in cuts] + ([cuts] if len(cuts) > 1 else [])


@pytest.mark.parametrize("samples", [False, True], ids=["series", "samples"])
def test_fixtures_read_in_pieces_are_read_whole(samples: bool) -> None:
    joined = 0
    for log in LOGS:
        whole = _text(parse_file(log, source="x.log", keep_samples=samples))
        for cuts in _cuttings(log):
            parsed = _in_pieces(log, cuts, samples)
            if parsed is not None:
                joined += 1
                assert _text(parsed) == whole, (log.name, [offset for offset, _ in cuts])
    # appended launches, a crash then a relaunch, DP peers, a tail then a launch; the eagle3 and
    # noise logs start with lines without a header before their launch: read whole
    assert joined >= 4


_DATE = re.compile(r"^\[\d{4}-\d\d-\d\d ", re.MULTILINE)


@pytest.mark.parametrize("samples", [False, True], ids=["series", "samples"])
def test_what_later_pieces_say_names_the_file_s_lines(tmp_path: Path, samples: bool) -> None:
    """A piece's lines are numbered from 1, then as the file's when the pieces are joined: its
    runs' lines, a crash's, the samples', the warnings' (a server_args text not read whole, a
    stamp that is no date, a decode line without a throughput, an over-long line)."""
    rng = random.Random(7)
    first, second, third = (Launch(datetime(2026, 1, 1, 8 + 3 * n), minutes=20, throughput=90.0) for n in range(3))
    middle = sglang_launch_lines(second, rng)
    half = len(middle) // 2
    decode = "Decode batch. #running-req: 1, #token: 100, token usage: 0.01, gen throughput (token/s): {}"
    middle[half:half] = [
        f"[2026-13-01 11:05:01] {decode.format('80.00')}",
        f"[2026-01-01 11:05:02] {decode.format('n/a')}",
        "[2026-01-01 11:05:03] " + "x" * (2 << 20),  # across a read: not read, noted
    ]
    middle += ["Traceback (most recent call last):", "RuntimeError: CUDA error: an illegal memory access"]
    last = sglang_launch_lines(third, rng)
    last[0] = last[0].replace("server_args=ServerArgs(", "server_args=ServerArgs(x=, ")
    path = tmp_path / "three.log"
    path.write_text("\n".join(sglang_launch_lines(first, rng) + middle + last) + "\n")
    whole = parse_file(path, source="x.log", keep_samples=samples)
    said = sorted(d.message.split(":")[0].split(" (")[0] for d in whole.diagnostics)
    assert said == [
        "1 Decode batch line(s) without a numeric gen throughput",
        "line longer than 65536 characters",
        "server_args",
        "time stamp '2026-13-01 11",
    ]
    assert [run.status for run in whole.runs] == ["ok", "crashed", "ok"]
    cuts = pieces.launches(path).lines
    assert len(cuts) == 2
    parsed = _in_pieces(path, cuts, samples)
    assert parsed is not None and _text(parsed) == _text(whole)


@st.composite
def launches_log(draw) -> tuple[str, bool]:
    """Perhaps the tail of a launch, then several launches one after the other, each dated or
    time-only (SGLang <= 0.3.2), starting later or earlier than the one before (a clock set back),
    some across midnight, some crashing, some without stats; and whether every launch line can
    start a piece (no launch repeated, no lines without a header before one, no time-only stamp
    among dated ones)."""
    rng = random.Random(draw(st.integers(0, 1 << 16)))
    start = datetime(2026, 1, 1, draw(st.sampled_from([0, 8, 22, 23])), draw(st.integers(0, 59)))
    lines: list[str] = []
    if draw(st.booleans()):  # the end of an earlier launch's log, without its launch line nor stats
        lines.append(f"[{start - timedelta(hours=1):%Y-%m-%d %H:%M:%S}] The server is fired up and ready to roll!")
    clean = True
    for _ in range(draw(st.integers(2, 5))):
        minutes = draw(st.sampled_from([0.5, 3, 20, 90]))
        launch = Launch(start, minutes=minutes, throughput=90.0, decode_every_s=draw(st.sampled_from([15.0, 40.0])))
        block = sglang_launch_lines(launch, rng)
        how = draw(st.sampled_from(["dated", "dated", "time-only", "time-only", "mixed"]))
        if how == "time-only":
            block = _DATE.sub("[", "\n".join(block)).split("\n")
        elif how == "mixed":  # time-only stamps among dated ones: they take their date from them
            block = [_DATE.sub("[", line) if i % 3 == 2 else line for i, line in enumerate(block)]
            clean = False
        ending = draw(st.sampled_from(["", "", "crash", "no-stats", "repeat", "preamble"]))
        if ending == "crash":
            block += ["Traceback (most recent call last):", "RuntimeError: CUDA error: an illegal memory access"]
        elif ending == "no-stats":
            block = [line for line in block if "batch" not in line]
        elif ending == "repeat":  # the same launch line again, at once: not a new run
            block.insert(1, block[0])
            clean = False
        elif ending == "preamble":  # warnings without a header before the launch line
            block.insert(0, "WARNING: the launch's own first words")
            clean = False
        lines += block
        start += timedelta(minutes=minutes + draw(st.sampled_from([-600, -30, 5, 60, 600])))
    return "\n".join(lines) + "\n", clean


@SETTINGS
@given(log=launches_log(), samples=st.booleans(), mtime_after=st.sampled_from([None, 5, 3000]))
def test_generated_logs_read_in_pieces_are_read_whole(log: tuple[str, bool], samples: bool, mtime_after) -> None:
    text, clean = log
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "launches.log"
        path.write_text(text, encoding="ascii")
        if mtime_after is not None:  # the dates of time-only stamps come from the mtime
            mtime = datetime(2026, 1, 3, tzinfo=timezone.utc) + timedelta(minutes=mtime_after)
            os.utime(path, (mtime.timestamp(), mtime.timestamp()))
        whole = _text(parse_file(path, source="x.log", keep_samples=samples))
        cuttings = _cuttings(path)
        assert cuttings
        for cuts in cuttings:
            parsed = _in_pieces(path, cuts, samples)
            assert parsed is not None or not clean, [offset for offset, _ in cuts]
            if parsed is not None:
                assert _text(parsed) == whole, [offset for offset, _ in cuts]


def test_a_piece_of_a_changed_file_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "two.log"
    rng = random.Random(1)
    first, second = (Launch(datetime(2026, 1, 1, h), minutes=3, throughput=90.0) for h in (8, 9))
    path.write_text("\n".join(sglang_launch_lines(first, rng) + sglang_launch_lines(second, rng)) + "\n")
    found = pieces.launches(path)
    spans = pieces.spans_at(found.stamp, found.lines)
    assert pieces.read_piece(path, spans[1], "x.log", False, None) is not None
    with open(path, "a") as handle:
        handle.write("[2026-01-01 09:10:00] The server is fired up and ready to roll!\n")
    assert pieces.read_piece(path, spans[1], "x.log", False, None) is None  # the file is read whole


def test_a_file_rewritten_after_its_launches_were_found_is_read_whole(tmp_path: Path) -> None:
    # the cuts are the old content's offsets: a piece must not be read at them in the new one
    # (the stamp was once taken after the search, from the new file, and five runs came of three)
    path = tmp_path / "two.log"
    rng = random.Random(2)
    launches = [Launch(datetime(2026, 1, 1, h), minutes=3, throughput=90.0) for h in (8, 9)]
    path.write_text("\n".join(line for launch in launches for line in sglang_launch_lines(launch, rng)) + "\n")
    found = pieces.launches(path)
    rewritten = [Launch(datetime(2026, 1, 2, h), minutes=m, throughput=80.0) for h, m in ((8, 5), (9, 1))]
    path.write_text("\n".join(line for launch in rewritten for line in sglang_launch_lines(launch, rng)) + "\n")
    os.utime(path, ns=(found.stamp[1] + 10**9, found.stamp[1] + 10**9))
    spans = pieces.spans_at(found.stamp, found.lines)
    assert [pieces.read_piece(path, span, "x.log", False, None) for span in spans] == [None, None]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("samples", [False, True], ids=["series", "samples"])
def test_a_build_reads_a_big_log_in_pieces(tmp_path: Path, monkeypatch, samples: bool) -> None:
    """``timeline build`` with two workers reads one log in two pieces: the same timeline."""
    rng = random.Random(3)
    path = tmp_path / "server.log"
    lines = []
    for number in range(6):
        launch = Launch(datetime(2026, 1, 1, 8) + timedelta(hours=5 * number), minutes=30, throughput=90.0 + number)
        block = sglang_launch_lines(launch, rng)
        lines += _DATE.sub("[", "\n".join(block)).split("\n") if number % 3 == 2 else block
    path.write_text("\n".join(lines) + "\n")
    joined = []
    real = pieces.joined

    def spy(*args):
        joined.append(real(*args))
        return joined[-1]

    monkeypatch.setattr(pieces, "joined", spy)
    monkeypatch.setattr(builder, "PIECE_MIN_BYTES", 1)

    def document(jobs: str) -> str:
        env = Environment(environ={"TIMELINE_JOBS": jobs}, now=lambda: datetime(2026, 3, 1, tzinfo=timezone.utc))
        return dumps(build([path], log_tz="UTC", env=env, cache=False, keep_samples=samples))

    one = document("1")
    assert not joined
    assert document("2") == one
    assert len(joined) == 1 and joined[0] is not None  # read in pieces, joined


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_pieces_the_workers_cannot_be_handed_are_read_here(tmp_path: Path, monkeypatch) -> None:
    """A piece's task that cannot be pickled (its run finisher a lambda, as a benchmark's patch
    made it) is read in the main process, the same timeline, and no pool is started: a task that
    fails to pickle after the pool's shutdown leaves its manager thread, and the process's exit,
    waiting for good (https://github.com/python/cpython/issues/116685)."""
    rng = random.Random(4)
    path = tmp_path / "server.log"
    launches = [Launch(datetime(2026, 1, 1, 8) + timedelta(hours=5 * n), minutes=20, throughput=90.0) for n in range(4)]
    path.write_text("\n".join(line for launch in launches for line in sglang_launch_lines(launch, rng)) + "\n")
    monkeypatch.setattr(builder, "PIECE_MIN_BYTES", 1)
    pools: list[int] = []

    class CountedPool(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, *args, **kwargs) -> None:
            pools.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", CountedPool)

    def document(jobs: str) -> str:
        env = Environment(environ={"TIMELINE_JOBS": jobs}, now=lambda: datetime(2026, 3, 1, tzinfo=timezone.utc))
        return dumps(build([path], log_tz="UTC", env=env, cache=False))

    one = document("1")
    assert document("2") == one and pools == [1]  # tasks it can send: read by the workers
    monkeypatch.setattr(builder, "_run_finisher", lambda keep_samples: lambda run: None)
    done: list[str] = []
    reading_it = threading.Thread(target=lambda: done.append(document("2")), daemon=True)
    reading_it.start()
    reading_it.join(60)
    assert done == [one] and pools == [1]


# The workers are handed ``builder._work`` by name: its stand-ins below are functions of this module.
_REAL_WORK = builder._work
_STARTER: list = []  # the process that started the build, then the tasks it ran


def _working_where(item):
    """``builder._work``, with the process that ran the task."""
    return os.getpid(), _REAL_WORK(item)


def _dying_in_workers(item):
    """``builder._work`` in the process that started the build; a worker dies as the kernel's OOM
    killer ends one."""
    if os.getpid() != _STARTER[0]:
        os._exit(9)
    _STARTER.append(item)
    return _REAL_WORK(item)


def _four_launches(tmp_path: Path) -> Path:
    rng = random.Random(6)
    path = tmp_path / "server.log"
    launches = [Launch(datetime(2026, 1, 1, 8) + timedelta(hours=5 * n), minutes=20, throughput=90.0) for n in range(4)]
    path.write_text("\n".join(line for launch in launches for line in sglang_launch_lines(launch, rng)) + "\n")
    return path


def _document(path: Path, jobs: str) -> str:
    env = Environment(environ={"TIMELINE_JOBS": jobs}, now=lambda: datetime(2026, 3, 1, tzinfo=timezone.utc))
    return dumps(build([path], log_tz="UTC", env=env, cache=False))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_the_first_piece_is_read_by_the_process_that_started_the_build(tmp_path: Path, monkeypatch) -> None:
    """Two pieces: the first read here (no worker waited on), the second by a worker; the same timeline."""
    path = _four_launches(tmp_path)
    monkeypatch.setattr(builder, "PIECE_MIN_BYTES", 1)
    one = _document(path, "1")
    monkeypatch.setattr(builder, "_work", _working_where)
    real, ran = pieces.joined, []

    def spy(read, *args):
        ran.extend(pid for pid, _ in read)
        return real([piece for _, piece in read], *args)

    monkeypatch.setattr(pieces, "joined", spy)
    assert _document(path, "2") == one
    assert len(ran) == 2 and ran[0] == os.getpid() != ran[1]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_piece_worker_killed_leaves_the_log_read_here(tmp_path: Path, monkeypatch) -> None:
    """The worker reading the second piece dies, the first read here: the log is then read whole
    here, the same timeline."""
    path = _four_launches(tmp_path)
    monkeypatch.setattr(builder, "PIECE_MIN_BYTES", 1)
    one = _document(path, "1")
    monkeypatch.setattr(builder, "_work", _dying_in_workers)
    _STARTER[:] = [os.getpid()]
    assert _document(path, "2") == one
    assert [task[0] for task in _STARTER[1:]] == [pieces.read_piece]


def test_a_big_log_without_launches_starts_no_workers(tmp_path: Path, monkeypatch) -> None:
    """Nothing to cut it at (a vLLM log): read here, as a log under ``PIECE_MIN_BYTES`` is."""
    log = tmp_path / "vllm.log"
    log.write_bytes((FIXTURES / "vllm" / "vllm-0.8.5-v1-spec-decode.log").read_bytes())
    monkeypatch.setattr(builder, "PIECE_MIN_BYTES", 1)
    monkeypatch.setattr(builder.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(builder.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(builder.os, "getloadavg", lambda: (0.0, 0.0, 0.0), raising=False)
    assert builder._jobs([log.stat().st_size], {}) == 2
    started = []

    class Pool:
        def __init__(self, *args, **kwargs) -> None:
            started.append(args)
            raise OSError("no workers here")

    import concurrent.futures

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Pool)
    env = Environment(environ={}, now=lambda: datetime(2026, 3, 1, tzinfo=timezone.utc))
    assert build([log], log_tz="UTC", env=env, cache=False).runs
    assert started == []


def test_a_span_of_a_log_is_not_read_line_by_line(tmp_path: Path) -> None:
    # the line reader knows nothing of spans: it would read the whole file from line 1
    from timeline.parsers.framing import LogLines

    path = tmp_path / "two.log"
    path.write_text("[2026-01-01 08:00:00] a\n[2026-01-01 09:00:00] b\n")
    log = LogLines(path, span=(24, None, 1))
    with pytest.raises(ValueError, match="byte_blocks"):
        next(iter(log))


def test_the_plan_cuts_at_the_first_launch_after_each_share(tmp_path: Path) -> None:
    # piece k ends where k / count of the file is: with 2 pieces at 50%, with 3 at 33.3% and 66.7%
    rng = random.Random(4)
    path = tmp_path / "ten.log"
    launches = [Launch(datetime(2026, 1, 1, 8 + h), minutes=5, throughput=90.0) for h in range(10)]
    path.write_text("\n".join(line for launch in launches for line in sglang_launch_lines(launch, rng)) + "\n")
    size = path.stat().st_size
    every = [offset for offset, _ in pieces.launches(path).lines]
    assert len(every) == 9  # the first launch is the file's first line: no cut there

    def first_after(share: float) -> int:
        return min(offset for offset in every if offset >= int(size * share))

    two = pieces.plan(path, 2, size)
    assert two is not None and [span.start for span in two] == [0, first_after(1 / 2)]
    assert [span.end for span in two] == [two[1].start, None]
    three = pieces.plan(path, 3, size)
    assert three is not None
    assert [span.start for span in three] == [0, first_after(1 / 3), first_after(2 / 3)]
    without = tmp_path / "none.log"
    without.write_text("[2026-01-01 08:00:00] Decode batch. #running-req: 1, gen throughput (token/s): 90.0\n")
    assert pieces.plan(without, 2, without.stat().st_size) is None


@pytest.mark.parametrize("minutes, cut", [((60, 40), True), ((90, 10), False)])
def test_the_plan_looks_for_a_cut_within_half_a_share_past_it(tmp_path: Path, minutes, cut) -> None:
    # two pieces: the first should end at 50% of the file, a launch is looked for up to 25% past it
    rng = random.Random(5)
    path = tmp_path / "two.log"
    launches = [
        Launch(datetime(2026, 1, 1, 8), minutes=minutes[0], throughput=90.0),
        Launch(datetime(2026, 1, 1, 10), minutes=minutes[1], throughput=90.0),
    ]
    path.write_text("\n".join(line for launch in launches for line in sglang_launch_lines(launch, rng)) + "\n")
    size = path.stat().st_size
    (second,) = [offset for offset, _ in pieces.launches(path).lines]
    assert (0.5 < second / size < 0.75) is cut
    two = pieces.plan(path, 2, size)
    assert (None if two is None else [span.start for span in two]) == ([0, second] if cut else None)
