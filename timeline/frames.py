"""The timeline as pandas DataFrames: ``runs_frame``, ``samples_frame``, ``events_frame``, ``shifts_frame``.

Also reachable as ``runs_frame(Timeline)`` and friends. pandas is imported here only, and only
when a frame is asked for: ``import timeline`` and the CLI never load it.

Dtypes: every time is a tz-aware ``datetime64[ns, UTC]`` (runs, samples and events may come
from different zones; one column holds one zone, so all are in UTC); counts and line numbers are
nullable ``Int64``; measurements are ``float64``; flags are ``boolean``; labels with few values
(kind, attribution, group, commit, verdict...) are ``category``; free text is ``string``;
lists (``events_during``, the commits an event brought in...) stay Python lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from timeline.errors import TimelineError
from timeline.model import Timeline
from timeline.render import plain

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["SamplesNotKeptError", "runs_frame", "samples_frame", "events_frame", "shifts_frame"]


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


# --- runs -------------------------------------------------------------------------------------


def runs_frame(timeline: Timeline) -> pd.DataFrame:
    """One row per run: the columns of the CSV (``timeline build --format csv``), typed.

    ``start``/``end`` are UTC; ``events_during`` and ``nccl_versions`` are lists.
    """
    names = plain.metric_names(timeline)
    rows = [plain.run_record(run, names) for run in timeline.runs]
    metric_columns = [f"{m}_{s}" for m in names for s in plain.STATS]
    columns = plain.run_columns(timeline)
    counts = [c for c in metric_columns if c.endswith("_n")]
    config_ints = (
        "tp_size",
        "dp_size",
        "ep_size",
        "pp_size",
        "speculative_num_steps",
        "speculative_eagle_topk",
        "speculative_num_draft_tokens",
    )
    return _frame(
        _by_column(rows, columns),
        times=("start", "end"),
        categories=(
            "kind",
            "tz",
            "tz_source",
            "commit",
            "attribution",
            "group",
            "model",
            "speculative_algorithm",
            "quantization",
            "dtype",
            "kv_cache_dtype",
        ),
        ints=("first_line", "last_line", *counts, *(c for c in config_ints if _all_ints(rows, c))),
        floats=("duration_s", *(c for c in metric_columns if c not in counts)),
        strings=("id", "source", "start_local"),
        infer=tuple(c for c in config_ints if not _all_ints(rows, c)),
        lists=("events_during", "nccl_versions"),
    )


def _all_ints(rows: Sequence[dict[str, Any]], column: str) -> bool:
    return all(
        row.get(column) is None or (isinstance(row[column], int) and not isinstance(row[column], bool)) for row in rows
    )


# --- samples ----------------------------------------------------------------------------------

SAMPLE_LEADING = ("run", "commit", "group", "kind", "time", "line", "rank")


def samples_frame(timeline: Timeline) -> pd.DataFrame:
    """One row per parsed stats line (``Decode batch`` / ``Prefill batch``) of every run.

    Columns: ``run`` (run id), ``commit``, ``group``, ``kind`` (``decode``/``prefill``), ``time``
    (UTC), ``line``, ``rank``, then every field the parser read, in snake_case
    (``gen_throughput``, ``accept_len``, ``running_req``, ``token_usage``, ``cuda_graph``...),
    missing where a line did not have it.

    Needs a timeline built with ``keep_samples=True`` (``--samples`` on the command line):
    samples are the bulk of a build's memory, so they are only kept when asked for. Without them
    this raises ``SamplesNotKeptError`` rather than silently returning nothing or re-reading logs
    that may have changed since.
    """
    from timeline.workload import workload_label

    missing = [run.id for run in timeline.runs if run.samples is None]
    if missing:
        raise SamplesNotKeptError(
            "this timeline was built without samples: call timeline.build(..., keep_samples=True) "
            f"to use samples_frame() (runs without samples: {', '.join(missing[:5])}"
            f"{' ...' if len(missing) > 5 else ''})"
        )
    data: dict[str, list[Any]] = {name: [] for name in SAMPLE_LEADING}
    fields: dict[str, None] = {}
    count = 0
    for run in timeline.runs:
        group = workload_label(run.config) or None
        for kind in sorted(run.samples or {}):
            rows = (run.samples or {})[kind]
            n = len(rows)
            # Column by column (timeline.columns.SampleRows): a row's own field wins over the
            # run's columns, as a dict update would; a field it lacks is None.
            part: dict[str, list[Any]] = {
                "run": [run.id] * n,
                "commit": [run.commit] * n,
                "group": [group] * n,
                "kind": [kind] * n,
            }
            for key, (_, values) in rows.batch(0, n).columns.items():
                if key not in SAMPLE_LEADING:
                    fields.setdefault(key, None)
                before = part.get(key) or [None] * n
                part[key] = [
                    value if held else old for value, held, old in zip(values, rows.has(key), before, strict=False)
                ] + before[len(values) :]
            for key, values in part.items():
                data.setdefault(key, [None] * count).extend(values)
            count += n
            for values in data.values():
                values.extend([None] * (count - len(values)))
    times, runs, lines = data["time"], data["run"], data["line"]
    order = sorted(
        range(count),
        key=lambda i: (times[i] is None, times[i].timestamp() if times[i] else 0.0, runs[i], lines[i] or 0),
    )
    return _frame(
        {column: [data[column][i] for i in order] for column in [*SAMPLE_LEADING, *fields]},
        times=("time",),
        categories=("run", "commit", "group", "kind", "rank"),
        ints=("line",),
        infer=tuple(fields),
    )


# --- events -----------------------------------------------------------------------------------

EVENT_COLUMNS = (
    "id",
    "time",
    "kind",
    "ref",
    "message",
    "old",
    "new",
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

    ``commits`` / ``commits_removed`` are lists of full shas (newest first), with their counts in
    ``n_commits`` / ``n_commits_removed``; the flags and notes of the JSON event come after.
    """
    rows: list[dict[str, Any]] = []
    for event in timeline.events:
        row = plain.event_values(event)
        row["time"] = plain.utc(event.time)
        for key in ("commits", "commits_removed"):
            row[f"n_{key}"] = len(row[key])
            row[key] = [commit["sha"] for commit in row[key]]
        rows.append(row)
    return _frame(
        _by_column(rows, EVENT_COLUMNS),
        times=("time",),
        categories=("kind", "ref", "detail"),
        ints=("n_commits", "n_commits_removed", "line"),
        bools=("changes_commit", "files_may_differ", "approximate", "old_inferred"),
        strings=("id", "message", "old", "new", "source", "note"),
        lists=("commits", "commits_removed"),
    )


# --- shifts -----------------------------------------------------------------------------------

SHIFT_COLUMNS = (
    "id",
    "group",
    "metric",
    "unit",
    "verdict",
    "measured",
    "change_pct",
    "p_value",
    "method",
    "single_run",
    "from_commit",
    "from_value",
    "from_runs",
    "from_commits",
    "to_commit",
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

    ``from`` / ``to`` are flattened to ``from_commit``, ``from_value``, ``from_runs`` (run ids),
    ``from_commits`` (the versions pooled) and the same for ``to_``; ``suspects`` is the list of
    suspect shas (``n_suspects`` their count); ``confounders`` a list of ``{"field", "from", "to"}``.
    Empty, with these columns, when the timeline has no shifts.
    """
    rows: list[dict[str, Any]] = []
    for shift in timeline.shifts:
        row: dict[str, Any] = {
            "id": shift.id,
            "group": shift.group,
            "metric": shift.metric,
            "unit": shift.unit,
            "verdict": shift.verdict,
            "measured": shift.measured,
            "change_pct": shift.change_pct,
            "p_value": shift.p_value,
            "method": shift.method,
            "single_run": shift.single_run,
            "events": list(shift.events),
            "n_suspects": len(shift.suspects),
            "suspects": [suspect.sha for suspect in shift.suspects],
            "confounders": [plain.confounder_values(c) for c in shift.confounders],
        }
        for name, side in (("from", shift.from_side), ("to", shift.to_side)):
            row.update({f"{name}_{key}": value for key, value in plain.side_values(side).items()})
        rows.append(row)
    return _frame(
        _by_column(rows, SHIFT_COLUMNS),
        categories=("group", "metric", "unit", "verdict", "measured", "method", "from_commit", "to_commit"),
        floats=("change_pct", "p_value", "from_value", "to_value"),
        ints=("n_suspects",),
        bools=("single_run",),
        strings=("id",),
        lists=("from_runs", "from_commits", "to_runs", "to_commits", "events", "suspects", "confounders"),
    )
