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

from timeline.clock import format_offset, iso
from timeline.model import (
    Clearing,
    CodeEvent,
    CommitInfo,
    Confounder,
    Run,
    Shift,
    ShiftNotes,
    ShiftSide,
    Timeline,
    is_zero_sha,
)
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
# The metrics whose summaries are core columns, ``<metric>_<stat>``; any other is ``metric.<name>.<stat>``.
KNOWN_METRICS = ("decode_throughput", "accept_len", "prefill_input_throughput")
STATS = ("n", "median", "mean", "min", "max", "stddev", "p10", "p25", "p75", "p90", "iqr")
# What says which commit a row is about: every frame that has ``commit`` has these beside it.
COMMIT_COLUMNS = ("commit", "commit_short", "commit_subject")
RUN_LEADING = (
    "run_id",
    "source",
    "first_line",
    "last_line",
    "run_kind",
    "status",
    "start",
    "end",
    "start_local",
    "tz",
    "tz_source",
    "date_source",
    "duration_s",
    *COMMIT_COLUMNS,
    "attribution",
    "ambiguous_reasons",
    "candidate_commits",
    "zone_readings",
    "events_during",
    "group",
    "model",
    *KEY_CONFIG,
    "nccl_versions",
    "cuda_driver_versions",
    "steady_metric",
    "steady_value",
    "steady_unit",
    "steady_n",
    "steady_spread",
    "error_line",
    "error",
)


def metric_column(name: str, stat: str) -> str:
    """``decode_throughput_median`` for a known metric, ``metric.e2e_latency_median.median`` for any other."""
    return f"{name}_{stat}" if name in KNOWN_METRICS else f"metric.{name}.{stat}"


def metric_names(timeline: Timeline) -> list[str]:
    """The known metrics always (stable columns), then any other metric a run has, by name."""
    others = sorted({name for run in timeline.runs for name in run.metrics} - set(KNOWN_METRICS))
    return [*KNOWN_METRICS, *others]


def run_columns(timeline: Timeline) -> list[str]:
    """The names of ``run_records``' values, in order, for the runs of ``timeline``."""
    return [*RUN_LEADING, *(metric_column(m, s) for m in metric_names(timeline) for s in STATS)]


def utc(moment: datetime | None) -> datetime | None:
    try:
        return None if moment is None else moment.astimezone(timezone.utc)
    except OverflowError:  # past 9999-12-31 in UTC: kept in its own offset, the same instant
        return moment


def scalar(value: Any) -> Any:
    """A configuration value as one cell: a list or dict as its JSON text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def short_sha(sha: str | None) -> str | None:
    """The 9-character form the views show; None for no commit."""
    return None if sha is None else sha[:9]


def commit_order(timeline: Timeline) -> list[str]:
    """Every commit the timeline's rows name, in history order: the versions HEAD held, in the
    order the reflog moved it (the first move's starting point first), then any other commit a
    run or shift names, in the order they come. A reset back to an older version does not move
    that version later: each commit stands where it first held HEAD."""
    order: dict[str, None] = {}
    for event in timeline.events:
        for sha in (event.old, event.new):
            if not is_zero_sha(sha):
                order.setdefault(sha, None)
    for run in timeline.runs:
        if run.commit:
            order.setdefault(run.commit, None)
    for shift in timeline.shifts:
        for side in (shift.from_side, shift.to_side):
            for sha in (*side.commits, side.commit):
                order.setdefault(sha, None)
    return list(order)


def commit_subjects(timeline: Timeline) -> dict[str, str]:
    """The subject of every commit the timeline read one for: those the code events brought in
    or took away, and the suspects. A version no event listed (HEAD moved to an old commit
    without bringing it in) has none."""
    subjects: dict[str, str] = {}
    for event in timeline.events:
        for commit in (*event.commits, *event.commits_removed):
            subjects.setdefault(commit.sha, commit.subject)
    for shift in timeline.shifts:
        for suspect in shift.suspects:
            subjects.setdefault(suspect.sha, suspect.subject)
    return subjects


def run_records(timeline: Timeline) -> list[dict[str, Any]]:
    """Each run as a flat dict of ``run_columns`` (aware UTC datetimes, lists kept as lists)."""
    names = metric_names(timeline)
    subjects = commit_subjects(timeline)
    return [run_record(run, names, subjects) for run in timeline.runs]


def run_record(run: Run, metrics: list[str], subjects: dict[str, str]) -> dict[str, Any]:
    duration = (run.end - run.start).total_seconds() if run.start and run.end else None
    steady = run.steady
    record: dict[str, Any] = {
        "run_id": run.id,
        "source": run.source,
        "first_line": run.first_line,
        "last_line": run.last_line,
        "run_kind": run.kind,
        "status": run.status,
        "start": utc(run.start),
        "end": utc(run.end),
        "start_local": run.start_local,
        "tz": run.tz,
        "tz_source": run.tz_source,
        "date_source": run.date_source,
        "duration_s": duration,
        "commit": run.commit,
        "commit_short": short_sha(run.commit),
        "commit_subject": subjects.get(run.commit or ""),
        "attribution": run.attribution,
        "ambiguous_reasons": list(run.ambiguous_reasons),
        "candidate_commits": list(run.candidate_commits),
        "zone_readings": zone_readings_value(run),
        "events_during": list(run.events_during),
        "group": workload_label(run.config, run.machine) or None,
        "model": scalar(run.config.get("model_path")),
    }
    for key in KEY_CONFIG:
        record[key] = scalar(run.config.get(key))
    record["nccl_versions"] = list(run.nccl_versions)
    record["cuda_driver_versions"] = list(run.cuda_driver_versions)
    record["steady_metric"] = None if steady is None else steady.metric
    record["steady_value"] = None if steady is None else steady.value
    record["steady_unit"] = None if steady is None else steady.unit
    record["steady_n"] = None if steady is None else steady.n
    record["steady_spread"] = None if steady is None else steady.spread
    record["error_line"] = run.error_line
    record["error"] = run.error
    for name in metrics:
        summary = run.metrics.get(name)
        for stat in STATS:
            record[metric_column(name, stat)] = getattr(summary, stat) if summary is not None else None
    return record


def zone_readings_value(run: Run) -> str | None:
    """A zone-assumed run's readings in one cell, west to east: each span of real-world offsets
    and the commit under it (``UTC-12:00..-08:00 abc123def; UTC-07:00..+14:00 456789abc``;
    ``before-reflog`` where the reflog does not reach); None when the zone did not matter. It
    starts with ``UTC``, not a sign, so a spreadsheet reads it as text, not a formula."""
    if not run.zone_readings:
        return None
    return "; ".join(
        f"UTC{format_offset(r.min_offset)}..{format_offset(r.max_offset)} {short_sha(r.commit) or 'before-reflog'}"
        for r in run.zone_readings
    )


def shift_window(shift: Shift, runs: dict[str, Run]) -> tuple[datetime | None, datetime | None]:
    """When the level moved, as far as the runs tell: from the end of the last run on the
    ``from`` side to the start of the first run on the ``to`` side (UTC; None when not known)."""
    ends = [moment for run in _runs(runs, shift.from_side.runs) if (moment := run.end or run.start) is not None]
    starts = [run.start for run in _runs(runs, shift.to_side.runs) if run.start is not None]
    return utc(max(ends, default=None)), utc(min(starts, default=None))


def _runs(runs: dict[str, Run], ids: list[str]) -> list[Run]:
    return [runs[run_id] for run_id in ids if run_id in runs]


def commit_values(commit: CommitInfo) -> dict[str, Any]:
    """A commit an event brought in or took away, as the JSON's ``commits`` describes it (its
    dates aware, in their recorded offsets)."""
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
    """A code event, in the JSON's keys and order (``time`` aware, in the reflog's offset); its
    commits by sha (``commit_values`` describes each)."""
    return {
        "id": event.id,
        "time": event.time,
        "ref": event.ref,
        "kind": event.kind,
        "message": event.message,
        "old": event.old,
        "new": event.new,
        "changes_commit": event.changes_commit,
        "commits": [c.sha for c in event.commits],
        "commits_removed": [c.sha for c in event.commits_removed],
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


def clearing_values(clearing: Clearing | None) -> dict[str, Any] | None:
    """Why narrowing set a suspect aside, as facts (``Clearing``), or None."""
    if clearing is None:
        return None
    return {
        "reason": clearing.reason,
        "shift": clearing.shift,
        "by": clearing.by,
        "change": clearing.change,
        "change_pct": clearing.change_pct,
    }


def note_values(notes: ShiftNotes) -> dict[str, Any]:
    """What is special about a shift, as facts (``ShiftNotes``; the views word them)."""
    return {
        "absorbed_by": notes.absorbed_by,
        "pooled": {side: list(commits) for side, commits in notes.pooled.items()},
        "left_out": [{"run": run, "reason": reason} for run, reason in notes.left_out],
        "no_event": notes.no_event,
        "boundary": list(notes.boundary),
    }


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
