"""parse_file across log families: wrappers, dates, detection per block, bad input, compression."""

from __future__ import annotations

import io
import os
import sys
import types
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import timeline.parsers as parsers
from timeline.parsers import parse_file
from timeline.parsers.dates import last_day, last_year
from timeline.parsers.wrappers import as_sglang_bracket, normalize, split_records, strip_outer

DECODE = "[2026-01-01 10:00:{s:02d} TP0] Decode batch, #running-req: 1, #token: 9, token usage: 0.00, cuda graph: True, gen throughput (token/s): {g}, #queue-req: 0"


def write(tmp_path: Path, text: str | bytes, name: str = "x.log", mtime: datetime | None = None) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    if mtime is not None:
        os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    return path


# --------------------------------------------------------------------------- wrappers


def test_strip_outer_takes_every_wrapper_off() -> None:
    outer = strip_outer(
        "2025-10-31T03:45:20.123456789+02:00  7: (SGLangEngine pid=9, ip=10.0.0.1) text [repeated 4x across cluster]"
    )
    assert outer.time == datetime(2025, 10, 31, 3, 45, 20, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert (outer.time_text, outer.task, outer.actor, outer.pid, outer.text) == (
        "2025-10-31T03:45:20.123456789+02:00",
        7,
        "SGLangEngine",
        9,
        "text",
    )
    assert strip_outer("plain text").text == "plain text" and strip_outer("").text == ""


@pytest.mark.parametrize(
    "line,rewritten",
    [
        ("2026-06-07 10:59:31,659 [INFO] msg", "[2026-06-07 10:59:31.659] msg"),
        ("2026-06-07 10:59:31,659 INFO msg", "[2026-06-07 10:59:31.659] msg"),
        (
            "2026-06-07 10:59:31,659 - a.b.c - WARNING - msg - with dashes",
            "[2026-06-07 10:59:31.659] msg - with dashes",
        ),
        ("[2026-06-07 10:59:31,659] [INFO] [DP0 TP1] msg", "[2026-06-07 10:59:31.659 DP0 TP1] msg"),
        ("2026-06-07 10:59:31 INFO scheduler.py:12: msg", "[2026-06-07 10:59:31] msg"),
        ("[2026-06-07 10:59:31] msg", None),  # SGLang's own header
        ("[2026-06-07 10:59:31 TP0] msg", None),
        ("2026-06-07 10:59:31abc", None),
        ("2025-10-31T03:45:20Z msg", None),  # a docker stamp, not Python logging
    ],
)
def test_python_logging_headers(line: str, rewritten: str | None) -> None:
    assert as_sglang_bracket(line) == rewritten


def test_split_records_keeps_wrappers_with_their_record() -> None:
    one = "0: (A pid=1) [2026-01-01 10:00:00 TP0] x"
    assert split_records(one) == [one]
    glued = DECODE.format(s=1, g="1.00") + DECODE.format(s=2, g="2.00")
    assert split_records(glued) == [DECODE.format(s=1, g="1.00"), DECODE.format(s=2, g="2.00")]
    assert split_records("garbage [2025-13-45 99:99:99 TP0] Decode batch, x: 1") == [
        "garbage [2025-13-45 99:99:99 TP0] Decode batch, x: 1"
    ]
    assert normalize("  3: [2026-01-01 10:00:00 TP3] x [repeated 2x across cluster]") == ["[2026-01-01 10:00:00 TP3] x"]


# --------------------------------------------------------------------------- dates


def test_last_day_and_last_year_from_the_mtime() -> None:
    mtime = datetime(2026, 1, 1, 0, 5).timestamp()
    assert last_day("00:04:00", mtime).isoformat() == "2026-01-01"
    assert last_day("23:59:00", mtime).isoformat() == "2025-12-31"
    assert last_year(1, 1, "00:04:00", mtime) == 2026
    assert last_year(12, 31, "23:59:00", mtime) == 2025
    assert last_year(2, 29, "10:00:00", datetime(2025, 3, 1).timestamp()) == 2024  # the last 29 Feb before
    assert last_year(2, 29, "10:00:00", datetime(2027, 3, 1).timestamp()) is None  # none in 2027 or 2026
    assert last_day("99:99:99", mtime) is None


def test_time_only_log_without_mtime_keeps_times_empty() -> None:
    parser = parsers.SGLangLogParser("t.log", keep_samples=True)
    parser.feed_all(
        enumerate(
            [
                "[23:59:59 TP0] Decode batch. gen throughput (token/s): 1.00",
                "[00:00:01 TP0] Decode batch. gen throughput (token/s): 2.00",
            ],
            1,
        )
    )
    runs, diags = parser.finish()
    assert runs[0].start is None and [s["time"] for s in runs[0].samples["decode"]] == [None, None]
    assert "times left empty" in diags[0].message


def test_interleaved_ranks_a_second_apart_are_not_a_new_day(tmp_path: Path) -> None:
    lines = [
        "[10:00:02 TP0] Decode batch. gen throughput (token/s): 1.00",
        "[10:00:01 TP1] Decode batch. gen throughput (token/s): 2.00",
    ]
    parsed = parse_file(write(tmp_path, "\n".join(lines) + "\n", mtime=datetime(2026, 3, 3, 11, 0)), keep_samples=True)
    assert [s["time"] for s in parsed.runs[0].samples["decode"]] == [
        datetime(2026, 3, 3, 10, 0, 2),
        datetime(2026, 3, 3, 10, 0, 1),
    ]


def test_vllm_log_without_mtime_or_dated_line_keeps_times_empty() -> None:
    parser = parsers.VLLMLogParser("v.log")
    parser.feed(
        1,
        "INFO 05-06 12:00:00 [loggers.py:1] Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s",
    )
    runs, diags = parser.finish()
    assert runs[0].start is None and runs[0].start_text == "05-06 12:00:00"
    assert "times left empty" in diags[0].message


# --------------------------------------------------------------------------- detection and blocks


def test_families_interleaved_across_many_blocks(tmp_path: Path) -> None:
    """A bench block and a vLLM run far into a long SGLang log: found, whatever the block borders."""
    lines = ["[2026-01-01 10:00:00] server_args=ServerArgs(model_path='m')"]
    lines += [DECODE.format(s=i % 60, g=f"{100 + i}.00") for i in range(3000)]
    lines += [
        "benchmark_args=Namespace(backend='sglang', num_prompts=8)",
        "============ Serving Benchmark Result ============",
    ]
    lines += ["{:<40} {:<10}".format("Output token throughput (tok/s):", "123.45")] + [
        DECODE.format(s=1, g="1.00")
    ] * 2500
    lines += ["{:<40} {:<10}".format("Median TTFT (ms):", "9.87"), "=" * 50]
    parsed = parse_file(write(tmp_path, "\n".join(lines) + "\n"))
    kinds = [r.kind for r in parsed.runs]
    assert kinds == ["sglang-server", "bench-serving"]
    server, bench = parsed.runs
    assert len(server.series["decode_throughput"]) == 5500
    # server lines printed between the client's rows neither end the block nor count as rows
    assert {k: list(v) for k, v in bench.series.items()} == {"output_throughput": [123.45], "ttft_median": [9.87]}
    assert bench.start == datetime(2026, 1, 1, 10, 0, 59) and bench.measures == 1


def test_bench_anchor_carries_across_blocks(tmp_path: Path) -> None:
    lines = (
        [DECODE.format(s=7, g="5.00")]
        + ["noise"] * 5000
        + [
            "============ Serving Benchmark Result ============",
            "{:<40} {:<10}".format("Output token throughput (tok/s):", "10.00"),
            "=" * 50,
        ]
    )
    parsed = parse_file(write(tmp_path, "\n".join(lines) + "\n"))
    bench = [r for r in parsed.runs if r.kind == "bench-serving"][0]
    assert bench.start == datetime(2026, 1, 1, 10, 0, 7) and bench.start_text == "2026-01-01 10:00:07"


def test_a_file_of_nccl_lines_only_is_no_run_and_says_so(tmp_path: Path) -> None:
    """NCCL's own lines (NCCL_DEBUG) are printed by any family's processes: without a server's
    header line they make no run (they used to make an sglang-server run with no time)."""
    parsed = parse_file(write(tmp_path, "NCCL version 2.21.5+cuda12.4\n"))
    assert parsed.runs == []
    assert [(d.line, d.code) for d in parsed.diagnostics] == [(None, "nothing-found")]
    assert "NCCL 2.21.5" in parsed.diagnostics[0].message


def test_nccl_lines_of_vllm_workers_make_no_sglang_run(tmp_path: Path) -> None:
    text = (
        "(VllmWorker rank=1 pid=2062) INFO 06-12 14:20:03 [pynccl.py:70] vLLM is using nccl==2.26.2\n"
        "(Worker pid=96) INFO 06-12 14:20:04 [pynccl.py:70] vLLM is using nccl==2.26.2\n"
        "(EngineCore_0 pid=2345) INFO 06-12 14:20:05 [core.py:193] init engine took 20.52 seconds\n"
    )
    parsed = parse_file(write(tmp_path, text))
    assert [r.kind for r in parsed.runs] == []
    assert [d.line for d in parsed.diagnostics] == [1] and "vLLM log lines" in parsed.diagnostics[0].message


def test_nccl_lines_in_an_sglang_log_still_count(tmp_path: Path) -> None:
    text = "[2026-01-01 10:00:00 TP0] Init torch distributed begin.\nNCCL version 2.21.5+cuda12.4\n"
    parsed = parse_file(write(tmp_path, text))
    assert [(r.kind, r.nccl_versions) for r in parsed.runs] == [("sglang-server", ["2.21.5"])]


def test_detection_is_by_content_not_by_name(tmp_path: Path) -> None:
    text = "INFO 05-06 12:00:00 [loggers.py:1] Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s\n"
    for name in ("sglang.log", "weird.bin", "bench.txt", "noext"):
        parsed = parse_file(write(tmp_path, text, name))
        assert [r.kind for r in parsed.runs] == ["vllm-server"], name


# --------------------------------------------------------------------------- bad input


def test_a_100_mb_line_is_not_read_with_a_warning_and_the_rest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.log"
    with open(path, "wb") as out:
        out.write((DECODE.format(s=1, g="1.00") + "\n").encode())
        chunk = b"x" * (1 << 20)
        for _ in range(100):
            out.write(chunk)
        out.write(b"\n" + (DECODE.format(s=2, g="2.00") + "\n").encode())
    parsed = parse_file(path)
    assert list(parsed.runs[0].series["decode_throughput"]) == [1.0, 2.0]
    assert any(d.line == 2 and "longer than" in d.message for d in parsed.diagnostics)


@pytest.mark.parametrize("path", ["fast", "generic"])
@pytest.mark.parametrize("samples", [False, True])
def test_impossible_dates_are_reported_once_with_their_line(
    tmp_path: Path, samples: bool, path: str, monkeypatch
) -> None:
    # Before: a run's first stamp 2026-02-30 was said, but an impossible last stamp (the run's end)
    # and any impossible stamp without --samples were dropped without a word, and the run lost
    # its end. Now every one is counted, said once at the first, and not read as a time.
    from timeline.parsers import sglang_fast

    if path == "generic":
        monkeypatch.setattr(sglang_fast, "FAST_MIN_BYTES", 1 << 62)
        monkeypatch.setattr(sglang_fast, "LOADED_MIN_BYTES", 1 << 62)
    lines = [DECODE.format(s=n, g="9.00") for n in range(6)]
    lines[0] = lines[0].replace("2026-01-01", "2026-02-30")
    lines[2] = lines[2].replace("10:00:02", "25:61:02")
    lines[5] = lines[5].replace("2026-01-01", "2026-13-01")  # the run's last line: its end
    log = tmp_path / "dates.log"
    log.write_text("\n".join(lines) + "\n")
    parsed = parse_file(log, keep_samples=samples)
    (run,) = parsed.runs
    assert list(run.series["decode_throughput"]) == [9.0] * 6
    assert (run.start, run.end) == (datetime(2026, 1, 1, 10, 0, 1), datetime(2026, 1, 1, 10, 0, 4))
    assert (run.start_text, run.status) == ("2026-01-01 10:00:01", "ok")
    said = [(d.line, d.message) for d in parsed.diagnostics if d.code == "impossible-date"]
    assert said == [
        (
            1,
            "3 time stamps are no real date and time (the first, '2026-02-30 10:00:00', at this line): not read "
            "as times (a run's start and end come from its other stamps; a stats line's sample has no time then)",
        )
    ]
    if samples:
        times = [row["time"] for row in run.samples["decode"]]
        assert [t is None for t in times] == [True, False, True, False, False, True]


def test_an_impossible_vllm_stamp_is_reported_and_not_read(tmp_path: Path) -> None:
    line = "INFO {md} 12:00:0{s} [loggers.py:1] Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s"
    text = "\n".join(line.format(md=md, s=s) for s, md in enumerate(["05-06", "05-06", "13-06"])) + "\n"
    parsed = parse_file(write(tmp_path, text, mtime=datetime(2026, 5, 6, 12, 1)))
    (run,) = parsed.runs
    assert (run.start, run.end) == (datetime(2026, 5, 6, 12, 0, 0), datetime(2026, 5, 6, 12, 0, 1))
    said = [(d.line, d.message) for d in parsed.diagnostics if d.code == "impossible-date"]
    assert said == [
        (
            3,
            "time stamp '13-06 12:00:02' is no real date and time: not read as a time (a run's start and end "
            "come from its other stamps; a stats line's sample has no time then)",
        )
    ]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs a non-root POSIX user")
def test_an_unreadable_file_is_one_warning(tmp_path: Path) -> None:
    path = write(tmp_path, DECODE.format(s=1, g="1.00") + "\n")
    path.chmod(0)
    try:
        parsed = parse_file(path)
    finally:
        path.chmod(0o644)
    assert parsed.runs == [] and "permission denied" in parsed.diagnostics[0].message


def test_the_truncated_archive_fixture(tmp_path: Path) -> None:
    archive = Path(__file__).resolve().parents[2] / "fixtures" / "bad" / "truncated-archive.gz"
    parsed = parse_file(archive, source="truncated-archive.gz")
    assert [r.kind for r in parsed.runs] == ["sglang-server"]
    (read_error,) = [d for d in parsed.diagnostics if "read error in the gzip stream" in d.message]
    assert read_error.line is not None and parsed.runs[0].last_line <= read_error.line
    assert parsed.runs[0].config["model_path"] == "deepseek-ai/DeepSeek-V3.2"


# --------------------------------------------------------------------------- zstd


# A zstd frame with one raw (stored) block: magic, frame header (single segment, 1-byte content
# size), block header (last block, raw, size), the bytes. Valid zstd, written without a library.
def zstd_raw_frame(data: bytes) -> bytes:
    assert len(data) < 256
    header = bytes([0x20, len(data)])  # Single_Segment_flag, Frame_Content_Size on 1 byte
    block = ((len(data) << 3) | 1).to_bytes(3, "little")  # Last_Block = 1, Block_Type = Raw
    return b"\x28\xb5\x2f\xfd" + header + block + data


def test_zstd_without_the_package_is_a_clear_warning(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import fails
    path = write(tmp_path, zstd_raw_frame((DECODE.format(s=1, g="1.00") + "\n").encode()), "server.log.zst")
    parsed = parse_file(path, source="server.log.zst")
    assert parsed.runs == []
    (diag,) = parsed.diagnostics
    assert diag.source == "server.log.zst" and "zstandard" in diag.message and "skipped" in diag.message


def test_zstd_with_the_package_is_read(tmp_path: Path, monkeypatch) -> None:
    text = (DECODE.format(s=1, g="3.50") + "\n").encode()

    class Error(Exception):
        pass

    class Decompressor:
        def stream_reader(self, raw, read_across_frames=False):
            assert raw.read(4) == b"\x28\xb5\x2f\xfd" and read_across_frames
            return io.BytesIO(text)

    fake = types.SimpleNamespace(ZstdDecompressor=Decompressor, ZstdError=Error)
    monkeypatch.setitem(sys.modules, "zstandard", fake)
    parsed = parse_file(write(tmp_path, zstd_raw_frame(text), "server.log.zst"))
    assert list(parsed.runs[0].series["decode_throughput"]) == [3.5] and parsed.diagnostics == []


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "line-by-line"])
def test_a_time_only_launch_before_a_dated_one_says_why_its_times_are_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    """The mtime dates a file's last line. When a dated launch (SGLang >= 0.3.3) follows a
    time-only one in the same file, the mtime dates the dated launch's end, not the time-only
    launch: how many days lie between them is unknown, so its times stay empty, and the reason
    given is that one, not a missing mtime."""
    from timeline.parsers import sglang_fast

    monkeypatch.setattr(sglang_fast, "FAST_MIN_BYTES", 0 if fast else 1 << 62)
    lines = [
        "[08:00:00 TP0] Decode batch. #running-req: 1, #token: 9, gen throughput (token/s): 1.00, #queue-req: 0",
        "[08:00:10 TP0] Decode batch. #running-req: 1, #token: 9, gen throughput (token/s): 2.00, #queue-req: 0",
        "[2026-03-05 09:00:00] server_args=ServerArgs(model_path='m', tp_size=1)",
    ] + [DECODE.replace("2026-01-01 10", "2026-03-05 09").format(s=i, g="3.00") for i in range(1, 4)]
    parsed = parse_file(write(tmp_path, "\n".join(lines) + "\n", mtime=datetime(2026, 3, 5, 9, 0, 5)))
    first, second = parsed.runs
    assert first.start is None and first.date_source is None
    assert second.start == datetime(2026, 3, 5, 9, 0, 0)
    said = [d.message for d in parsed.diagnostics if "without a date" in d.message]
    assert len(said) == 1 and "times left empty" in said[0]
    assert "no file mtime" not in said[0] and "dated launch" in said[0]
