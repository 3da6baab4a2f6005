"""Runs, events and shifts as plain values: the one flattening the CSV, the JSON and the frames share.

Each function reads the typed model (``timeline.model``) and returns Python values (str, int,
float, bool, None, aware datetimes, lists and dicts of them); each output then writes them its own
way: the CSV as cells, the JSON as ISO-8601 text, the frames as typed columns. No pandas, no json.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Any

from timeline.clock import iso
from timeline.model import CodeEvent, CommitInfo, Confounder, Run, ShiftSide, Timeline
from timeline.workload import workload_label

# The server arguments a run's row carries (besides the model), in this order.
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
RUN_LEADING = (
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


def run_columns(timeline: Timeline) -> list[str]:
    """The names of ``run_record``'s values, in order, for the runs of ``timeline``."""
    return [*RUN_LEADING, *(f"{m}_{s}" for m in metric_names(timeline) for s in STATS)]


def utc(moment: datetime | None) -> datetime | None:
    return None if moment is None else moment.astimezone(timezone.utc)


def scalar(value: Any) -> Any:
    """A configuration value as one cell: a list or dict as its JSON text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def run_record(run: Run, metrics: list[str] | tuple[str, ...] = KNOWN_METRICS) -> dict[str, Any]:
    """One run as a flat dict of ``run_columns`` (aware UTC datetimes, lists kept as lists)."""
    duration = (run.end - run.start).total_seconds() if run.start and run.end else None
    record: dict[str, Any] = {
        "id": run.id,
        "source": run.source,
        "first_line": run.first_line,
        "last_line": run.last_line,
        "kind": run.kind,
        "start": utc(run.start),
        "end": utc(run.end),
        "start_local": run.start_local,
        "tz": run.tz,
        "tz_source": run.tz_source,
        "duration_s": duration,
        "commit": run.commit,
        "attribution": run.attribution,
        "events_during": list(run.events_during),
        "group": workload_label(run.config) or None,
        "model": scalar(run.config.get("model_path")),
    }
    for key in KEY_CONFIG:
        record[key] = scalar(run.config.get(key))
    record["nccl_versions"] = list(run.nccl_versions)
    for name in metrics:
        summary = run.metrics.get(name)
        for stat in STATS:
            record[f"{name}_{stat}"] = getattr(summary, stat) if summary is not None else None
    return record


def commit_values(commit: CommitInfo) -> dict[str, Any]:
    """A commit an event brought in or took away (its dates aware, in their recorded offsets)."""
    return {
        "sha": commit.sha,
        "subject": commit.subject,
        "author": commit.author,
        "author_email": commit.author_email,
        "author_date": commit.author_date,
        "committer_date": commit.committer_date,
        "paths": None if commit.paths is None else list(commit.paths),
    }


def event_values(event: CodeEvent) -> dict[str, Any]:
    """A code event, in the JSON's keys and order (``time`` aware, in the reflog's offset)."""
    return {
        "id": event.id,
        "time": event.time,
        "ref": event.ref,
        "kind": event.kind,
        "message": event.message,
        "old": event.old,
        "new": event.new,
        "changes_commit": event.changes_commit,
        "commits": [commit_values(c) for c in event.commits],
        "commits_removed": [commit_values(c) for c in event.commits_removed],
        "source": event.source,
        "line": event.line,
        "files_may_differ": event.files_may_differ,
        "approximate": event.approximate,
        "detail": event.detail,
        "note": event.note,
        "old_inferred": event.old_inferred,
    }


def side_values(side: ShiftSide) -> dict[str, Any]:
    """One side of a shift: the version next to the boundary, its runs, their level, the versions pooled."""
    return {"commit": side.commit, "runs": list(side.runs), "value": side.value, "commits": list(side.commits)}


def confounder_values(confounder: Confounder) -> dict[str, Any]:
    """What else differs between the sides of a shift: ``{"field", "from", "to"}``, JSON-safe."""
    return {"field": confounder.field, "from": json_safe(confounder.from_value), "to": json_safe(confounder.to_value)}


def json_safe(value: Any) -> Any:
    """Plain JSON values: datetimes as ISO-8601, non-finite floats as their repr ("inf", "nan")."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, datetime):
        return iso(value)
    return value
