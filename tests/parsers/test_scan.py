"""The compiled line scanner (parsers/_scan.c) on arbitrary bytes: the same lines, shapes and
decimals as the Python reading it replaces, and a ValueError, never a crash, for what it cannot
read. (tests/parsers/test_sglang_fast.py runs the whole fast path with it and without it.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from timeline import cache
from timeline.parsers import sglang_fast

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ZERO = bytes.maketrans(b"123456789", b"000000000")


def test_the_compiled_scanner_is_built_where_required() -> None:
    """CI sets TIMELINE_REQUIRE_SCANNER (.ci/run): there, a scanner that failed to build (it is an
    optional extension: the install goes on without it) fails the run instead of testing numpy alone."""
    if sglang_fast._scan is None:
        if os.environ.get("TIMELINE_REQUIRE_SCANNER"):
            pytest.fail("TIMELINE_REQUIRE_SCANNER is set (CI) but parsers/_scan.c was not built, or is stale")
        pytest.skip("the compiled scanner (parsers/_scan.c) is not built")
    assert sglang_fast.Shapes().index is not None


def test_a_scanner_built_from_another_source_is_not_used():
    """An editable install keeps the module it built until it is installed again: one built from
    another _scan.c (here, one without the interface this code expects) is left aside, and numpy
    reads the blocks, rather than a build failing at the scanner's first call."""
    program = (
        "import importlib.machinery, sys, types\n"
        "stale = types.ModuleType('timeline.parsers._scan')\n"
        "stale.__spec__ = importlib.machinery.ModuleSpec('timeline.parsers._scan', None)\n"
        "sys.modules['timeline.parsers._scan'] = stale\n"
        "from timeline.parsers import sglang_fast\n"
        "print(sglang_fast._scan is None, sglang_fast.Shapes().index is None)\n"
    )
    shown = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert shown.stdout.split() == ["True", "True"]


def test_the_parse_cache_digests_the_built_scanner():
    """Its C source is not installed, so the cache's code version digests the built module: a
    scanner rebuilt from a changed _scan.c makes every entry a miss."""
    if sglang_fast._scan is None:
        pytest.skip("the compiled scanner (parsers/_scan.c) is not built")
    assert Path(sglang_fast._scan.__file__).resolve() in [path.resolve() for path in cache.parse_sources()]


@pytest.fixture(scope="module")
def scan():
    if sglang_fast._scan is None:
        pytest.skip("the compiled scanner (parsers/_scan.c) is not built")
    return sglang_fast._scan


def columns(got) -> list[list[int]]:
    np = sglang_fast._numpy()
    return [np.frombuffer(column, np.int64).tolist() for column in got]


def python_scan(block: bytes, shapes: dict[bytes, int]) -> list[list[int]]:
    """What scan gives, the Python way: each newline-ended line, its shape looked up."""
    ids, starts, ends = [], [], []
    start = 0
    while (end := block.find(b"\n", start)) >= 0:
        ids.append(shapes.get(block[start:end].translate(ZERO), -1))
        starts.append(start)
        ends.append(end)
        start = end + 1
    return [ids, starts, ends]


line_bytes = st.binary(max_size=40) | st.sampled_from(
    [b"[2026-01-01 08:00:00 TP0] Decode batch, gen throughput (token/s): 93.25", b"", b"\r", b"12345678", b"\xff9\x80"]
)


@SETTINGS
@given(
    lines=st.lists(line_bytes, max_size=40),
    tail=st.binary(max_size=20).filter(lambda b: b"\n" not in b),
    known=st.sets(st.integers(0, 39)),
)
def test_scan_finds_the_lines_and_shapes_python_finds(scan, lines: list[bytes], tail: bytes, known: set[int]) -> None:
    """Lines of any bytes (digits, bytes over 0x7f, no newline at the end, lengths around the
    8-byte words), some of whose shapes are known."""
    block = b"".join(line.replace(b"\n", b" ") + b"\n" for line in lines) + tail
    shapes: dict[bytes, int] = {}
    index = scan.ShapeIndex()
    for number in sorted(known):
        if number < len(lines):
            shape = lines[number].replace(b"\n", b" ").translate(ZERO)
            shapes.setdefault(shape, number)
            index.add(shape, shapes[shape])
    assert columns(index.scan(block)) == python_scan(block, shapes)
    assert index.size() == len(shapes)


def test_many_shapes_and_long_lines(scan) -> None:
    """The table grows past its first size; a line longer than any before it; a copy of the block
    scanned as a bytearray and a memoryview."""
    index = scan.ShapeIndex()
    shapes = {}
    for number in range(3000):
        shape = b"x" * number + b" 0.00"
        shapes[shape] = number
        index.add(shape, number)
    block = b"".join(b"x" * n + b" 4.25\n" for n in range(0, 3000, 7)) + b"y" * 200_000 + b"\n"
    expected = python_scan(block, shapes)
    for held in (block, bytearray(block), memoryview(block)):
        assert columns(index.scan(held)) == expected
    assert expected[0][-1] == -1 and expected[0][:-1] == list(range(0, 3000, 7))


def test_shapes_of_one_length_told_apart(scan) -> None:
    """The shape last seen with a line's length is tried first: another shape of that length, a
    line of no known shape of that length, and a digit where the shape has none are still told."""
    index = scan.ShapeIndex()
    shapes = {b"x0 y": 0, b"x y0": 1, b"0000000000": 2}
    for shape, number in shapes.items():
        index.add(shape, number)
    lines = [b"x1 y", b"x y2", b"x3 y", b"xy z", b"x y9", b"x9 y", b"1234567890", b"123456789a", b"x\xb9 y"] * 3
    block = b"\n".join(lines) + b"\n"
    assert columns(index.scan(block)) == python_scan(block, shapes)


same_length_shapes = st.integers(16, 70).flatmap(
    lambda n: st.lists(st.lists(st.sampled_from(b"0x "), min_size=n, max_size=n).map(bytes), min_size=1, max_size=4)
)
# A shape's 0s made the bytes next to the digits and one over 0x7f (negative to a signed compare),
# and made what each would be with its low nibble dropped, as a digit's is: a line of the first
# kind matches a shape of the second only if the scanner takes such a byte for a digit.
NO_DIGITS = (b":", b"/", b"\xb9", b"\xb0", b" ")


@SETTINGS
@given(
    shapes=same_length_shapes,
    picks=st.lists(st.tuples(st.integers(0, 23), st.integers(0, 2**32), st.integers(-1, 70)), max_size=60),
    unknown=st.sets(st.integers(0, 23), max_size=4),
)
def test_lines_of_many_shapes_of_one_length(scan, shapes: list[bytes], picks, unknown: set[int]) -> None:
    """Lines of 16 bytes and more (read sixteen at a time, the last sixteen overlapping), more
    shapes of one length than the scanner tries first (``NO_DIGITS``' variants of each), in any
    order, all known but a few: each line's digits drawn anew where its shape has a 0, and now
    and then a 5 where it may have none."""
    shapes = [variant for shape in shapes for variant in (shape, *(shape.replace(b"0", byte) for byte in NO_DIGITS))]
    index = scan.ShapeIndex()
    numbers: dict[bytes, int] = {}
    for number, shape in enumerate(shapes):
        if number not in unknown:
            numbers.setdefault(shape, number)
            index.add(shape, numbers[shape])
    lines = []
    for which, seed, five in picks:
        shape = shapes[which % len(shapes)]
        digits = str(seed).encode() * 70
        line = bytearray(digits[k] if byte == ord("0") else byte for k, byte in enumerate(shape))
        if 0 <= five < len(line):
            line[five] = ord("5")
        lines.append(bytes(line))
    block = b"".join(line + b"\n" for line in lines)
    assert columns(index.scan(block)) == python_scan(block, numbers)


def test_a_shape_has_no_digit_but_0(scan) -> None:
    index = scan.ShapeIndex()
    with pytest.raises(ValueError, match="not a shape"):
        index.add(b"rank 1", 0)
    with pytest.raises(ValueError):
        index.add(b"rank 0", -1)
    with pytest.raises(TypeError):
        index.scan("text, not bytes")


@SETTINGS
@given(
    block=st.binary(max_size=64),
    spans=st.lists(st.tuples(st.integers(-3, 70), st.integers(-2, 10), st.integers(-2, 10)), max_size=8),
)
def test_decimals_outside_the_block_are_refused(scan, block: bytes, spans: list[tuple[int, int, int]]) -> None:
    """Offsets, widths and points from anywhere: read when the value lies in the block and is
    at most 8 bytes with its point inside it, else a ValueError (never a read past the block)."""
    np = sglang_fast._numpy()
    at, width, point = (np.array([span[k] for span in spans], np.int64) for k in range(3))
    fits = all(a >= 0 and 0 <= w <= 8 and a + w <= len(block) and 0 <= p <= w for a, w, p in spans)
    if fits:
        assert len(np.frombuffer(scan.decimals(block, at, width, point), np.float64)) == len(spans)
    else:
        with pytest.raises(ValueError):
            scan.decimals(block, at, width, point)
    with pytest.raises(ValueError):
        scan.decimals(block, at, width[:-1] if len(spans) else np.zeros(1, np.int64), point)


def numpy_decimal(value: bytes, code: int) -> float:
    """``_decimals`` (numpy, the reference) of one value, whatever its bytes."""
    np = sglang_fast._numpy()
    word = np.array([int.from_bytes(value.ljust(8, b"\0"), "little")], np.uint64)
    return float(sglang_fast._decimals(word, np.array([len(value)]), np.array([code]))[0])


@SETTINGS
@given(
    block=st.binary(min_size=1, max_size=80) | st.text("0123456789.", min_size=1, max_size=80).map(str.encode),
    # mostly lines and values inside the block and the tables, some anywhere
    lines=st.lists(
        st.tuples(st.integers(0, 3) | st.integers(-1, 4), st.integers(0, 30) | st.integers(-2, 85)), max_size=12
    ),
    shapes=st.integers(1, 4),
    cells=st.lists(
        st.tuples(st.integers(0, 20) | st.integers(-2, 85), st.integers(-1, 10), st.integers(-1, 10)),
        min_size=12,
        max_size=12,
    ),
    count=st.integers(1, 3),
)
@example(  # two series of one line each: each series' values its own
    block=b"12.5 7\n", lines=[(0, 0)], shapes=1, cells=[(0, 4, 2), (5, 1, 0)] + [(0, -1, -1)] * 10, count=2
)
def test_series_reads_each_shapes_value_or_refuses(scan, block: bytes, lines, shapes: int, cells, count: int) -> None:
    """Series' values by shape tables from anywhere (``count`` rows of ``shapes`` cells): for each
    series, the lines with a value, where it is, the plain decimals read as numpy reads them
    (``_decimals``, whatever the bytes); a ValueError (never a read outside the block) for a shape
    number not in the tables or a value not in the block."""
    np = sglang_fast._numpy()
    tables = [cells[s * shapes : (s + 1) * shapes] for s in range(count)]  # tables[series][shape]
    ids, starts = (np.array([line[k] for line in lines], np.int64) for k in range(2))
    offsets, widths, points = (np.array([[cell[k] for cell in row] for row in tables], np.int64) for k in range(3))
    expected: list[tuple[list, ...]] | None = [([], [], [], [], []) for _ in range(count)]
    for k, (shape, start) in enumerate(lines):
        if not 0 <= shape < shapes:
            expected = None
            break
        for series, row in zip(expected, tables, strict=True):
            offset, width, code = row[shape]
            if width < 0:
                continue
            at = start + offset
            if not (0 <= start <= len(block) and 0 <= offset <= len(block) and at + width <= len(block)):
                expected = None
                break
            if code >= 0 and (width > 8 or code > width):
                expected = None
                break
            number = numpy_decimal(block[at : at + width], code) if code >= 0 else 0.0
            for column, value in zip(series, (k, at, width, number, code >= 0), strict=True):
                column.append(value)
        if expected is None:
            break
    if expected is None:
        with pytest.raises(ValueError):
            scan.series(block, ids, starts, offsets, widths, points, count)
        return
    got = scan.series(block, ids, starts, offsets, widths, points, count)
    kinds = (np.int64, np.int64, np.int64, np.float64, bool)
    assert [
        tuple(np.frombuffer(column, kind).tolist() for column, kind in zip(series, kinds, strict=True))
        for series in got
    ] == [tuple(series) for series in expected]
    for wrong in (0, -1, offsets.size + 1):  # no series, or more rows than the tables have cells
        with pytest.raises(ValueError):
            scan.series(block, ids, starts, offsets, widths, points, wrong)


@SETTINGS
@given(
    kinds=st.lists(st.integers(0, 4), min_size=1, max_size=6),
    ids=st.lists(st.integers(0, 5) | st.integers(-2, 7), max_size=40),
)
def test_classify_sorts_the_lines_as_numpy_does(scan, kinds: list[int], ids: list[int]) -> None:
    """Each line's kind and the lines of a stats or a header line, of a stats line and of a
    generic one, as ``sglang_fast._kind_rows`` (numpy, the reference) finds them; a ValueError,
    never a read outside the table, for a shape number not in it."""
    np = sglang_fast._numpy()
    table, lines = np.array(kinds, np.int64), np.array(ids, np.int64)
    arguments = (lines, table, sglang_fast._STATS, sglang_fast._HEADER, sglang_fast._GENERIC)
    if not all(0 <= shape < len(kinds) for shape in ids):
        with pytest.raises(ValueError):
            scan.classify(*arguments)
        return
    code = table[lines]
    expected = [code, *sglang_fast._kind_rows(code)]
    assert [np.frombuffer(column, np.int64).tolist() for column in scan.classify(*arguments)] == [
        column.tolist() for column in expected
    ]


two_digits = st.integers(0, 99).map(lambda n: f"{n:02d}")
stamped_line = st.one_of(
    st.builds(
        lambda y, m, d, hh, mm, ss: f"[20{y}-{m}-{d} {hh}:{mm}:{ss}] x",
        two_digits,
        st.sampled_from(["01", "02", "12", "13", "00"]),
        st.sampled_from(["01", "28", "29", "30", "31"]),
        two_digits,
        two_digits,
        two_digits,
    ),
    st.builds(lambda hh, mm, ss: f"[{hh}:{mm}:{ss}] y", two_digits, two_digits, two_digits),
)


@SETTINGS
@given(lines=st.lists(stamped_line, min_size=1, max_size=30))
def test_stamps_tell_the_unreal_ones_as_numpy_does(scan, lines: list[str]) -> None:
    """Dated and time-only stamps, real or not (25:61:99, February 30), of one day or several:
    ``_unreal`` with the compiled scanner picks the lines numpy picks."""
    np = sglang_fast._numpy()
    block = "".join(line + "\n" for line in lines).encode()
    starts = np.array([0] + [m + 1 for m in np.flatnonzero(np.frombuffer(block, np.uint8) == 10)[:-1]], np.int64)
    ids = np.array([0 if line.endswith(" x") else 1 for line in lines], np.int64)
    table = sglang_fast._ShapeTable(
        *([np.zeros(2, np.int64)] * 7), np.array([1, -1]), np.array([12, 1]), np.zeros(2, bool)
    )
    rows = np.arange(len(lines), dtype=np.int64)
    compiled = sglang_fast._unreal(block, rows, ids, starts, table, True)
    assert compiled.tolist() == sglang_fast._unreal(block, rows, ids, starts, table, False).tolist()


@SETTINGS
@given(
    block=st.binary(max_size=40),
    lines=st.lists(st.tuples(st.integers(-1, 3), st.integers(-2, 45)), max_size=6),
    rows=st.lists(st.integers(-1, 6), max_size=6),
    shapes=st.lists(st.tuples(st.integers(-2, 45), st.integers(-2, 45)), min_size=1, max_size=3),
)
def test_stamps_outside_the_block_are_refused(scan, block: bytes, lines, rows, shapes) -> None:
    """Line numbers, shape numbers, starts, clock and date offsets from anywhere: a ValueError
    unless every stamp read lies in the block."""
    np = sglang_fast._numpy()
    ids, starts = (np.array([line[k] for line in lines], np.int64) for k in range(2))
    clocks, dates = (np.array([shape[k] for shape in shapes], np.int64) for k in range(2))

    def inside(row: int) -> bool:
        if not 0 <= row < len(lines) or not 0 <= lines[row][0] < len(shapes):
            return False
        start, (clock, date) = lines[row][1], shapes[lines[row][0]]
        return (
            0 <= start <= len(block)
            and clock >= 0
            and start + clock + 8 <= len(block)
            and (date == -1 or (date >= 0 and start + date + 10 <= len(block)))
        )

    if all(map(inside, rows)):
        bad, _, _ = scan.stamps(block, np.array(rows, np.int64), ids, starts, clocks, dates)
        assert len(bad) == len(rows)
    else:
        with pytest.raises(ValueError):
            scan.stamps(block, np.array(rows, np.int64), ids, starts, clocks, dates)


dated_stamp = st.builds(
    lambda year, month, day, separator, clock: f"{year}-{month}-{day}{separator}{clock}",
    st.sampled_from(["1999", "2000", "2026", "2099", "2100"]),
    st.sampled_from(["01", "12"]),
    st.sampled_from(["01", "31"]),
    st.sampled_from([" ", "T"]),
    st.sampled_from(["00:00:00", "23:59:59", "12:00:00"]),
)


@SETTINGS
@given(
    stamps=st.lists(dated_stamp | st.just(None), min_size=1, max_size=8),
    gap=st.binary(max_size=5).filter(lambda b: b"\n" not in b),
    picks=st.lists(st.integers(0, 7), min_size=1, max_size=8),
)
@example(  # in order by date and time, whatever their separators, which the 19 bytes would order otherwise
    stamps=["2026-01-01T00:00:00", "2026-01-01 12:00:00"], gap=b"", picks=[0, 1]
)
def test_extremes_pick_the_earliest_and_the_latest(scan, stamps: list[str | None], gap: bytes, picks) -> None:
    """The earliest and the latest of the stamped lines picked: in order (each date, then time, at
    or after the one before, as text: whole years, across centuries), the first and the last; else
    the first of the least and the last of the greatest 19 bytes (numpy's ``argmin``, ``argmax``
    from the end); None when one of them is time-only (a line of shape 1 here)."""
    np = sglang_fast._numpy()
    block = b"".join(gap + (stamp or "12:00:00 x").ljust(19).encode() + b"\n" for stamp in stamps)
    ids = np.array([0 if stamp else 1 for stamp in stamps], np.int64)
    starts = np.arange(len(stamps), dtype=np.int64) * (len(gap) + 20)
    rows = [k % len(stamps) for k in picks]
    got = scan.extremes(block, np.array(rows, np.int64), ids, starts, np.array([len(gap), -1], np.int64))
    picked = [stamps[row] for row in rows]
    if None in picked:
        assert got is None
        return
    keys = [(stamp[:10], stamp[11:]) for stamp in picked]
    if all(b >= a for a, b in zip(keys, keys[1:], strict=False)):
        assert got == (0, len(picked) - 1)
    else:
        low, high = min(picked), max(picked)
        assert got == (picked.index(low), len(picked) - 1 - picked[::-1].index(high))


@SETTINGS
@given(
    block=st.binary(max_size=60),
    rows=st.lists(st.integers(-1, 3), max_size=4),
    starts=st.lists(st.integers(-3, 45), min_size=3, max_size=3),
    dates=st.lists(st.integers(-2, 45), min_size=2, max_size=2),
)
def test_extremes_refuse_stamps_outside_the_block(scan, block: bytes, rows, starts, dates) -> None:
    """A ValueError, never a read outside the block, for no row, a row or a shape outside the
    tables, or a stamp's 19 bytes not all in the block; None for a time-only stamp before any of it."""
    np = sglang_fast._numpy()
    ids = np.array([0, 1, 2], np.int64)  # line 2's shape is not in the table of two shapes
    arguments = (block, np.array(rows, np.int64), ids, np.array(starts, np.int64), np.array(dates, np.int64))
    for row in rows:
        if not 0 <= row < 2:
            break
        if dates[row] < 0:
            assert scan.extremes(*arguments) is None
            return
        if not (starts[row] >= 0 and dates[row] <= len(block) and starts[row] + dates[row] + 19 <= len(block)):
            break
    else:
        if rows:
            assert len(scan.extremes(*arguments)) == 2
            return
    with pytest.raises(ValueError):
        scan.extremes(*arguments)


stretch_stamp = st.one_of(
    st.builds(
        lambda year, month, day, clock: f"{year}-{month}-{day} {clock} x",
        st.sampled_from(["0000", "0001", "1999", "2024", "2100", "9999"]),
        st.sampled_from(["00", "01", "02", "12", "13"]),
        st.sampled_from(["00", "01", "28", "29", "30", "31"]),
        st.sampled_from(["00:00:00", "00:59:59", "12:00:00", "23:59:59"]),
    ),
    st.builds(
        lambda clock: f"{clock} y", st.sampled_from(["00:00:00", "00:30:00", "01:00:01", "12:00:00", "23:59:59"])
    ),
)


@SETTINGS
@given(
    lines=st.lists(stretch_stamp, min_size=1, max_size=12),
    previous=st.one_of(
        st.none(),
        st.tuples(
            st.sampled_from(["2026-05-01", "9999-12-31", "2026-02-30", "0001-01-01"]),
            st.sampled_from(["23:59:59", "00:00:00", "1x:00:00"]),
        ),
    ),
)
def test_dates_date_a_stretch_as_numpy_does(scan, lines: list[str], previous) -> None:
    """Time-only stamps dated by the stamp before them, a day later past midnight, dated ones by
    their own date (no real date, the calendar's last day passed: not datable), with or without
    a stamp before the stretch: the compiled ``_Stamps._date`` gives numpy's days and keys."""
    np = sglang_fast._numpy()
    block = "".join(line + "\n" for line in lines).encode()
    starts = np.array([0] + [m + 1 for m in np.flatnonzero(np.frombuffer(block, np.uint8) == 10)[:-1]], np.int64)
    dated = np.array([line.endswith(" x") for line in lines])
    stamp = None if previous is None else (*previous, " ".join(previous))

    def dating(compiled: bool) -> tuple[bool, list[int] | None, list[int] | None]:
        stamps = object.__new__(sglang_fast._Stamps)
        parser = type("Parser", (), {"previous_stamp": lambda self: stamp})()
        book = type("Book", (), {"compiled": compiled})()
        stamps.feeder = type("Feeder", (), {"parser": parser, "book": book})()
        stamps.buf, stamps.rows, stamps.starts = block, np.arange(len(lines), dtype=np.int64), starts
        stamps.date_at, stamps.time_only, stamps.days, stamps.datable = np.where(dated, 0, -1), ~dated, None, True
        stamps._date(starts + np.where(dated, 11, 0))
        if not stamps.datable:
            return False, None, None
        return True, stamps.days.tolist(), stamps.clock_key.tolist()

    assert dating(True) == dating(False)


def test_dates_read_stamps_inside_the_block_only(scan) -> None:
    """A time-only stamp fills a block of eight bytes; a clock or a date past the block's end is
    refused (a ValueError, never a read outside it)."""
    np = sglang_fast._numpy()

    def column(*values: int):
        return np.array(values, np.int64)

    days, keys = scan.dates(b"23:59:58", column(0), column(-1), 5, -1, 3600, 10**6)
    assert (np.frombuffer(days, np.int64).tolist(), np.frombuffer(keys, np.int64).tolist()) == ([5], [235958])
    for clocks, dates in ((column(2), column(-1)), (column(0), column(0)), (column(-1), column(-1))):
        with pytest.raises(ValueError):
            scan.dates(b"23:59:58", clocks, dates, 5, -1, 3600, 10**6)
    with pytest.raises(ValueError):
        scan.dates(b"23:59:58", column(0, 0), column(-1), 5, -1, 3600, 10**6)
