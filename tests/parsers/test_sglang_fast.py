"""The fast path (parsers.sglang_fast: whole blocks, line shapes, numpy) gives exactly what the
line-by-line path gives: on the fixtures, on generated logs, across block boundaries. Each test
runs twice: with the compiled line scanner (parsers/_scan.c) and with numpy alone, the reference."""

from __future__ import annotations

import gzip
import random
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timeline.parsers import framing, parse_file, reading, sglang_fast
from timeline.scenario import Launch, sglang_launch_lines

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sglang"
LOGS = sorted(FIXTURES.glob("*.log"))
REAL_LINES = sorted({line for log in LOGS for line in log.read_bytes().decode("utf-8", "replace").splitlines()})
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True, params=["compiled", "numpy"])
def scanner(request, monkeypatch) -> str:
    """The fast path reads blocks with the compiled scanner (skipped where it is not built), or with
    numpy alone: a fresh book of shapes either way."""
    compiled = request.param == "compiled"
    if compiled and sglang_fast._scan is None:
        pytest.skip("the compiled scanner (parsers/_scan.c) is not built")
    book = sglang_fast.Shapes(reading.OTHER_FAMILIES, compiled=compiled)
    assert (book.index is not None) == compiled
    monkeypatch.setattr(reading, "SGLANG_SHAPES", book)
    return request.param


def both(path: Path, monkeypatch, samples: bool = False, samples_at_once: int = 1) -> tuple[str, str]:
    """repr of parse_file's result on the fast path and on the line-by-line path (the fast path
    reads samples a column at a time from ``samples_at_once`` lines in a row: by default always)."""
    calls = []
    real = sglang_fast.feed_blocks

    def spy(*args):
        calls.append(1)
        return real(*args)

    with monkeypatch.context() as patch:
        patch.setattr(sglang_fast, "FAST_MIN_BYTES", 0)
        patch.setattr(sglang_fast, "SAMPLES_AT_ONCE", samples_at_once)
        patch.setattr(sglang_fast, "feed_blocks", spy)
        fast = parse_file(path, source="x.log", keep_samples=samples)
    assert calls, "the fast path was not taken"
    with monkeypatch.context() as patch:
        patch.setattr(sglang_fast, "FAST_MIN_BYTES", 1 << 62)
        patch.setattr(sglang_fast, "LOADED_MIN_BYTES", 1 << 62)
        slow = parse_file(path, source="x.log", keep_samples=samples)
    return _text(fast), _text(slow)


def _text(parsed) -> str:
    return repr([vars(r) for r in parsed.runs]) + "\n" + "\n".join(map(str, parsed.diagnostics))


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
@pytest.mark.parametrize("samples", [False, True], ids=["series", "samples"])
def test_fixtures_give_the_same_result(log: Path, samples: bool, monkeypatch) -> None:
    fast, slow = both(log, monkeypatch, samples)
    assert fast == slow


def test_samples_are_judged_only_when_kept(monkeypatch) -> None:
    """A stats shape's sample is judged (``_samples_match``) only once a parser that keeps samples
    reads its lines, once; a build without samples never judges one."""
    judged = []
    real = sglang_fast._samples_match
    monkeypatch.setattr(sglang_fast, "_samples_match", lambda text, spans: judged.append(text) or real(text, spans))
    log = FIXTURES / "sglang-0.5-eagle3.log"
    both(log, monkeypatch)
    assert judged == []
    both(log, monkeypatch, samples=True)
    assert judged and len(judged) == len(set(judged)) == reading.SGLANG_SHAPES.kinds.count(sglang_fast._STATS)
    assert not reading.SGLANG_SHAPES.table().unchecked.any()


@pytest.mark.parametrize("first", ["series", "samples"])
def test_a_shape_whose_sample_differs_is_read_line_by_line(first: str, monkeypatch) -> None:
    """A stats shape whose sample the fast path would read otherwise than the generic parser
    (made so here) becomes generic when samples are first kept, whether the shape was judged for
    a parse without samples before or is judged now: the samples are the generic parser's."""
    log = FIXTURES / "sglang-0.5-eagle3.log"
    if first == "series":
        both(log, monkeypatch)
    monkeypatch.setattr(sglang_fast, "_samples_match", lambda text, spans: False)
    book = reading.SGLANG_SHAPES
    read_in_bulk = book.block_stats_lines
    fast, slow = both(log, monkeypatch, samples=True)
    assert fast == slow
    assert sglang_fast._STATS not in book.kinds and book.block_stats_lines == read_in_bulk


def test_compressed_and_tiny_blocks(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(framing, "HEAD_BYTES", 300)
    monkeypatch.setattr(framing, "BLOCK_BYTES", 700)
    for log in LOGS:
        packed = tmp_path / (log.name + ".gz")
        packed.write_bytes(gzip.compress(log.read_bytes()))
        for path in (log, packed):
            fast, slow = both(path, monkeypatch, samples=True)
            assert fast == slow, path


def test_scenario_logs_with_crlf_and_noise(tmp_path: Path, monkeypatch) -> None:
    rng = random.Random(7)
    lines = sglang_launch_lines(Launch(datetime(2026, 1, 1, 8), 30, 93.0, decode_every_s=2), rng)
    lines += sglang_launch_lines(Launch(datetime(2026, 1, 1, 9), 5, 60.0, accept_len=None, speculative=None), rng)
    noisy = []
    for i, line in enumerate(lines):
        noisy.append(line)
        if i % 13 == 0:
            noisy.append('INFO:     127.0.0.1:5555 - "POST /generate HTTP/1.1" 200 OK')
        if i % 41 == 0:
            noisy.append("")
        if i % 97 == 0:
            noisy.append(line.replace("gen throughput (token/s): ", "gen throughput (token/s): 1e"))
    for eol in ("\n", "\r\n"):
        path = tmp_path / "scenario.log"
        path.write_bytes(eol.join(noisy).encode())
        monkeypatch.setattr(framing, "BLOCK_BYTES", 4096)
        for samples in (False, True):
            fast, slow = both(path, monkeypatch, samples)
            assert fast == slow


def test_overlong_line_is_cut_the_same_way(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(framing, "HEAD_BYTES", 8)
    monkeypatch.setattr(framing, "BLOCK_BYTES", 8)
    monkeypatch.setattr(framing, "MAX_LINE_CHARS", 20)
    path = tmp_path / "long.log"
    path.write_text(REAL_LINES[0][:10] + "\n" + "y" * 100 + "\n" + "\u00e9" * 30 + "\nafter\n", encoding="utf-8")
    fast, slow = both(path, monkeypatch)
    assert fast == slow


@st.composite
def mangled_log(draw) -> bytes:
    lines = []
    for _ in range(draw(st.integers(1, 30))):
        line = draw(st.sampled_from(REAL_LINES))
        op = draw(st.sampled_from(["keep", "keep", "keep", "digit", "cut", "insert"]))
        i = draw(st.integers(0, len(line)))
        if op == "digit":
            line = "".join(c if not c.isdigit() else draw(st.sampled_from("0123456789")) for c in line)
        elif op == "cut":
            line = line[:i]
        elif op == "insert":
            line = (
                line[:i]
                + draw(st.sampled_from([",", ", x: ", "\r", "\x1b[0m", "e", ".", "-", " ", "\u00e9", "nccl==2.1"]))
                + line[i:]
            )
        lines.append(line)
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    return (eol.join(lines) + draw(st.sampled_from(["", eol]))).encode("utf-8", "surrogatepass")


@SETTINGS
@given(data=mangled_log(), samples=st.booleans())
def test_generated_logs_give_the_same_result(data: bytes, samples: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as monkeypatch:
        path = Path(tmp) / "fuzz.log"
        path.write_bytes(data)
        fast, slow = both(path, monkeypatch, samples)
        assert fast == slow


plain_decimals = st.builds(
    lambda digits, point: digits[:point] + "." + digits[point:] if point is not None else digits,
    st.text("0123456789", min_size=1, max_size=8),
    st.none() | st.integers(0, 8),
).filter(lambda text: len(text) <= sglang_fast.WORD)


@SETTINGS
@given(values=st.lists(st.tuples(plain_decimals, st.binary(max_size=12)), min_size=1, max_size=40))
def test_word_decimals_read_like_float(values: list[tuple[str, bytes]]) -> None:
    """``_decimals`` (eight bytes at a time), and the compiled scanner's reading, read every plain
    decimal as ``float()`` does, whatever follows it in the word: "5.", ".5", "007", eight digits
    (the scanner's up to the block's last byte)."""
    np = sglang_fast._numpy()
    buf = b"".join(text.encode() + after for text, after in values) + bytes(sglang_fast.WORD)
    starts, at = [], 0
    for text, after in values:
        starts.append(at)
        at += len(text) + len(after)
    words = np.lib.stride_tricks.sliding_window_view(np.frombuffer(buf, np.uint8), sglang_fast.WORD)
    width = np.array([len(text) for text, _ in values])
    point = np.array([len(text) - text.find(".") if "." in text else 0 for text, _ in values])
    got = sglang_fast._decimals(words[starts].view("<u8").ravel(), width, point)
    expected = [float(text) for text, _ in values]
    assert got.tolist() == expected
    if reading.SGLANG_SHAPES.compiled:
        compiled = sglang_fast._compiled_decimals(buf[: -sglang_fast.WORD], np.array(starts), width, point)
        assert compiled.tolist() == expected


def test_values_of_every_width_and_form(tmp_path: Path, monkeypatch) -> None:
    """Stats values as a real server never writes them ("5.", ".5", nine digits, 1e3) still read
    the same on both paths, across block boundaries."""
    monkeypatch.setattr(framing, "BLOCK_BYTES", 512)
    forms = ["91.24", "5.", ".5", "0", "007.50", "12345678", "123456789", "1234567.8", "1e3", "nan", "inf"]
    lines = [
        f"[2026-01-01 08:00:{i % 60:02d} TP0] Decode batch, #running-req: {i}, #token: {i * 40}, "
        f"accept len: {forms[(i + 3) % len(forms)]}, gen throughput (token/s): {forms[i % len(forms)]}, #queue-req: 0"
        for i in range(200)
    ]
    lines += [
        f"[2026-01-01 08:01:{i % 60:02d} TP0] Prefill batch, #new-seq: 1, #new-token: {i}, "
        f"input throughput (token/s): {forms[i % len(forms)]}"
        for i in range(50)
    ]
    path = tmp_path / "forms.log"
    path.write_text("\n".join(lines) + "\n")
    for samples in (False, True):
        fast, slow = both(path, monkeypatch, samples)
        assert fast == slow
        assert "12345678.0" in fast and "123456789.0" in fast and "0.5" in fast


def test_samples_read_a_column_at_a_time_are_the_lines_own(tmp_path: Path, monkeypatch) -> None:
    """The fast path reads samples per shape, column by column (``_sample_batch``): stamps with 0
    to 6 fraction digits and impossible ones, forward counters, a key that is an int in some lines
    and a float in others, percentages, ranks, across small blocks, come out as line by line."""
    monkeypatch.setattr(framing, "BLOCK_BYTES", 1500)
    stamps = [
        "2026-01-01 08:00:00",
        "2026-01-01 08:00:01.5",
        "2026-01-01 08:00:02.123456",
        "2026-01-01 08:00:03.12",
        "2026-13-01 08:00:04",
        "2025-02-29 08:00:05",
        "2026-01-01 24:00:06",
        "2026-01-01 23:59:60",
        "0000-01-01 08:00:07",
        "2024-02-29 08:00:08.000",
        "9999-12-31 23:59:59.999999",
    ]
    usages = ["0.15", "0", "0.05", "1", "12%", "-0.5", "0.1e2"]
    lines = ["[2026-01-01 07:59:59 TP0] server_args=ServerArgs(model_path='m')"]
    for i in range(300):
        stamp, usage = stamps[i % len(stamps)], usages[i % len(usages)]
        forward = f" [{i * 7}]" if i % 3 == 0 else ""
        rank = ["TP0", "DP1 TP3", "PP0 ATTN_CP1 TP12"][i % 3]
        lines.append(
            f"[{stamp} {rank}] Decode batch{forward}, #running-req: {i % 9}, #token: {i * 977}, "
            f"token usage: {usage}, cuda graph: {i % 2 == 0}, gen throughput (token/s): {i}.{i % 10}, "
            f"#queue-req: {i % 4}"
        )
        if i % 5 == 0:
            lines.append(
                f"[{stamp} {rank}] Prefill batch, #new-seq: {i % 3}, #new-token: {i * 13}, "
                f"#cached-token: 0, token usage: {usage}, #running-req: 1, #queue-req: 0"
            )
    path = tmp_path / "columns.log"
    path.write_text("\n".join(lines) + "\n")
    fast, slow = both(path, monkeypatch, samples=True)
    assert fast == slow
    assert "'token_usage': 12.0" in fast and "'token_usage': 0," in fast and "'forward_ct': 21" in fast
    assert "datetime.datetime(2026, 1, 1, 8, 0, 2, 123456)" in fast and "'time': None" in fast


@SETTINGS
@given(piece=st.binary(min_size=1, max_size=300), tail=st.binary(max_size=300))
def test_zeroed_blocks_are_translated_blocks(piece: bytes, tail: bytes) -> None:
    """``_zeroed`` (numpy, for big blocks) makes every digit ``0`` and leaves every other byte."""
    sglang_fast._numpy()
    data = piece * (4096 // len(piece) + 1) + tail + bytes(range(256))
    assert sglang_fast._zeroed(data) == data.translate(bytes.maketrans(b"123456789", b"000000000"))


def test_keys_with_digits_are_read_from_each_line(tmp_path: Path, monkeypatch) -> None:
    """``p50 itl`` and ``p99 itl`` have one shape (digits zeroed): each line keeps its own key."""
    lines = ["[2026-01-01 08:00:00 TP0] server_args=ServerArgs(model_path='m')"]
    lines += [
        f"[2026-01-01 08:00:0{i + 1} TP0] Decode batch, #running-req: 1, {key} itl (ms): 4.{i}, "
        f"gen throughput (token/s): 1{i}.00"
        for i, key in enumerate(["p50", "p99", "p90"])
    ]
    path = tmp_path / "keys.log"
    path.write_text("\n".join(lines) + "\n")
    fast, slow = both(path, monkeypatch, samples=True)
    assert fast == slow
    assert "'p99_itl': 4.1" in fast and "'p90_itl': 4.2" in fast


def test_a_wrapped_line_is_found_whatever_its_digits(tmp_path: Path, monkeypatch) -> None:
    """The wrappers' detection looks at which digits a line has ("2..." years); a shape judged on
    a "1999-..." line still sends the file the generic way, where a later "2026-..." line of the
    same shape is unwrapped."""
    lines = [
        "[2026-01-01 08:00:00 TP0] server_args=ServerArgs(model_path='m')",
        "1999-01-01 08:00:01 INFO Decode batch, #running-req: 1, gen throughput (token/s): 11.00",
        "2026-01-01 08:00:02 INFO Decode batch, #running-req: 1, gen throughput (token/s): 22.00",
        "[2026-01-01 08:00:03 TP0] Decode batch, #running-req: 1, gen throughput (token/s): 33.00",
    ]
    path = tmp_path / "wrapped.log"
    path.write_text("\n".join(lines) + "\n")
    fast, slow = both(path, monkeypatch)
    assert fast == slow


def test_samples_of_short_and_long_runs_of_stats_lines(tmp_path: Path, monkeypatch) -> None:
    """Stats lines between lines the generic parser reads (access lines, a second launch): short
    runs have their samples read line by line, long ones a column at a time; all in file order."""
    rng = random.Random(3)
    lines = ["[2026-01-01 08:00:00] server_args=ServerArgs(model_path='m', tp_size=1)"]
    second = 0
    for run in [1, 2, 5, 63, 64, 65, 200, 1, 130, 3]:
        for _ in range(run):
            second += 1
            stamp = f"2026-01-01 {8 + second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
            lines.append(
                f"[{stamp} TP0] Decode batch, #running-req: {rng.randint(1, 99)}, #token: {rng.randint(1, 9999)}, "
                f"token usage: 0.{rng.randint(10, 99)}, gen throughput (token/s): "
                f"{rng.randint(10, 999)}.{rng.randint(0, 9)}, "
                f"#queue-req: 0"
            )
        lines.append(f'[{stamp}] INFO:     127.0.0.1:{rng.randint(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK')
        if run == 200:
            lines.append(f"[{stamp}] server_args=ServerArgs(model_path='m2', tp_size=2)")
    path = tmp_path / "runs.log"
    path.write_text("\n".join(lines) + "\n")
    fast, slow = both(path, monkeypatch, samples=True, samples_at_once=sglang_fast.SAMPLES_AT_ONCE)
    assert fast == slow and "'model_path': 'm2'" in fast


def time_only_log(rng: random.Random, starts: list[str]) -> list[str]:
    """Launches stamped with the time only (SGLang 0.2-0.3.2), each running over midnight, after
    the lines of ``starts``: stats lines of two ranks (out of order now and then, fractions of a
    second, an impossible time), time-only access lines, a dated line among them after a dated start."""
    lines = []
    for start in starts:
        lines.append(start)
        second = 23 * 3600 + rng.randint(0, 3000)
        for i in range(400):
            second += rng.choice((1, 2, 30, 600))
            clock = f"{second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
            clock += rng.choice(("", "", "", ".5", ".123456"))
            rank = rng.choice(("TP0", "TP1", "DP1 TP0"))
            if i % 97 == 5:
                clock = "25:61:00"
            lines.append(
                f"[{clock} {rank}] Decode batch. #running-req: {rng.randint(1, 64)}, #token: {rng.randint(1, 9999)}, "
                f"token usage: 0.{rng.randint(10, 99)}, gen throughput (token/s): {rng.randint(10, 999)}.{i % 10}, "
                "#queue-req: 0"
            )
            if i % 19 == 0:
                lines.append(
                    f'[{clock}] INFO:     127.0.0.1:{rng.randint(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK'
                )
            if i % 7 == 0:
                lines.append(f'INFO:     127.0.0.1:{rng.randint(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK')
            if i == 200 and "-" in start:  # a dated line among them
                lines.append(
                    f"[2026-03-0{rng.randint(1, 9)} {clock[:8]} TP0] Decode batch. #running-req: 1, #token: 9, "
                    "token usage: 0.01, gen throughput (token/s): 5.5, #queue-req: 0"
                )
    return lines


@pytest.mark.parametrize("at_once", [1, sglang_fast.SAMPLES_AT_ONCE], ids=["columns", "short-runs-by-line"])
def test_time_only_stamps_are_dated_in_bulk_as_line_by_line(
    scanner: str, tmp_path: Path, monkeypatch, at_once: int
) -> None:
    """Time-only stamps (SGLang 0.2-0.3.2) are read on the block path with the stats lines, and
    dated as the generic parser dates them: from the stamp before (a day later past midnight),
    from the file's mtime when no line has a date; an impossible date or the calendar's last day
    before them sends the stretch line by line. Same runs, samples and diagnostics."""
    monkeypatch.setattr(framing, "BLOCK_BYTES", 3000)
    rng = random.Random(11)
    server_args = "[{}] server_args=ServerArgs(model_path='m', tp_size=2)"
    logs = {
        # no date anywhere: counted from the stand-in first day, dated from the mtime
        "undated.log": (  # the tail of a launch (its stats lines first), then a launch
            ["INFO:     Application startup complete.", server_args.format("22:00:00")],
            "dates taken from the file's mtime",
        ),
        "dated.log": (
            [
                server_args.format("2026-03-01 23:00:00"),  # a dated launch line: the dates follow it
                server_args.format("2026-02-30 23:00:00"),  # an impossible date: read line by line
                server_args.format("9999-12-31 23:00:00"),  # no day after it: read line by line
            ],
            "'date_source': 'dated-line'",
        ),
    }
    for name, (starts, said) in logs.items():
        path = tmp_path / name
        path.write_text("\n".join(time_only_log(rng, starts)) + "\n")
        for samples in (False, True):
            fast, slow = both(path, monkeypatch, samples=samples, samples_at_once=at_once)
            assert fast == slow
        assert said in fast
        book = sglang_fast.Shapes(reading.OTHER_FAMILIES, compiled=scanner == "compiled")
        monkeypatch.setattr(reading, "SGLANG_SHAPES", book)
        parse_file(path)
        assert book.block_stats_lines > 400 and book.block_header_lines > 20


def test_blocks_of_several_days_are_read_without_numpy_ma(scanner: str, tmp_path: Path) -> None:
    """A block's days are told apart without ``numpy.unique``, which imports ``numpy.ma`` (numpy
    2.x), 8 to 26 ms of each worker's start: dated lines over midnight (their dates checked
    day by day), then time-only ones with a dated line among them (dated in bulk). numpy 1.x
    imports ``numpy.ma`` with ``numpy`` itself: nothing to check there."""
    lines = []
    for second in range(23 * 3600, 25 * 3600, 3):
        stamp = f"2026-03-0{1 + second // 86400} {second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
        lines.append(
            f"[{stamp} TP0] Decode batch, #running-req: 1, #token: 9, token usage: 0.01, "
            f"gen throughput (token/s): {10 + second % 89}.5, #queue-req: 0"
        )
    lines += time_only_log(random.Random(5), ["[2026-03-02 23:00:00] server_args=ServerArgs(model_path='m')"])
    path = tmp_path / "days.log"
    path.write_text("\n".join(lines) + "\n")
    program = (
        "import sys, numpy\n"
        "print('numpy.ma' in sys.modules)\n"
        "from timeline.parsers import parse_file, reading, sglang_fast\n"
        "sglang_fast.prepare(1 << 30)\n"
        f"reading.SGLANG_SHAPES = sglang_fast.Shapes(reading.OTHER_FAMILIES, compiled={scanner == 'compiled'})\n"
        "parse_file(sys.argv[1])\n"
        "print(reading.SGLANG_SHAPES.block_stats_lines, 'numpy.ma' in sys.modules)\n"
    )
    shown = subprocess.run([sys.executable, "-c", program, str(path)], capture_output=True, text=True, check=True)
    with_numpy, read_in_bulk, imported = shown.stdout.split()
    if with_numpy == "True":
        pytest.skip("this numpy imports numpy.ma with itself")
    assert int(read_in_bulk) > 2000 and imported == "False"


def test_the_first_log_a_process_reads_on_the_fast_path(scanner: str, monkeypatch) -> None:
    """No shape known yet (a fresh process): the shape tables start empty and grow."""
    monkeypatch.setattr(
        reading, "SGLANG_SHAPES", sglang_fast.Shapes(reading.OTHER_FAMILIES, compiled=scanner == "compiled")
    )
    fast, slow = both(LOGS[0], monkeypatch, samples=True)
    assert fast == slow and "internal parser error" not in fast


SGLANG_LOGS = LOGS + sorted((FIXTURES.parent / "wrappers").glob("*.log"))


def block_path_lines(log: Path) -> int:
    """The stats lines the block reader is made for: a plain ``[date time TAGS] `` header (or a
    time-only ``[time TAGS] `` one, SGLang 0.2-0.3.2), or
    another logging config's prefix starting with a dated stamp (``find_message``), on a line the
    wrapper normaliser leaves alone (it splits pasted records, strips Ray and Slurm wrappers) and
    that the terminal did not cut inside a key (``..., #queue-req``: read the generic way)."""
    from timeline.parsers.sglang import BATCH_RE, PLAIN_HEADER_RE, find_message, match_header
    from timeline.parsers.wrappers import needs_normalizing

    count = 0
    lines = log.read_bytes().decode("utf-8", "replace").split("\n")
    if any(map(sglang_fast.Shapes(reading.OTHER_FAMILIES).for_others, lines)):
        return 0  # a line of another family's (vLLM's logger in SGLang <= 0.4.1): all read line by line
    for line in lines:
        line = line.removesuffix("\r")
        if "\r" in line or "\x1b" in line:  # progress updates, colours: cleaned line by line
            continue
        if ": " not in line.rstrip(", ").rsplit(", ", 1)[-1]:  # cut inside its last key
            continue
        m = PLAIN_HEADER_RE.match(line)
        if m is not None:
            batch = BATCH_RE.match(line, m.end())
            # (SGLang <= 0.3.4's mixed-chunk "Prefill batch(mixed #running-req: N)" is read line by line)
            count += batch is not None and not batch.group(2) and not needs_normalizing(line)
            continue
        if match_header(line) is not None:  # SGLang's header after a docker stamp, a Ray tag...
            continue
        found = find_message(line)
        if found is not None and found.date and line.startswith(found.stamp_text, int(line[:1] == "[")):
            count += bool(BATCH_RE.match(line, found.at)) and not needs_normalizing(line[found.at :])
    return count


@pytest.mark.parametrize("log", SGLANG_LOGS, ids=[p.name for p in SGLANG_LOGS])
def test_stats_lines_with_a_header_take_the_block_path(scanner: str, log: Path, monkeypatch) -> None:
    """Every stats line the block reader is made for (``[date time TAGS] Decode batch...``,
    ``[time TAGS] Decode batch...``, or the same message after another logging prefix) is read
    by it: a change that sends them the line-by-line way (a startup line taken for another
    family's, a new field the generic parser touches) fails here."""
    book = sglang_fast.Shapes(reading.OTHER_FAMILIES, compiled=scanner == "compiled")
    monkeypatch.setattr(reading, "SGLANG_SHAPES", book)
    parse_file(log)
    assert book.block_stats_lines == block_path_lines(log)


def test_access_lines_with_a_dated_header_are_read_in_bulk(scanner: str, tmp_path: Path, monkeypatch) -> None:
    """A uvicorn access line with SGLang 0.3.4+'s ``[date time]`` header (one line in twenty of a
    served benchmark) is a header of the run and nothing else: it is counted on the block path,
    with the stats lines around it, not read line by line; the result is the line-by-line one."""
    rng = random.Random(3)
    lines = sglang_launch_lines(Launch(datetime(2026, 3, 2, 9, 0), 30, 90.0, decode_every_s=1.0), rng)
    out = []
    for number, line in enumerate(lines):
        out.append(line)
        if "] Decode batch" in line and number % 20 == 0:
            port = rng.randint(30000, 60000)
            out.append(f'[{line[1:20]}] INFO:     127.0.0.1:{port} - "POST /generate HTTP/1.1" 200 OK')
    path = tmp_path / "served.log"
    path.write_text("\n".join(out) + "\n")
    fast, slow = both(path, monkeypatch)
    assert fast == slow
    book = sglang_fast.Shapes(reading.OTHER_FAMILIES, compiled=scanner == "compiled")
    monkeypatch.setattr(reading, "SGLANG_SHAPES", book)
    monkeypatch.setattr(sglang_fast, "FAST_MIN_BYTES", 0)
    parse_file(path)
    assert book.block_header_lines == sum("POST /generate" in line for line in out) > 50


def test_small_logs_take_the_block_path_once_numpy_is_imported(tmp_path: Path, monkeypatch) -> None:
    """A folder of many small logs is read as their lines in one file are: ``prepare`` imports
    numpy when the logs are big enough in all, and then every log takes the block path."""
    lines = sglang_launch_lines(Launch(datetime(2026, 3, 2, 9, 0), 5, 90.0, decode_every_s=1.0), random.Random(4))
    path = tmp_path / "small.log"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(sglang_fast, "FAST_MIN_BYTES", 64 << 10)  # the default (conftest sets 0)
    assert path.stat().st_size < sglang_fast.FAST_MIN_BYTES
    calls = []
    real = sglang_fast.feed_blocks
    monkeypatch.setattr(sglang_fast, "feed_blocks", lambda *args: calls.append(1) or real(*args))
    monkeypatch.setattr(sglang_fast, "np", None)  # a process that has read no big log yet
    slow = parse_file(path)
    sglang_fast.prepare(path.stat().st_size)  # one small log alone: no numpy for it
    assert repr(parse_file(path)) == repr(slow) and not calls
    sglang_fast.prepare(1000 * path.stat().st_size)  # a thousand of them
    assert repr(parse_file(path)) == repr(slow) and calls


def test_ranks_out_of_order_across_a_new_century(tmp_path: Path, monkeypatch) -> None:
    """A rank's line of "1999-12-31 23:59:59" after one of "2000-01-01 00:00:05" (and a last line
    a century later): the earliest stamp, six seconds before the first line's, is the run's
    start, as line by line (the years' last two digits alone would put the stamps in order)."""
    line = (
        "[{}] Decode batch. #running-req: 64, #token: 41234, token usage: 0.02, cuda graph: True, "
        "gen throughput (token/s): 2710.45, #queue-req: 0, "
    )
    stamps = ["2000-01-01 00:00:05 TP0", "1999-12-31 23:59:59 TP1", "2099-12-31 23:59:59 TP0"]
    path = tmp_path / "new-century.log"
    path.write_text("".join(line.format(stamp) + "\n" for stamp in stamps))
    fast, slow = both(path, monkeypatch)
    assert fast == slow and "'start': datetime.datetime(1999, 12, 31, 23, 59, 59)" in slow


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc is tuned on Linux only")
def test_a_c_library_without_glibcs_malloc_calls_is_left_alone(monkeypatch):
    # musl has no mallopt, and a C library may lack malloc_trim: tuning and handing memory back
    # are then skipped, never an error (mallopt(3), malloc_trim(3): glibc extensions)
    import ctypes

    class Musl:  # no mallopt, no malloc_trim
        pass

    class WithoutTrim:
        def __init__(self) -> None:
            self.calls: list[tuple[int, int]] = []

        def mallopt(self, option: int, value: int) -> int:
            self.calls.append((option, value))
            return 1

    for libc in (Musl(), WithoutTrim()):
        monkeypatch.setattr(sglang_fast, "_MALLOC_TUNED", False)
        monkeypatch.setattr(sglang_fast, "_TUNED_LIBC", None)
        monkeypatch.setattr(ctypes, "CDLL", lambda name, libc=libc: libc)
        sglang_fast._tune_malloc()
        sglang_fast.hand_back_memory()
        assert sglang_fast._TUNED_LIBC is (libc if isinstance(libc, WithoutTrim) else None)
    assert len(libc.calls) == 3


@SETTINGS
@given(days=st.lists(st.sampled_from([b"2026-03-01", b"2026-03-02", b"2025-12-31", b"0001-01-01"]), max_size=40))
def test_the_distinct_days_of_a_block_are_numpy_uniques(days: list[bytes]) -> None:
    """``_distinct`` finds what ``numpy.unique`` would, in any order: empty, one day, days out of
    order and coming back."""
    np = sglang_fast._numpy()
    values = np.array(days, dtype="S10")
    assert sorted(sglang_fast._distinct(values)) == np.unique(values).tolist()
