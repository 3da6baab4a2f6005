"""Parquet: the four frames as files, for DuckDB, Spark, polars (``timeline build --parquet DIR``).

``runs.parquet``, ``samples.parquet`` (when the samples were kept), ``events.parquet`` and
``shifts.parquet``: the columns and types of ``timeline.frames`` (``runs_frame``...), through
Arrow. The samples are typed columns from end to end (numbers, booleans, times, dictionary-coded
labels): no Python object a row. A shift's ``confounders`` (their values mix booleans, numbers
and text) are written as JSON text, and so is a column Arrow cannot type (a field whose values
mix types, as a damaged line's text among numbers): each value as text. Each file is written by
``timeline.export.write_atomic``, the writer of every output: a reader sees the old file or the
new one, its permissions are kept.

Needs pyarrow (``pip install 'timeline[parquet]'``); without it ``write_parquet`` raises
``ParquetUnavailable``, one line saying so.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from timeline.errors import OutputError, TimelineError
from timeline.export import write_atomic
from timeline.frames import events_frame, runs_frame, samples_frame, shifts_frame
from timeline.model import Timeline

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["ParquetUnavailable", "require_pyarrow", "write_parquet", "PARQUET_TABLES"]

PARQUET_TABLES = ("runs", "samples", "events", "shifts")
JSON_COLUMNS = ("confounders",)  # lists of {"field", "from", "to"} whose values mix types: as JSON text


class ParquetUnavailable(TimelineError):
    """Parquet was asked for and pyarrow is not installed."""


def require_pyarrow() -> None:
    """Raise ``ParquetUnavailable`` unless pyarrow can be imported (checked before any work)."""
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError as missing:
        raise ParquetUnavailable("writing Parquet needs pyarrow: pip install 'timeline[parquet]'") from missing


def write_parquet(timeline: Timeline, folder: str | os.PathLike, *, option: str | None = None) -> list[Path]:
    """Write the frames of ``timeline`` as Parquet files in ``folder`` (made if missing); the
    samples only when the timeline kept them. Returns the files written. ``option``: the
    parameter that named ``folder``, for an ``OutputError``."""
    require_pyarrow()
    target = Path(folder)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise OutputError(f"{target}: cannot make the folder: {why}", exc.errno, option=option) from None
    frames = {"runs": runs_frame, "samples": samples_frame, "events": events_frame, "shifts": shifts_frame}
    kept = all(run.samples is not None for run in timeline.runs)
    written = []
    for name in PARQUET_TABLES:
        if name == "samples" and not kept:
            continue
        path = target / f"{name}.parquet"
        _write_table(frames[name](timeline), path, option)
        written.append(path)
    return written


def _write_table(frame: pd.DataFrame, path: Path, option: str | None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {name: _arrow_column(frame[name]) for name in frame.columns}
    table = pa.table(columns)
    write_atomic(path, lambda handle: pq.write_table(table, handle), option=option)


def _arrow_column(column: pd.Series):
    """``column`` as an Arrow array of its own type; as text when Arrow cannot type it (values of
    mixed types: a damaged line's text among numbers) and for ``JSON_COLUMNS``."""
    import pyarrow as pa

    if column.name not in JSON_COLUMNS:
        try:
            return pa.Array.from_pandas(column)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
    return pa.array([_text(cell) for cell in column], pa.string())


def _text(cell: Any) -> str | None:
    if cell is None:
        return None
    return json.dumps(cell, default=str) if isinstance(cell, (list, dict)) else str(cell)
