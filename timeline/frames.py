"""The timeline as pandas DataFrames: ``runs_frame``, ``samples_frame``, ``events_frame``, ``shifts_frame``.

Also reachable as ``timeline.runs_frame(result)`` and friends. pandas is imported here only, and
only when a frame is asked for: ``import timeline`` and the CLI never load it.

Dtypes: every time is a tz-aware ``datetime64[ns, UTC]`` (runs, samples and events may come
from different zones; one column holds one zone, so all are in UTC); counts and line numbers are
nullable ``Int64``; measurements are ``float64``; flags are ``boolean``; labels with few values
(kind, attribution, group, verdict...) are ``category``; free text is ``string``; lists
(``events_during``, the commits an event brought in...) stay Python lists.

Commits: every ``commit`` column (``from_commit`` and ``to_commit`` in the shifts) is an ordered
categorical whose categories are the commits in history order (``plain.commit_order``: the order
HEAD held them), the same in every frame, so ``groupby``, ``sort_values`` and a plot's legend
follow the history, not the hashes. Beside it: ``commit_short`` (9 characters, ordered the same)
and ``commit_subject`` (None where no event listed the commit).

Joins: the runs frame and the samples frame share exactly ``RUN_KEYS`` (``run_id``, the commit
columns and ``group``, equal on both sides), so ``samples.merge(runs)`` joins on them with no
``_x``/``_y`` columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from timeline.columns import ColumnArrays
from timeline.errors import TimelineError
from timeline.model import Timeline
from timeline.render import plain

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "SamplesNotKeptError",
    "runs_frame",
    "samples_frame",
    "events_frame",
    "shifts_frame",
    "RUN_KEYS",
    "RUN_CORE",
    "SAMPLE_LEADING",
    "EVENT_COLUMNS",
    "SHIFT_COLUMNS",
]

# The columns the runs frame and the samples frame share, with equal values: their join key.
RUN_KEYS = ("run_id", *plain.COMMIT_COLUMNS, "group")


class SamplesNotKeptError(TimelineError, ValueError):
    """``samples_frame()`` on a timeline built without ``keep_samples=True``."""


def _pd():
    import pandas

    return pandas


def _by_column(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> dict[str, list[Any]]:
    """Rows as ``_frame`` takes them: a list of values per column (None where a row has none)."""
    return {column: [row.get(column) for row in rows] for column in columns}


def _frame(
    data: dict[str, list[Any]],
    *,
    times: Iterable[str] = (),
    categories: Iterable[str] = (),
    ints: Iterable[str] = (),
    floats: Iterable[str] = (),
    bools: Iterable[str] = (),
    strings: Iterable[str] = (),
    infer: Iterable[str] = (),
    lists: Iterable[str] = (),
    ordered: dict[str, list[str]] | None = None,
) -> pd.DataFrame:
    """A frame of ``data`` (its columns in order, a list of values each), with proper dtypes."""
    pd = _pd()
    count = len(next(iter(data.values()), []))
    frame = pd.DataFrame(data, columns=list(data), index=pd.RangeIndex(count))
    for column in times:
        frame[column] = pd.to_datetime(frame[column], utc=True).astype("datetime64[ns, UTC]")
    for column in ints:
        frame[column] = pd.array([None if v is None else int(v) for v in data[column]], dtype="Int64")
    for column in floats:
        frame[column] = pd.array([_float(v) for v in data[column]], dtype="float64")
    for column in bools:
        frame[column] = pd.array(data[column], dtype="boolean")
    for column in strings:
        frame[column] = pd.array([None if v is None else str(v) for v in data[column]], dtype="string")
    for column in categories:
        frame[column] = pd.Categorical([None if v is None else str(v) for v in data[column]])
    for column, order in (ordered or {}).items():
        frame[column] = _in_order(data[column], order)
    for column in infer:
        frame[column] = _inferred(data[column])
    for column in lists:
        frame[column] = pd.Series(
            [[] if v is None else list(v) for v in data[column]], index=frame.index, dtype="object"
        )
    return frame


def _float(value: Any) -> float:
    if value is None or isinstance(value, bool):
        return float("nan")
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def _inferred(values: list[Any]):
    """A column of parsed fields: the narrowest proper dtype for what the values are."""
    pd = _pd()
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pd.array(values, dtype="boolean")
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pd.array(values, dtype="Int64")
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pd.array([_float(v) for v in values], dtype="float64")
    if present and all(isinstance(v, str) for v in present):
        return pd.Categorical(values)
    return pd.array(values, dtype="object")


def _in_order(values: list[Any], order: list[str]):
    """An ordered categorical of ``values`` whose categories are ``order`` (then any value it lacks)."""
    known = set(order)
    extra = [v for v in dict.fromkeys(values) if v is not None and v not in known]
    return _pd().Categorical(values, categories=[*order, *extra], ordered=True)


def _commit_orders(timeline: Timeline, prefix: str = "") -> dict[str, list[str]]:
    """The ordered categories of the commit columns (``commit``, ``commit_short``), by name."""
    order = plain.commit_order(timeline)
    shorts = list(dict.fromkeys(sha[:9] for sha in order))
    return {f"{prefix}commit": order, f"{prefix}commit_short": shorts}


# --- runs -------------------------------------------------------------------------------------

CONFIG_INTS = (
    "tp_size",
    "dp_size",
    "ep_size",
    "pp_size",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
)
# The runs frame's columns that are always there, in order; then ``metric.<name>.<stat>`` for
# each metric beyond the core ones (a benchmark client's ``e2e_latency_median``, ``ttft_p99``...).
RUN_CORE = (*plain.RUN_LEADING, *(plain.metric_column(m, s) for m in plain.KNOWN_METRICS for s in plain.STATS))


def runs_frame(timeline: Timeline) -> pd.DataFrame:
    """One row per run: the columns of the CSV (``timeline build --format csv``), typed.

    ``RUN_CORE`` always, in order: ``run_id``, ``source``, lines, ``run_kind``, ``start``/``end``
    (UTC), zone, ``duration_s``, ``commit``, ``commit_short``, ``commit_subject``,
    ``attribution``, why an ambiguous run is so and what it could be (``ambiguous_reasons``,
    ``candidate_commits``: lists; ``zone_readings``: text, ``UTC-12:00..-08:00 abc123def;
    UTC-07:00..+14:00 456789abc``), ``events_during`` (a list), ``group``, the key configuration,
    ``nccl_versions`` and ``cuda_driver_versions`` (lists), the steady value the shifts compare (``steady_metric``,
    ``steady_value``, ``steady_unit``, ``steady_n``, ``steady_spread``), and ``n``, ``median``,
    ``mean``, ``min``, ``max`` of ``decode_throughput``, ``accept_len`` and
    ``prefill_input_throughput``; then ``metric.<name>.<stat>`` for every other metric a run has.
    """
    rows = plain.run_records(timeline)
    columns = plain.run_columns(timeline)
    metric_columns = columns[len(plain.RUN_LEADING) :]
    counts = [c for c in metric_columns if c.endswith(("_n", ".n"))]
    return _frame(
        _by_column(rows, columns),
        times=("start", "end"),
        categories=(
            "run_kind",
            "status",
            "tz",
            "tz_source",
            "date_source",
            "attribution",
            "group",
            "model",
            "speculative_algorithm",
            "quantization",
            "dtype",
            "kv_cache_dtype",
            "steady_metric",
            "steady_unit",
        ),
        ordered=_commit_orders(timeline),
        ints=(
            "first_line",
            "last_line",
            "steady_n",
            "error_line",
            *counts,
            *(c for c in CONFIG_INTS if _all_ints(rows, c)),
        ),
        floats=("duration_s", "steady_value", "steady_spread", *(c for c in metric_columns if c not in counts)),
        strings=("run_id", "source", "start_local", "commit_subject", "zone_readings", "error"),
        infer=tuple(c for c in CONFIG_INTS if not _all_ints(rows, c)),
        lists=("ambiguous_reasons", "candidate_commits", "events_during", "nccl_versions", "cuda_driver_versions"),
    )


def _all_ints(rows: Sequence[dict[str, Any]], column: str) -> bool:
    return all(
        row.get(column) is None or (isinstance(row[column], int) and not isinstance(row[column], bool)) for row in rows
    )


# --- samples ----------------------------------------------------------------------------------

SAMPLE_LEADING = (*RUN_KEYS, "kind", "time", "line", "rank")


def samples_frame(timeline: Timeline) -> pd.DataFrame:
    """One row per parsed stats line (``Decode batch`` / ``Prefill batch``) of every run, in time order.

    Columns: ``SAMPLE_LEADING`` (``run_id``, ``commit``, ``commit_short``, ``commit_subject``,
    ``group``, ``kind`` (``decode``/``prefill``, a benchmark's ``result``), ``time`` (UTC),
    ``line``, ``rank``), then every field the parser read, in snake_case (``gen_throughput``,
    ``accept_len``, ``running_req``, ``token_usage``, ``cuda_graph``...), missing where a line did
    not have it. Rows at the same time keep the runs' order, then their line order.

    Built column by column from the typed sample store (``SampleRows.arrays``), no Python object
    a row: 2 million stats lines take about a second (``benchmarks/frames_speed.py``).

    Needs a timeline built with ``keep_samples=True`` (``--samples`` on the command line):
    samples are the bulk of a build's memory, so they are only kept when asked for. Without them
    this raises ``SamplesNotKeptError`` rather than silently returning nothing or re-reading logs
    that may have changed since.
    """
    import numpy as np

    pd = _pd()
    missing = [run.id for run in timeline.runs if run.samples is None]
    if missing:
        raise SamplesNotKeptError(
            "this timeline was built without samples: call timeline.build(..., keep_samples=True) "
            f"to use samples_frame() (runs without samples: {', '.join(missing[:5])}"
            f"{' ...' if len(missing) > 5 else ''})"
        )
    parts = [
        (index, kind, (run.samples or {})[kind])
        for index, run in enumerate(timeline.runs)
        for kind in sorted(run.samples or {})
        if len((run.samples or {})[kind])
    ]
    sizes = np.array([len(rows) for _, _, rows in parts], dtype=np.int64)
    kinds = sorted({kind for _, kind, _ in parts})
    run_index = np.repeat(np.array([index for index, _, _ in parts], dtype=np.int64), sizes)
    kind_codes = np.repeat(np.array([kinds.index(kind) for _, kind, _ in parts], dtype=np.int64), sizes)
    fields: dict[str, None] = {}
    for _, _, rows in parts:
        fields.update(dict.fromkeys(rows.keys()))
    stamps, no_time = _utc_stamps([rows.arrays("time") for _, _, rows in parts])
    lines = [rows.arrays("line") for _, _, rows in parts]
    line_key = (
        np.concatenate(
            [np.where(p.missing, 0, p.values) if p.kind == "int" else np.zeros(len(p.missing), np.int64) for p in lines]
        )
        if lines
        else run_index
    )
    # Time order (rows without a time last), then the runs' order, then line order.
    order = np.lexsort((line_key, run_index, np.where(no_time, 0, stamps), no_time))
    run_of_row = run_index[order]
    records = plain.run_records(timeline)
    data: dict[str, Any] = {"run_id": pd.Categorical.from_codes(run_of_row, [r["run_id"] for r in records])}
    orders = _commit_orders(timeline)
    for key in (*plain.COMMIT_COLUMNS, "group"):
        categories = orders.get(key) or list(dict.fromkeys(r[key] for r in records if r[key] is not None))
        position = {value: number for number, value in enumerate(categories)}
        per_run = np.array([position.get(r[key], -1) for r in records], dtype=np.int64)
        data[key] = pd.Categorical.from_codes(per_run[run_of_row], categories, ordered=key in orders)
    data["kind"] = pd.Categorical.from_codes(kind_codes[order], kinds)
    times = stamps.view("datetime64[us]")
    times[no_time] = np.datetime64("NaT")
    data["time"] = pd.to_datetime(times[order], utc=True).as_unit("ns")
    data["line"] = _sample_column(lines).take(order)
    for key in ["rank", *(key for key in fields if key not in SAMPLE_LEADING)]:
        data[key] = _sample_column([rows.arrays(key) for _, _, rows in parts]).take(order)
    return pd.DataFrame(data, index=pd.RangeIndex(len(order)), copy=False)


def _sample_column(pieces: list[ColumnArrays]):
    """The pieces of one field (one a run and kind) as one typed pandas array."""
    import numpy as np

    pd = _pd()
    missing = np.concatenate([piece.missing for piece in pieces]) if pieces else np.zeros(0, dtype=bool)
    kinds = {piece.kind for piece in pieces} - {"none"}

    def joined(dtype: str):
        return np.concatenate(
            [np.zeros(len(p.missing), dtype) if p.kind == "none" else p.values.astype(dtype) for p in pieces]
        )

    if not kinds:
        return pd.array([None] * len(missing), dtype="object")
    if kinds == {"int"}:
        return pd.arrays.IntegerArray(joined("int64"), missing)
    if kinds <= {"int", "float"}:
        values = joined("float64")
        values[missing] = np.nan
        return pd.array(values, dtype="float64")
    if kinds == {"bool"}:
        return pd.arrays.BooleanArray(joined("bool"), missing)
    if kinds == {"text"}:
        texts = list(dict.fromkeys(text for piece in pieces for text in piece.texts))
        position = {text: number for number, text in enumerate(texts)}
        codes = np.concatenate([_text_codes(piece, position) for piece in pieces])
        codes[missing] = -1
        return pd.Categorical.from_codes(codes, texts)
    values = []  # mixed kinds (rare): the values as Python objects, typed by what they are
    for piece in pieces:
        values.extend(_piece_values(piece))
    return _inferred(values)


def _text_codes(piece: ColumnArrays, position: dict[str, int]):
    import numpy as np

    if piece.kind == "none" or not piece.texts:
        return np.full(len(piece.missing), -1, np.int64)
    return np.array([position[text] for text in piece.texts], dtype=np.int64)[piece.values]


_EPOCH_US = (datetime(1970, 1, 1) - datetime.min) // timedelta(microseconds=1)


def _utc_stamps(pieces: list[ColumnArrays]):
    """The ``time`` field of every piece as UTC microseconds since the epoch (naive times read as
    UTC), and where a row has none: at once for each zone whose offset holds through its times,
    one by one where it changes (a DST transition) or the field holds something else."""
    import numpy as np

    from timeline.clock import steady_offset

    stamps, missing = [], []
    for piece in pieces:
        if piece.kind != "time":
            moments = _piece_values(piece)
            gone = np.array([not isinstance(m, datetime) for m in moments], dtype=bool)
            stamps.append(np.array([0 if g else _instant_us(m) for m, g in zip(moments, gone, strict=True)], np.int64))
            missing.append(gone)
            continue
        out = piece.values - _EPOCH_US
        for zone_id in np.unique(piece.zone_ids[~piece.missing]).tolist():
            zone = piece.zones[zone_id]
            if zone is None:
                continue
            rows = (piece.zone_ids == zone_id) & ~piece.missing
            walls = piece.values[rows]
            first = datetime.min + timedelta(microseconds=int(walls.min()))
            last = datetime.min + timedelta(microseconds=int(walls.max()))
            if steady_offset(zone, first, last):
                out[rows] -= (first.replace(tzinfo=zone).utcoffset() or timedelta(0)) // timedelta(microseconds=1)
            else:
                folds = piece.folds[rows].tolist()
                out[rows] = [
                    _instant_us((datetime.min + timedelta(microseconds=wall)).replace(tzinfo=zone, fold=fold))
                    for wall, fold in zip(walls.tolist(), folds, strict=True)
                ]
        stamps.append(out)
        missing.append(piece.missing)
    if not pieces:
        return np.zeros(0, np.int64), np.zeros(0, dtype=bool)
    return np.concatenate(stamps), np.concatenate(missing)


def _instant_us(moment: datetime) -> int:
    """UTC microseconds since the epoch (a naive moment read as UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
    return (moment - datetime(1970, 1, 1)) // timedelta(microseconds=1)


def _piece_values(piece: ColumnArrays) -> list[Any]:
    """A piece's values as Python objects (None where missing)."""
    count = len(piece.missing)
    if piece.kind == "none":
        return [None] * count
    if piece.kind == "object":
        values = list(piece.values)
    elif piece.kind == "text":
        values = [piece.texts[code] if piece.texts else None for code in piece.values.tolist()]
    elif piece.kind == "time":
        values = [
            (datetime.min + timedelta(microseconds=wall)).replace(tzinfo=piece.zones[zone], fold=fold)
            for wall, zone, fold in zip(
                piece.values.tolist(), piece.zone_ids.tolist(), piece.folds.tolist(), strict=True
            )
        ]
    else:
        values = piece.values.tolist()
    return [None if gone else value for value, gone in zip(values, piece.missing.tolist(), strict=True)]


# --- events -----------------------------------------------------------------------------------

EVENT_COLUMNS = (
    "event_id",
    "time",
    "kind",
    "ref",
    "message",
    "old",
    "new",
    *plain.COMMIT_COLUMNS,
    "changes_commit",
    "n_commits",
    "n_commits_removed",
    "commits",
    "commits_removed",
    "source",
    "line",
    "files_may_differ",
    "approximate",
    "detail",
    "note",
    "old_inferred",
)


def events_frame(timeline: Timeline) -> pd.DataFrame:
    """One row per code event (a move of HEAD), in reflog order.

    ``commit``, ``commit_short`` and ``commit_subject`` are about ``new``, the commit HEAD moved
    to (``commit`` is ordered by history, as in the other frames); ``commits`` /
    ``commits_removed`` are lists of full shas (newest first), with their counts in
    ``n_commits`` / ``n_commits_removed``; the flags and notes of the JSON event come after.
    """
    subjects = plain.commit_subjects(timeline)
    rows: list[dict[str, Any]] = []
    for event in timeline.events:
        row = plain.event_values(event)
        row["event_id"] = row.pop("id")
        row["time"] = plain.utc(event.time)
        row["commit"] = event.new
        row["commit_short"] = plain.short_sha(event.new)
        row["commit_subject"] = subjects.get(event.new)
        for key in ("commits", "commits_removed"):
            row[f"n_{key}"] = len(row[key])
        rows.append(row)
    return _frame(
        _by_column(rows, EVENT_COLUMNS),
        times=("time",),
        categories=("kind", "ref", "detail"),
        ordered=_commit_orders(timeline),
        ints=("n_commits", "n_commits_removed", "line"),
        bools=("changes_commit", "files_may_differ", "approximate", "old_inferred"),
        strings=("event_id", "message", "old", "new", "commit_subject", "source", "note"),
        lists=("commits", "commits_removed"),
    )


# --- shifts -----------------------------------------------------------------------------------

SHIFT_COLUMNS = (
    "shift_id",
    "group",
    "metric",
    "unit",
    "verdict",
    "measured",
    "change_pct",
    "p_value",
    "method",
    "single_run",
    "start",
    "end",
    "from_commit",
    "from_commit_short",
    "from_commit_subject",
    "from_value",
    "from_runs",
    "from_commits",
    "to_commit",
    "to_commit_short",
    "to_commit_subject",
    "to_value",
    "to_runs",
    "to_commits",
    "events",
    "n_suspects",
    "suspects",
    "confounders",
)


def shifts_frame(timeline: Timeline) -> pd.DataFrame:
    """One row per throughput shift between two versions of a workload group (JSON ``shifts``).

    ``start`` / ``end`` (UTC) bound when the level moved, as far as the runs tell: the end of the
    last run on the ``from`` side, the start of the first run on the ``to`` side (the band the
    HTML report shades). ``from`` / ``to`` are flattened to ``from_commit`` (with
    ``from_commit_short``, ``from_commit_subject``), ``from_value`` (the level, in ``unit``),
    ``from_runs`` (run ids), ``from_commits`` (the versions pooled) and the same for ``to_``;
    ``suspects`` is the list of suspect shas (``n_suspects`` their count); ``confounders`` a list
    of ``{"field", "from", "to"}``. Empty, with these columns, when the timeline has no shifts.
    """
    subjects = plain.commit_subjects(timeline)
    runs = {run.id: run for run in timeline.runs}
    rows: list[dict[str, Any]] = []
    for shift in timeline.shifts:
        start, end = plain.shift_window(shift, runs)
        row: dict[str, Any] = {
            "shift_id": shift.id,
            "group": shift.group,
            "metric": shift.metric,
            "unit": shift.unit,
            "verdict": shift.verdict,
            "measured": shift.measured,
            "change_pct": shift.change_pct,
            "p_value": shift.p_value,
            "method": shift.method,
            "single_run": shift.single_run,
            "start": start,
            "end": end,
            "events": list(shift.events),
            "n_suspects": len(shift.suspects),
            "suspects": [suspect.sha for suspect in shift.suspects],
            "confounders": [plain.confounder_values(c) for c in shift.confounders],
        }
        for name, side in (("from", shift.from_side), ("to", shift.to_side)):
            row.update({f"{name}_{key}": value for key, value in plain.side_values(side).items()})
            row[f"{name}_commit_short"] = plain.short_sha(side.commit)
            row[f"{name}_commit_subject"] = subjects.get(side.commit)
        rows.append(row)
    return _frame(
        _by_column(rows, SHIFT_COLUMNS),
        times=("start", "end"),
        categories=("group", "metric", "unit", "verdict", "measured", "method"),
        ordered={**_commit_orders(timeline, "from_"), **_commit_orders(timeline, "to_")},
        floats=("change_pct", "p_value", "from_value", "to_value"),
        ints=("n_suspects",),
        bools=("single_run",),
        strings=("shift_id", "from_commit_subject", "to_commit_subject"),
        lists=("from_runs", "from_commits", "to_runs", "to_commits", "events", "suspects", "confounders"),
    )
