"""CSV: one row per run, flat, for spreadsheets and ``pandas.read_csv``.

The same flat record (``run_record``) feeds ``runs_frame(Timeline)``, so the CSV and the
DataFrame always agree. No pandas here: writing a CSV must stay as fast as the table.

Columns, in order (README, "CSV and the HTML report"):

- ``id``, ``source``, ``first_line``, ``last_line``, ``kind``
- ``start``, ``end`` (ISO-8601 in UTC), ``start_local`` (as the log printed it), ``tz``, ``tz_source``,
  ``duration_s``
- ``commit`` (full sha), ``attribution``, ``events_during`` (ids separated by spaces)
- ``group`` (the workload label, e.g. ``Qwen3-235B-A22B-FP8 tp8 EAGLE3/2/1/3``)
- key configuration: ``model``, ``tp_size``, ``dp_size``, ``ep_size``, ``pp_size``,
  ``speculative_algorithm``, ``speculative_num_steps``, ``speculative_eagle_topk``,
  ``speculative_num_draft_tokens``, ``quantization``, ``dtype``, ``kv_cache_dtype``
- ``nccl_versions`` (separated by spaces)
- per metric (``decode_throughput``, ``accept_len``, ``prefill_input_throughput``, then any
  other in name order): ``<metric>_n``, ``_median``, ``_mean``, ``_min``, ``_max``
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from typing import Any

from timeline.model import Run, Timeline
from timeline.workload import workload_label

KEY_CONFIG = (
    "tp_size",
    "dp_size",
    "ep_size",
    "pp_size",
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "quantization",
    "dtype",
    "kv_cache_dtype",
)
KNOWN_METRICS = ("decode_throughput", "accept_len", "prefill_input_throughput")
STATS = ("n", "median", "mean", "min", "max")
LEADING_COLUMNS = (
    "id",
    "source",
    "first_line",
    "last_line",
    "kind",
    "start",
    "end",
    "start_local",
    "tz",
    "tz_source",
    "duration_s",
    "commit",
    "attribution",
    "events_during",
    "group",
    "model",
    *KEY_CONFIG,
    "nccl_versions",
)


def metric_names(timeline: Timeline) -> list[str]:
    """The known metrics always (stable columns), then any other metric a run has, by name."""
    others = sorted({name for run in timeline.runs for name in run.metrics} - set(KNOWN_METRICS))
    return [*KNOWN_METRICS, *others]


def columns(timeline: Timeline) -> list[str]:
    return [*LEADING_COLUMNS, *(f"{m}_{s}" for m in metric_names(timeline) for s in STATS)]


def _utc(moment: datetime | None) -> datetime | None:
    return None if moment is None else moment.astimezone(timezone.utc)


def _scalar(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def run_record(run: Run, metrics: list[str] | tuple[str, ...] = KNOWN_METRICS) -> dict[str, Any]:
    """One run as a flat dict of Python values (aware UTC datetimes, lists kept as lists)."""
    duration = (run.end - run.start).total_seconds() if run.start and run.end else None
    record: dict[str, Any] = {
        "id": run.id,
        "source": run.source,
        "first_line": run.first_line,
        "last_line": run.last_line,
        "kind": run.kind,
        "start": _utc(run.start),
        "end": _utc(run.end),
        "start_local": run.start_local,
        "tz": run.tz,
        "tz_source": run.tz_source,
        "duration_s": duration,
        "commit": run.commit,
        "attribution": run.attribution,
        "events_during": list(run.events_during),
        "group": workload_label(run.config) or None,
        "model": _scalar(run.config.get("model_path")),
    }
    for key in KEY_CONFIG:
        record[key] = _scalar(run.config.get(key))
    record["nccl_versions"] = list(run.nccl_versions)
    for name in metrics:
        summary = run.metrics.get(name)
        for stat in STATS:
            record[f"{name}_{stat}"] = getattr(summary, stat) if summary is not None else None
    return record


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    if isinstance(value, float):
        return repr(value)
    return value


def timeline_csv(timeline: Timeline) -> str:
    """The runs as CSV text (RFC 4180 quoting, ``\\n`` line ends, a header row)."""
    names = metric_names(timeline)
    header = columns(timeline)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for run in timeline.runs:
        record = run_record(run, names)
        writer.writerow([_cell(record[column]) for column in header])
    return buffer.getvalue()
