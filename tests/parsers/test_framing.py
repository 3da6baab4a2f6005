"""parsers.framing and parse_file's handling of unreadable, binary and compressed files."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timeline.parsers import framing, parse_file
from timeline.parsers.framing import LogLines, NotTextError, split_progress, strip_ansi

DECODE = "[2026-01-01 12:00:00 TP0] Decode batch, #running-req: 1, #token: 9, token usage: 0.00, cuda graph: True, gen throughput (token/s): 42.50, #queue-req: 0"


def lines_of(path: Path) -> list[tuple[int, str]]:
    with LogLines(path) as log:
        return list(log)


def test_physical_line_numbers_and_blank_lines(write_log) -> None:
    assert lines_of(write_log("a\n\nb\nc")) == [(1, "a"), (2, ""), (3, "b"), (4, "c")]


def test_crlf_endings_lose_their_cr(write_log) -> None:
    assert lines_of(write_log("a\r\nb\r\n")) == [(1, "a"), (2, "b")]


def test_carriage_returns_split_progress_updates(write_log) -> None:
    path = write_log("bar 10%\rbar 50%\rbar 100%\r\n" + "x\r\r\n" + "\r\r\n" + "tail\r" + DECODE + "\n")
    assert lines_of(path) == [
        (1, "bar 10%"),
        (1, "bar 50%"),
        (1, "bar 100%"),
        (2, "x"),
        (4, "tail"),
        (4, DECODE),
    ]


def test_ansi_sequences_are_removed(write_log) -> None:
    path = write_log("\x1b[36m(SGLangEngine pid=1)\x1b[0m x\n\x1b]0;title\x07y\x1b[1;31mz\x1b[0m\n")
    assert lines_of(path) == [(1, "(SGLangEngine pid=1) x"), (2, "yz")]
    assert strip_ansi("plain") == "plain"
    assert strip_ansi("\x1b[2K\x1b[1Gdone") == "done"


def test_split_progress() -> None:
    assert split_progress("a\rb") == ["a", "b"]
    assert split_progress("a\r") == ["a"]
    assert split_progress("\r\r") == []


def test_invalid_utf8_is_replaced(write_log) -> None:
    assert lines_of(write_log(b"ok \xff\xfe end\n")) == [(1, "ok \ufffd\ufffd end")]


def test_utf8_bom_is_dropped_and_utf16_is_decoded(write_log) -> None:
    assert lines_of(write_log(b"\xef\xbb\xbfabc\n")) == [(1, "abc")]
    assert lines_of(write_log("abc\r\ndef\r\n".encode("utf-16"), "ps.log")) == [(1, "abc"), (2, "def")]


def test_block_boundaries_split_lines_and_characters(write_log, monkeypatch) -> None:
    monkeypatch.setattr(framing, "HEAD_BYTES", 7)
    monkeypatch.setattr(framing, "BLOCK_BYTES", 5)
    text = "\u00e9t\u00e9 \u2588\u2588\nsecond line\r\nthird\rpart\n" + "x" * 23 + "\nend"
    assert lines_of(write_log(text)) == [
        (1, "\u00e9t\u00e9 \u2588\u2588"),
        (2, "second line"),
        (3, "third"),
        (3, "part"),
        (4, "x" * 23),
        (5, "end"),
    ]


def block_lines(log: LogLines) -> list[tuple[int, bytes]]:
    """byte_blocks' lines, numbered: each block's up to its last newline (bytes after it are no
    part of it), an over-long line as the empty line it is read as (one inside a block is left to
    the block's reader: made empty here, as it would be)."""
    got: list[tuple[int, bytes]] = []
    for first, data in log.byte_blocks():
        if isinstance(data, str):
            got.append((first, data.encode()))
            continue
        lines = data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]
        got.extend(
            (first + k, b"" if len(line.decode("utf-8", "replace")) > framing.MAX_LINE_CHARS else line)
            for k, line in enumerate(lines)
        )
    return got


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(st.sampled_from(["", "a", "bb", "x" * 9, "y" * 30, "\u00e9\u00e9", "z" * 70]), max_size=25),
    end=st.sampled_from(["\n", ""]),
    sizes=st.tuples(st.integers(4, 40), st.integers(1, 40)),
    gzipped=st.booleans(),
    bom=st.booleans(),
)
def test_byte_blocks_give_the_lines_iterating_gives(tmp_path_factory, monkeypatch, lines, end, sizes, gzipped, bom):
    """Whatever the reads' sizes: every line once, numbered as iterating numbers it, over-long
    ones left out the same way, the last one without its newline too; from an uncompressed file
    a read's last line is read again with the next read (a seek back), from a compressed one it is
    carried over."""
    monkeypatch.setattr(framing, "HEAD_BYTES", sizes[0])
    monkeypatch.setattr(framing, "BLOCK_BYTES", sizes[1])
    monkeypatch.setattr(framing, "MAX_LINE_CHARS", 40)
    data = ("\ufeff" if bom else "").encode() + ("\n".join(lines) + (end if lines else "")).encode()
    path = tmp_path_factory.mktemp("blocks") / "log.txt"
    path.write_bytes(gzip.compress(data) if gzipped else data)
    with LogLines(path) as log:
        iterated = [(n, text.encode()) for n, text in log]
    with LogLines(path) as log:
        assert block_lines(log) == iterated
        assert log.line_number == (iterated[-1][0] if iterated else 0)


def test_an_overlong_line_is_not_read_and_numbering_continues(write_log, monkeypatch) -> None:
    monkeypatch.setattr(framing, "HEAD_BYTES", 8)
    monkeypatch.setattr(framing, "BLOCK_BYTES", 8)
    monkeypatch.setattr(framing, "MAX_LINE_CHARS", 20)
    path = write_log("short\n" + "y" * 100 + "\nafter\n" + "z" * 30 + "\n" + "w" * 25 + "\nend\n")
    with LogLines(path) as log:
        got = list(log)
        notes = log.notes
    assert got == [(1, "short"), (2, ""), (3, "after"), (4, ""), (5, ""), (6, "end")]
    assert notes == [(n, "line longer than 20 characters: not read") for n in (2, 4, 5)]


def test_overlong_lines_inside_one_block_are_not_read_and_counted_past_ten(write_log, monkeypatch) -> None:
    monkeypatch.setattr(framing, "MAX_LINE_CHARS", 20)
    path = write_log("".join(f"{'x' * 30}\nline {n}\n" for n in range(12)))
    with LogLines(path) as log:
        got = list(log)
        notes = log.notes
    assert got[:3] == [(1, ""), (2, "line 0"), (3, "")] and len(got) == 24
    assert notes[:10] == [(n, "line longer than 20 characters: not read") for n in range(1, 20, 2)]
    assert notes[10:] == [(None, "2 more lines longer than 20 characters: not read")]


def test_a_7_mb_stats_line_costs_no_more_than_a_short_one(tmp_path: Path) -> None:
    # Before: the 7 MB line was parsed, key by key: 570 MB and 37 s (a server_args line: 6 minutes).
    path = tmp_path / "long.log"
    stamp = "[2026-03-02 10:00:00] "
    long_line = stamp + "Decode batch. #running-req: 1, " + "k: 1, " * 1_200_000 + "gen throughput (token/s): 9.0"
    path.write_text("\n".join([DECODE, long_line, DECODE.replace("42.5", "43.5")]) + "\n")
    parsed = parse_file(path)
    assert list(parsed.runs[0].series["decode_throughput"]) == [42.5, 43.5]
    (note,) = [d for d in parsed.diagnostics if "longer than" in d.message]
    assert (note.line, note.message) == (2, f"line longer than {framing.MAX_LINE_CHARS} characters: not read")


def test_a_gzip_bomb_is_read_up_to_its_budget_with_a_warning(tmp_path: Path, monkeypatch) -> None:
    # Before: 16 MB of gzip expanding to 4 GB of log lines took 138 s (554 s and 5.2 GB with samples).
    monkeypatch.setattr(framing, "MIN_EXPANSION_BYTES", 1 << 20)
    path = tmp_path / "bomb.log.gz"
    with gzip.open(path, "wb", compresslevel=9) as out:
        line = (DECODE + "\n").encode()
        for _ in range(8):
            out.write(line * ((1 << 20) // len(line)))  # 8 MB of the same line: about 1000x
    compressed = path.stat().st_size
    parsed = parse_file(path)
    (note,) = [d for d in parsed.diagnostics if d.code == "expansion-limit"]
    budget = max(1 << 20, int(framing.MAX_EXPANSION * compressed))
    assert note.message.startswith(
        f"the gzip stream expands more than 50 times the file's {compressed:,} bytes (a decompression bomb?): "
        f"read up to {budget:,} bytes of it"
    )
    assert note.message.endswith("the rest is skipped (TIMELINE_MAX_EXPANSION raises the limit)")
    read = len(parsed.runs[0].series["decode_throughput"])
    assert 0 < read * len(line) <= budget + (2 << 20)
    raised = parse_file(path, max_expansion=2000)
    assert not [d for d in raised.diagnostics if d.code == "expansion-limit"]
    assert len(raised.runs[0].series["decode_throughput"]) == 8 * ((1 << 20) // len(line))


def test_a_real_compressed_log_is_read_whole(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(framing, "MIN_EXPANSION_BYTES", 1 << 16)
    path = tmp_path / "server.log.xz"
    rng = random.Random(0)  # the numbers of a busy server: a real log packs 12-16x (benchmarks/gen.py)
    text = "".join(
        f"[2026-01-01 12:{n // 3600 % 60:02d}:{n // 60 % 60:02d} TP0] Decode batch, #running-req: {rng.randint(1, 64)}, "
        f"#token: {rng.randint(100, 90000)}, token usage: {rng.random():.2f}, cuda graph: True, "
        f"gen throughput (token/s): {rng.uniform(20, 3000):.2f}, #queue-req: {rng.randint(0, 9)}\n"
        for n in range(20_000)
    )
    with lzma.open(path, "wb") as out:
        out.write(text.encode())
    parsed = parse_file(path)
    assert not [d for d in parsed.diagnostics if d.code == "expansion-limit"]
    assert len(parsed.runs[0].series["decode_throughput"]) == 20_000


@pytest.mark.parametrize("opener", [gzip.open, bz2.open, lzma.open])
def test_compressed_files_are_opened_by_magic(tmp_path: Path, opener) -> None:
    path = tmp_path / "server.log"  # no telling suffix
    with opener(path, "wb") as out:
        out.write((DECODE + "\n").encode() * 3)
    parsed = parse_file(path)
    assert list(parsed.runs[0].series["decode_throughput"]) == [42.5, 42.5, 42.5]
    assert parsed.diagnostics == []


def test_gz_suffix_on_plain_text_is_fine(write_log) -> None:
    parsed = parse_file(write_log(DECODE + "\n", "plain.log.gz"))
    assert list(parsed.runs[0].series["decode_throughput"]) == [42.5]


@pytest.mark.parametrize("count", [20, 2000])  # inside and beyond the 64 KiB sniffed at open
def test_truncated_gzip_keeps_what_was_read(tmp_path: Path, count: int) -> None:
    path = tmp_path / "cut.log.gz"
    data = gzip.compress(("\n".join([DECODE] * count) + "\n").encode())
    path.write_bytes(data[: len(data) - 12])
    parsed = parse_file(path)
    assert len(parsed.runs) == 1
    assert 0 < len(parsed.runs[0].series["decode_throughput"]) <= count
    assert all(d.line is None or d.line > 0 for d in parsed.diagnostics)
    assert any("read error in the gzip stream" in d.message for d in parsed.diagnostics), parsed.diagnostics


def test_a_parser_bug_becomes_a_diagnostic(write_log, monkeypatch) -> None:
    from timeline.parsers import reading, sglang_fast
    from timeline.parsers.sglang import SGLangLogParser

    def boom(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(SGLangLogParser, "_stats_line", boom)
    # Shapes the unpatched parser judged would read the line without it: start with none.
    monkeypatch.setattr(reading, "SGLANG_SHAPES", sglang_fast.Shapes(reading.OTHER_FAMILIES))
    path = write_log("[2026-01-01 10:00:00] server_args=ServerArgs(a=1)\n" + DECODE + "\n")
    parsed = parse_file(path)
    assert [r.config for r in parsed.runs] == [{"a": 1}]
    assert any("internal parser error near line 2" in d.message for d in parsed.diagnostics)


def test_corrupt_gzip_header_is_one_diagnostic(write_log) -> None:
    parsed = parse_file(write_log(b"\x1f\x8b\x08\x00garbage-not-deflate" * 3, "bad.gz"))
    assert parsed.runs == []
    assert len(parsed.diagnostics) == 1 and parsed.diagnostics[0].line is None


@pytest.mark.parametrize(
    "content,needle",
    [
        (b"\x00\x01\x02ELF" + bytes(range(256)) * 4, "binary"),
        (bytes(range(128, 256)) * 40, "not a text log"),
        (b"\x28\xb5\x2f\xfd" + b"zstd frame", "zstd"),
        (b"PK\x03\x04" + b"zip", "zip"),
    ],
)
def test_binary_files_give_one_diagnostic(write_log, content: bytes, needle: str) -> None:
    path = write_log(content, "blob.bin")
    parsed = parse_file(path, source="blob.bin")
    assert parsed.runs == []
    assert len(parsed.diagnostics) == 1
    diag = parsed.diagnostics[0]
    assert (diag.source, diag.line) == ("blob.bin", None)
    assert needle in diag.message and "skipped" in diag.message
    with pytest.raises(NotTextError):
        LogLines(path)


def test_a_fifo_is_never_read(tmp_path: Path) -> None:
    # Before: open() blocked until a writer came, forever (a FIFO named x.log).
    os.mkfifo(tmp_path / "x.log")
    (diag,) = parse_file(tmp_path / "x.log").diagnostics
    assert (diag.code, diag.message) == ("not-a-file", "not a regular file (a FIFO), skipped, never read")


def test_directory_missing_and_unreadable_files(tmp_path: Path, monkeypatch) -> None:
    for path, needle in [(tmp_path, "directory"), (tmp_path / "nope.log", "no such file")]:
        parsed = parse_file(path)
        assert parsed.runs == [] and len(parsed.diagnostics) == 1
        assert parsed.diagnostics[0].line is None and needle in parsed.diagnostics[0].message

    locked = tmp_path / "locked.log"
    locked.write_text(DECODE + "\n")
    if os.geteuid() != 0:
        locked.chmod(0)
        parsed = parse_file(locked)
        assert "permission denied" in parsed.diagnostics[0].message

    def deny(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(framing, "_open_regular", deny)
    parsed = parse_file(locked, source="locked.log")
    assert parsed.runs == []
    assert [str(d) for d in parsed.diagnostics] == ["locked.log: cannot read: permission denied, skipped"]


def test_empty_file(write_log) -> None:
    parsed = parse_file(write_log(b""))
    assert parsed.runs == []
    assert [d.message for d in parsed.diagnostics] == [
        "no SGLang or vLLM server log lines and no benchmark results found"
    ]


def test_source_defaults_to_str_of_path(write_log) -> None:
    path = write_log(DECODE + "\n")
    assert parse_file(path).source == str(path)
    assert parse_file(str(path), source="x/y.log").source == "x/y.log"
