"""``SampleRows``: every parsed stats line, stored column by column (millions of lines in tens of MB), gives back the
rows it was given: same keys in the same order, same values of the same types."""

from __future__ import annotations

import math
import pickle
import tracemalloc
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline.columns import SampleBatch, SampleRows

ZONES = [None, timezone.utc, timezone(timedelta(hours=-7)), ZoneInfo("Europe/Berlin"), ZoneInfo("America/New_York")]
KEYS = ["time", "line", "rank", "gen_throughput", "cuda_graph", "mixed", "forward_ct"]

times = st.builds(
    lambda wall, zone, fold: wall.replace(tzinfo=zone, fold=fold),
    st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
    st.sampled_from(ZONES),
    st.integers(0, 1),
)
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),  # beyond 64 bits too
    st.integers(-(1 << 31), (1 << 31) - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.sampled_from(["TP0", "TP1", "DP0 TP3"]),
    times,
    st.tuples(st.integers(), st.text(max_size=3)),
)
rows_strategy = st.lists(  # a row's keys come in any order: the order is part of the row
    st.lists(st.tuples(st.sampled_from(KEYS), values), unique_by=lambda item: item[0]).map(dict),
    max_size=40,
)


def same(a, b) -> bool:
    """Equal, of the same class, nan equal to nan; datetimes with the same zone and fold."""
    if a.__class__ is not b.__class__:
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, datetime):
        return a.replace(tzinfo=None) == b.replace(tzinfo=None) and a.tzinfo == b.tzinfo and a.fold == b.fold
    return a == b


def same_rows(got, want) -> bool:
    return len(got) == len(want) and all(
        list(g) == list(w) and all(same(g[k], w[k]) for k in w) for g, w in zip(got, want, strict=False)
    )


@settings(max_examples=150, deadline=None)
@given(rows=rows_strategy)
def test_rows_come_back_as_they_went_in(rows) -> None:
    stored = SampleRows(rows)
    assert len(stored) == len(rows)
    assert same_rows(list(stored), rows)
    assert same_rows([stored[i] for i in range(len(rows))], rows)
    assert same_rows([stored[i - len(rows)] for i in range(len(rows))], rows)
    assert same_rows(pickle.loads(pickle.dumps(stored)), rows)
    for key in KEYS:
        assert stored.has(key) == [key in row for row in rows]
        assert all(same(got, row.get(key)) for got, row in zip(stored.column(key), rows, strict=False))


@settings(max_examples=150, deadline=None)
@given(rows=rows_strategy, start=st.integers(0, 40), width=st.integers(0, 40))
def test_a_batch_of_rows_with_its_columns_converted(rows, start, width) -> None:
    stored = SampleRows(rows)
    start = min(start, len(rows))
    stop = min(start + width, len(rows))
    seen = []

    def convert(kind, values):
        seen.append(kind)
        return [("converted", kind, v) for v in values]

    batch = stored.rows(start, stop, convert)
    assert [list(row) for row in batch] == [list(row) for row in rows[start:stop]]
    for got, want in zip(batch, rows[start:stop], strict=False):
        for key, value in want.items():
            marker, kind, inner = got[key]
            assert marker == "converted" and same(inner, value)
            assert kind in {"int", "float", "bool", "text", "time", "none", "object"}


@settings(max_examples=150, deadline=None)
@given(rows=rows_strategy, new=st.lists(values, min_size=40, max_size=40))
def test_map_column_rewrites_one_field_in_row_order(rows, new) -> None:
    stored = SampleRows(rows)
    seen = []
    replacements = iter(new)

    def change(value):
        seen.append(value)
        return next(replacements)

    stored.map_column("time", change)
    having = [row for row in rows if "time" in row]
    assert all(same(a, b["time"]) for a, b in zip(seen, having, strict=False)) and len(seen) == len(having)
    replacements = iter(new)
    want = [dict(row, time=next(replacements)) if "time" in row else row for row in rows]
    assert same_rows(list(stored), want)


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(
        st.one_of(
            st.fixed_dictionaries({"time": st.none()}),  # no line
            st.fixed_dictionaries({"line": st.one_of(st.none(), st.integers(), st.integers(0, (1 << 31) - 1))}),
        ),
        max_size=40,
    ),
    by=st.one_of(st.integers(0, 1 << 33), st.integers()),
)
def test_add_to_column_moves_each_int_on(rows, by) -> None:
    # a piece of a log read from its own line 1: its samples' line numbers as the file's, past 32 bits too
    stored = SampleRows(rows)
    stored.add_to_column("line", by)
    want = [{"line": row["line"] + by} if row.get("line") is not None else row for row in rows]
    assert same_rows(list(stored), want)
    assert same_rows(pickle.loads(pickle.dumps(stored)), want)


def test_a_column_of_many_texts_and_of_huge_ints_still_comes_back() -> None:
    rows = [{"rank": f"r{i}", "n": i if i < 70_000 else 1 << 80} for i in range(70_001)]
    stored = SampleRows(rows)
    assert same_rows(list(stored), rows)


def test_a_decode_line_takes_under_100_bytes() -> None:
    """Memory, counted (not timed): a decode line's eleven fields in typed arrays cost under
    100 bytes, where a dict per line cost about a kilobyte (a million lines: 100 MB, not 1 GB)."""
    start = datetime(2026, 1, 1, 8)
    tracemalloc.start()
    try:
        stored = SampleRows()
        before = tracemalloc.get_traced_memory()[0]
        for i in range(20_000):
            stored.append(
                {
                    "time": start + timedelta(milliseconds=250 * i),
                    "line": i + 12,
                    "rank": f"TP{i % 8}",
                    "running_req": 32 + i % 5,
                    "token": 68448 + i,
                    "token_usage": 0.15,
                    "accept_len": 3.15 + (i % 7) / 100,
                    "accept_rate": 0.72,
                    "cuda_graph": True,
                    "gen_throughput": 1459.84 + i % 100,
                    "queue_req": 0,
                }
            )
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert used / len(stored) < 100, f"{used / len(stored):.0f} bytes a row"


@settings(max_examples=150, deadline=None)
@given(rows=rows_strategy, cut=st.integers(0, 40))
def test_batches_taken_out_and_put_back_are_the_same_rows(rows, cut) -> None:
    stored = SampleRows(rows)
    cut = min(cut, len(rows))
    copy = SampleRows()
    copy.extend(stored.batch(0, cut))
    copy.extend(stored.batch(cut, len(rows)))
    assert same_rows(list(copy), rows)


def test_numpy_columns_are_stored_at_once_and_read_back() -> None:
    """``extend`` with numpy arrays (the SGLang fast path's): ints past 32 bits, floats, bools,
    wall-clock microseconds; then a list of values of other types turns a column into objects."""
    np = pytest.importorskip("numpy")
    start = datetime(2026, 1, 1, 8, 0, 0, 250000)
    walls = np.array([(start + timedelta(seconds=s) - datetime.min) // timedelta(microseconds=1) for s in range(3)])
    stored = SampleRows()
    stored.extend(
        SampleBatch(
            [("time", "line", "ok", "x")],
            [0, 0, 0],
            {
                "time": ("time", walls),
                "line": ("int", np.array([1, 2, 1 << 40])),
                "ok": ("bool", np.array([1, 0, 1])),
                "x": ("float", np.array([0.5, float("nan"), -0.0])),
            },
        )
    )
    stored.extend(SampleBatch([("line", "x")], [0], {"line": ("int", np.array([7])), "x": ("object", ["text"])}))
    rows = list(stored)
    assert [row["time"] for row in rows[:3]] == [start + timedelta(seconds=s) for s in range(3)]
    assert [row["line"] for row in rows] == [1, 2, 1 << 40, 7] and [row["ok"] for row in rows[:3]] == [
        True,
        False,
        True,
    ]
    assert [repr(row["x"]) for row in rows] == ["0.5", "nan", "-0.0", "'text'"]
    numbers, zone = stored.batch(0, 3, walls=True).columns["time"][1]
    assert list(numbers) == walls.tolist() and zone is None


def test_a_fixed_offset_made_anew_for_each_line_is_one_zone() -> None:
    """Docker stamps give each line its own ``timezone(+02:00)`` object: equal ones share a slot,
    so 300 lines stay one compact column (past 256 distinct zones it would become a list)."""
    start = datetime(2026, 1, 1, 8)
    rows = [{"time": (start + timedelta(seconds=i)).replace(tzinfo=timezone(timedelta(hours=2)))} for i in range(300)]
    stored = SampleRows(rows)
    kind, (numbers, zone) = stored.batch(0, 300, walls=True).columns["time"]
    assert kind == "walls" and zone == timezone(timedelta(hours=2)) and len(numbers) == 300
    assert same_rows(list(stored), rows)


def _from_arrays(got) -> list:
    """``SampleRows.arrays``' values back as Python values (None where missing)."""
    if got.kind == "none":
        return [None] * len(got.missing)
    if got.kind == "object":
        values = list(got.values)
    elif got.kind == "text":
        values = [got.texts[code] if got.texts else None for code in got.values.tolist()]
    elif got.kind == "time":
        values = [
            (datetime.min + timedelta(microseconds=wall)).replace(tzinfo=got.zones[zone], fold=fold)
            for wall, zone, fold in zip(got.values.tolist(), got.zone_ids.tolist(), got.folds.tolist(), strict=True)
        ]
    elif got.kind == "bool":
        values = [bool(v) for v in got.values.tolist()]
    else:
        values = got.values.tolist()
    return [None if gone else value for value, gone in zip(values, got.missing.tolist(), strict=True)]


@settings(max_examples=150, deadline=None)
@given(rows=rows_strategy)
def test_arrays_hold_every_row_of_a_field(rows) -> None:
    stored = SampleRows(rows)
    assert stored.keys() == list(dict.fromkeys(key for row in rows for key in row))
    for key in KEYS:
        got = stored.arrays(key)
        assert len(got.missing) == len(rows)
        assert got.kind in ("none", "object") or got.values.dtype.kind in "iufb"  # numpy, not objects
        assert all(same(a, b) for a, b in zip(_from_arrays(got), stored.column(key), strict=True)), key
