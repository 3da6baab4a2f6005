"""The column store of a run's samples: every parsed field of every stats line, column by column,
in typed arrays (``SampleRows``). Imports nothing of timeline."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta, timezone
from itertools import repeat
from typing import Any, NamedTuple

# --- samples: every parsed field of every stats line, column by column ---------------------------

_WALL_ZERO = datetime.min  # a datetime is kept as microseconds since this, its fold and its zone
_BATCH = 4096  # rows rebuilt at a time when iterating
# Exact classes (a bool is not an "int"); anything else is an "object", kept as it is.
_KINDS = {int: "int", float: "float", bool: "bool", str: "text", datetime: "time"}
# Storage: ints in 32 bits until one does not fit; a text is a number in the column's own list.
_TYPECODES = {"int": "i", "float": "d", "bool": "b", "text": "H", "time": "q"}
_DIRECT = {"int": int, "float": float, "bool": bool}


class _Column:
    """One field of a kind of stats line, a slot per row, in a typed array where the values
    allow: 4 or 8 bytes a row for an int, 8 for a float or a datetime, 1 for a bool, 2 for a
    text (a rank like ``TP0``, stored once), against 32 to 56 for a Python object in a list.
    A value of another type turns the column into a list; a None in a typed column is
    remembered by row number.

    ``direct``: the class of value appended to ``values`` as it is (``SampleRows.append``'s fast
    path; an int too large for the array raises OverflowError and goes through ``put``).
    """

    def __init__(self) -> None:
        self.kind = "none"  # nothing but None so far: becomes typed with the first other value
        self.direct: type | None = None
        self.values: Any = []
        self.none: list[int] = []  # rows holding None in a typed column, increasing
        self.zones: list[Any] = []  # "time": the tzinfo of each zone number
        self.zone_ids = array("B")
        self.texts: list[str] = []  # "text": the text of each number
        self.codes: dict[str, int] = {}

    def put(self, row: int, value: Any) -> None:
        """Set ``row``'s value: rows are put in increasing order; a skipped row is a placeholder."""
        if len(self.values) < row:
            self._pad(row)
        if value is None:
            if self.kind == "none" or self.kind == "object":
                self.values.append(None)
            else:
                self.none.append(row)
                self._append_placeholder()
            return
        kind = _KINDS.get(value.__class__, "object")
        if kind != self.kind and self.kind != "object":
            self._become(kind if self.kind == "none" else "object")
        if self.kind == "time":
            number = self._zone_number(value.tzinfo)
            if number is not None:
                delta = (value if value.tzinfo is None else value.replace(tzinfo=None)) - _WALL_ZERO
                self.values.append(
                    (((delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds) << 1) | value.fold
                )
                self.zone_ids.append(number)
                return
            self._become("object")
        elif self.kind == "text":
            code = self.codes.get(value)
            if code is None and len(self.texts) <= 0xFFFF:
                code = self.codes[value] = len(self.texts)
                self.texts.append(value)
            if code is not None:
                self.values.append(code)
                return
            self._become("object")
        elif self.kind == "int":
            if self.values.typecode == "i" and not -(1 << 31) <= value < 1 << 31:
                self.values = array("q", self.values)
            if -(1 << 63) <= value < 1 << 63:
                self.values.append(value)
                return
            self._become("object")
        self.values.append(value)

    def extend(self, row: int, kind: str, values: Any) -> None:
        """Set rows ``row`` onwards from ``values`` (of ``kind``): a list, or for an ``int``,
        ``float``, ``bool`` or ``time`` column a numpy array (``time``: naive wall-clock
        microseconds since ``datetime.min``), copied at once when the column is of that kind."""
        if len(self.values) < row:
            self._pad(row)
        if kind == "text" and self.kind == "text":  # texts seen before (ranks): their numbers at once
            codes = list(map(self.codes.get, values))
            if None not in codes:
                self.values.extend(codes)
                return
        if not isinstance(values, list):
            if self.kind == "none":
                self._become(kind)
            # Zone 0 is naive unless set_zone gave the column a zone (after parsing: not here).
            if kind == self.kind and (kind != "time" or self.zones[0] is None):
                if (
                    kind == "int"
                    and self.values.typecode == "i"
                    and len(values)
                    and (int(values.min()) < -(1 << 31) or int(values.max()) >= 1 << 31)
                ):
                    self.values = array("q", self.values)
                if kind == "time":
                    self.values.frombytes((values << 1).astype(self.values.typecode).tobytes())  # fold 0
                    self.zone_ids.frombytes(bytes(len(values)))  # zone 0: naive
                else:
                    self.values.frombytes(values.astype(self.values.typecode).tobytes())
                return
            if kind == "time":
                values = [_WALL_ZERO + timedelta(microseconds=wall) for wall in values.tolist()]
            elif kind == "bool":
                values = [value != 0 for value in values.tolist()]
            else:
                values = values.tolist()
        for offset, value in enumerate(values):
            self.put(row + offset, value)

    def get(self, row: int) -> Any:
        none = self.none
        if none and none[min(bisect_left(none, row), len(none) - 1)] == row:
            return None
        value = self.values[row]
        kind = self.kind
        if kind == "time":
            return self._time(value, self.zone_ids[row])
        if kind == "text":
            return self.texts[value]
        if kind == "bool":
            return value != 0
        return value

    def slice(self, start: int, stop: int) -> list[Any]:
        """The values of rows ``start`` to ``stop`` (placeholders where a row has none)."""
        kind, values = self.kind, self.values[start:stop]
        out: list[Any]
        if kind == "time":
            time, zone_ids = self._time, self.zone_ids
            out = [time(v, zone_ids[start + i]) for i, v in enumerate(values)]
        elif kind == "text":
            texts = self.texts
            out = [texts[v] for v in values]
        elif kind == "bool":
            out = [v != 0 for v in values]
        elif kind == "int" or kind == "float":
            out = values.tolist()
        else:
            out = values
        none = self.none
        if none:
            for row in none[bisect_left(none, start) : bisect_left(none, stop)]:
                out[row - start] = None
        return out

    def walls(self, start: int, stop: int) -> tuple[array, Any] | None:
        """``SampleRows.batch``'s ``walls`` of rows ``start`` to ``stop``, or None."""
        if self.kind != "time" or len(self.values) < stop:
            return None
        none = self.none
        if none and bisect_left(none, start) != bisect_left(none, stop):
            return None
        ids = self.zone_ids[start:stop]
        values = self.values[start:stop]
        if ids.count(ids[0] if ids else 0) != len(ids) or any(map((1).__and__, values)):  # zones or a fold
            return None
        return array("q", map(int.__rshift__, values, repeat(1))), self.zones[ids[0]] if ids else None

    def _time(self, number: int, zone: int) -> datetime:
        wall = _WALL_ZERO + timedelta(microseconds=number >> 1)
        tz = self.zones[zone]
        if tz is None and not number & 1:  # naive, fold 0: no copy
            return wall
        return wall.replace(tzinfo=tz, fold=number & 1)

    def _zone_number(self, zone: Any) -> int | None:
        zones = self.zones
        for number, known in enumerate(zones):
            if known is zone:
                return number
        if zone.__class__ is timezone:  # a fixed offset is made anew for each line that carries one
            for number, known in enumerate(zones):
                if known.__class__ is timezone and known == zone and known.tzname(None) == zone.tzname(None):
                    return number
        if len(zones) == 256:
            return None
        zones.append(zone)
        return len(zones) - 1

    def _append_placeholder(self) -> None:
        self.values.append(0)
        if self.kind == "time":
            self.zone_ids.append(0)

    def _pad(self, row: int) -> None:
        while len(self.values) < row:
            if self.kind == "none" or self.kind == "object":
                self.values.append(None)
            else:
                self._append_placeholder()

    def _become(self, kind: str) -> None:
        """Store the values so far as ``kind``: from nothing-but-None to a type, or to a list."""
        if kind == "object":
            self.values = self.slice(0, len(self.values))
            self.none, self.zones, self.zone_ids, self.texts, self.codes = [], [], array("B"), [], {}
        else:
            count = len(self.values)
            self.none = list(range(count))  # a column of kind "none" holds nothing else
            self.values = array(_TYPECODES[kind], bytes(array(_TYPECODES[kind]).itemsize * count))
            if kind == "time":
                self.zones = [None]  # zone number 0: naive
                self.zone_ids = array("B", bytes(count))
        self.kind = kind
        self.direct = _DIRECT.get(kind)


class ColumnArrays(NamedTuple):
    """One field of a ``SampleRows``, every row, as numpy arrays (``SampleRows.arrays``): no
    Python object a row, for frames and Arrow.

    ``kind`` as in ``SampleBatch``. ``values``: int64 (``int``), float64 (``float``), bool
    (``bool``), uint16 numbers into ``texts`` (``text``), int64 wall-clock microseconds since
    ``datetime.min`` (``time``, with ``folds`` and ``zone_ids`` into ``zones``, None for naive);
    a list for ``object``; None for ``none``. ``missing``: the rows without the field or holding
    None (their slot in ``values`` means nothing)."""

    kind: str
    values: Any
    missing: Any
    texts: list[str] = []
    folds: Any = None
    zone_ids: Any = None
    zones: list[Any] = []


_NUMPY_TYPES = {"i": "int32", "q": "int64", "d": "float64", "b": "int8", "H": "uint16", "B": "uint8", "I": "uint32"}


def _numpy(values: array, count: int) -> Any:
    """A numpy copy of a typed array, zero-padded to ``count`` slots (a copy: the array may grow)."""
    import numpy as np

    out = np.zeros(count, _NUMPY_TYPES[values.typecode])
    if len(values):
        out[: len(values)] = np.frombuffer(values, _NUMPY_TYPES[values.typecode])
    return out


class SampleBatch(NamedTuple):
    """Some rows of a ``SampleRows``, column by column: row ``i`` has the keys
    ``shapes[row_shapes[i]]``, and its value of ``key`` is ``columns[key][1][i]`` (where it has
    no such key, a placeholder). ``columns[key][0]`` says what the values are: ``int``,
    ``float``, ``bool``, ``text`` (str), ``time`` (datetimes), ``none`` (nothing but None) or
    ``object`` (anything); a typed column may also hold None. Two other forms:
    ``SampleRows.extend`` also takes a numpy array for ``int``, ``float``, ``bool`` and ``time``
    values (``time``: naive wall-clock microseconds since ``datetime.min``), and
    ``SampleRows.batch(walls=True)`` gives ``walls`` columns (see there)."""

    shapes: list[tuple[str, ...]]
    row_shapes: list[int]
    columns: dict[str, tuple[str, Any]]  # a list, a numpy array or walls (see above)


class SampleRows:
    """The stats lines of one kind (``decode``, ``prefill``, ``result``) of a run, as rows of
    ``{field: value}`` in the order the parser read them, stored column by column (so a log of a
    million stats lines takes tens of megabytes, not gigabytes of dicts).

    Rows come back as dicts with their keys in the order they were appended, values of the
    same types (ints stay ints, ``nan`` stays a float, datetimes keep their zone and fold).
    Append-only; ``map_column`` rewrites one field in row order (times resolved after the
    whole file is read).
    """

    def __init__(self, rows: Iterable[dict[str, Any]] = ()) -> None:
        self._count = 0
        self._shapes: list[tuple[str, ...]] = []  # each distinct sequence of keys
        self._shape_numbers: dict[tuple[str, ...], int] = {}
        self._row_shapes = array("I")
        self._columns: dict[str, _Column] = {}
        for row in rows:
            self.append(row)

    def append(self, row: dict[str, Any]) -> None:
        self._row_shapes.append(self._shape_number(tuple(row)))
        number = self._count
        columns = self._columns
        for key, value in row.items():
            column = columns[key]
            # Inlined _Column.put for the common case: a value of the column's own type, next row.
            if value.__class__ is column.direct and len(column.values) == number:
                try:
                    column.values.append(value)
                    continue
                except OverflowError:
                    pass
            column.put(number, value)
        self._count = number + 1

    def extend(self, batch: SampleBatch) -> None:
        """Append the rows of ``batch``; its columns may also be numpy arrays (``_Column.extend``)."""
        numbers = [self._shape_number(keys) for keys in batch.shapes]
        self._row_shapes.extend([numbers[shape] for shape in batch.row_shapes])
        for key, (kind, values) in batch.columns.items():
            self._columns[key].extend(self._count, kind, values)
        self._count += len(batch.row_shapes)

    def _shape_number(self, keys: tuple[str, ...]) -> int:
        shape = self._shape_numbers.get(keys)
        if shape is None:
            shape = self._shape_numbers[keys] = len(self._shapes)
            self._shapes.append(keys)
            for key in keys:
                if key not in self._columns:
                    self._columns[key] = _Column()
        return shape

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: int) -> dict[str, Any]:
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("sample row out of range")
        columns = self._columns
        return {key: columns[key].get(index) for key in self._shapes[self._row_shapes[index]]}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for start in range(0, self._count, _BATCH):
            yield from self.rows(start, min(start + _BATCH, self._count))

    def batch(self, start: int, stop: int, walls: bool = False) -> SampleBatch:
        """Rows ``start`` to ``stop`` (0 <= start <= stop <= len), column by column (``SampleBatch``).

        ``walls``: a column of datetimes of one zone (or all naive), fold 0, without None, comes
        as ``("walls", (numbers, zone))``: ``numbers`` an ``array('q')`` of wall-clock
        microseconds since ``datetime.min`` (made into datetimes, they cost more than the rest)."""
        if not 0 <= start <= stop <= self._count:
            raise IndexError(f"sample rows {start} to {stop} of {self._count}")
        columns = {}
        for key, column in self._columns.items():
            raw = column.walls(start, stop) if walls else None
            columns[key] = ("walls", raw) if raw is not None else (column.kind, column.slice(start, stop))
        return SampleBatch(self._shapes, self._row_shapes[start:stop].tolist(), columns)

    def rows(
        self, start: int, stop: int, convert: Callable[[str, list[Any]], list[Any]] | None = None
    ) -> list[dict[str, Any]]:
        """Rows ``start`` to ``stop``, fresh dicts (a batch: each column read once).

        ``convert(kind, values)``, if given, rewrites each column's values first (``kind`` as in
        ``SampleBatch``)."""
        batch = self.batch(start, stop)
        values = {key: convert(kind, got) if convert is not None else got for key, (kind, got) in batch.columns.items()}
        shapes = batch.shapes
        return [{key: values[key][i] for key in shapes[shape]} for i, shape in enumerate(batch.row_shapes)]

    def has(self, key: str) -> list[bool]:
        """Per row: whether it has ``key``."""
        holding = [key in shape for shape in self._shapes]
        return [holding[shape] for shape in self._row_shapes]

    def keys(self) -> list[str]:
        """Every field some row has, in the order they were first seen."""
        return list(dict.fromkeys(key for shape in self._shapes for key in shape))

    def arrays(self, key: str) -> ColumnArrays:
        """``key``'s value of every row as numpy arrays (``ColumnArrays``), read at C speed."""
        import numpy as np

        count = self._count
        holding = np.array([key in shape for shape in self._shapes], dtype=bool)
        missing = ~holding[_numpy(self._row_shapes, count)] if count else np.zeros(0, dtype=bool)
        column = self._columns.get(key)
        if column is None or column.kind == "none":
            return ColumnArrays("none", None, np.ones(count, dtype=bool))
        if column.kind == "object":
            values = list(column.values) + [None] * (count - len(column.values))
            return ColumnArrays("object", values, missing | np.array([v is None for v in values], dtype=bool))
        missing[len(column.values) :] = True
        if column.none:
            missing[np.array(column.none)] = True
        raw = _numpy(column.values, count)
        if column.kind == "time":
            return ColumnArrays(
                "time",
                raw >> 1,
                missing,
                folds=(raw & 1).astype(bool),
                zone_ids=_numpy(column.zone_ids, count),
                zones=list(column.zones),
            )
        if column.kind == "text":
            return ColumnArrays("text", raw, missing, texts=list(column.texts))
        converted = {"int": "int64", "float": "float64", "bool": "bool"}[column.kind]
        return ColumnArrays(column.kind, raw.astype(converted, copy=False), missing)

    def column(self, key: str) -> list[Any]:
        """Per row: its ``key`` value, None where it has none."""
        column = self._columns.get(key)
        if column is None:
            return [None] * self._count
        values = column.slice(0, self._count)
        values.extend([None] * (self._count - len(values)))
        return [value if held else None for value, held in zip(values, self.has(key), strict=False)]

    def time_span(self, key: str) -> tuple[datetime, datetime] | None:
        """The earliest and the latest of ``key``'s values if they are all naive datetimes (or
        None), else None."""
        column = self._columns.get(key)
        if column is None or column.kind != "time" or column.zones != [None]:
            return None
        held = [has and not none for has, none in zip(self.has(key), self._nones(column), strict=False)]
        walls = [wall for wall, keep in zip(column.values, held, strict=False) if keep]
        if not walls:
            return None
        return column._time(min(walls), 0), column._time(max(walls), 0)

    def set_zone(self, key: str, zone: Any) -> None:
        """Make ``key``'s naive datetimes (``time_span``) aware, in ``zone`` (fold 0), at once."""
        column = self._columns[key]
        if column.kind != "time" or column.zones != [None]:
            raise ValueError(f"{key} does not hold naive datetimes only")
        column.zones = [zone]

    def _nones(self, column: _Column) -> list[bool]:
        flags = [False] * self._count
        for row in column.none:
            flags[row] = True
        return flags

    def add_to_column(self, key: str, by: int) -> None:
        """Add ``by`` to each ``key`` value, ints (the line numbers of a piece of a file read from its
        own first line): an array of them at once, not a value at a time (``map_column``)."""
        column = self._columns.get(key)
        if column is None or not by:
            return
        values = column.values  # (a row without the value holds a placeholder: moved too, never read)
        low, high = (min(values) + by, max(values) + by) if column.kind == "int" and len(values) else (0, 0)
        if column.kind != "int" or not -(1 << 63) <= low <= high < 1 << 63:  # (past 64 bits: objects)
            self.map_column(key, lambda value: value if value is None else value + by)
            return
        if values.typecode == "i" and not -(1 << 31) <= low <= high < 1 << 31:
            values = array("q", values)
        column.values = array(values.typecode, map(by.__add__, values))

    def map_column(self, key: str, change: Callable[[Any], Any]) -> None:
        """Replace each ``key`` value by ``change(value)``, row by row in order."""
        old = self._columns.get(key)
        if old is None:
            return
        new = _Column()
        for row, held in enumerate(self.has(key)):
            if held:
                new.put(row, change(old.get(row)))
        self._columns[key] = new

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SampleRows):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    def __repr__(self) -> str:
        return f"SampleRows({list(self)!r})"
