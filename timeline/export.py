"""The JSON v1 contract, and writing outputs atomically.

The document is a contract for other tools: fields are added freely, never renamed or removed
without a new ``schema_version``. Every field is documented in docs/json-v1.md.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from timeline.clock import iso
from timeline.model import CodeEvent, Culprit, RepoInfo, Run, Shift, ShiftSide, Timeline

SCHEMA_VERSION = 1


def timeline_to_dict(timeline: Timeline) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_at": iso(timeline.generated_at),
        "log_tz": timeline.log_tz,
        "log_tz_source": timeline.log_tz_source,
        "repo": None if timeline.repo is None else repo_to_dict(timeline.repo),
        "events": [event_to_dict(e) for e in timeline.events],
        "context": [event_to_dict(e) for e in timeline.context],
        "runs": [run_to_dict(r) for r in timeline.runs],
        "warnings": [{"source": w.source, "line": w.line, "message": w.message} for w in timeline.warnings],
        "shifts": [shift_to_dict(s) for s in timeline.shifts],
        "culprits": [culprit_to_dict(c) for c in timeline.culprits],
    }


def repo_to_dict(repo: RepoInfo) -> dict[str, Any]:
    return {
        "path": repo.path,
        "head": repo.head,
        "coverage": {
            "reason": repo.coverage_reason,
            "start": iso(repo.coverage_start),
            "description": repo.coverage_description,
        },
    }


def event_to_dict(event: CodeEvent) -> dict[str, Any]:
    def commit_to_dict(commit) -> dict[str, Any]:
        return {
            "sha": commit.sha,
            "subject": commit.subject,
            "author": commit.author,
            "author_email": commit.author_email,
            "author_date": iso(commit.author_date),
            "committer_date": iso(commit.committer_date),
            "paths": None if commit.paths is None else list(commit.paths),
        }

    return {
        "id": event.id,
        "time": iso(event.time),
        "ref": event.ref,
        "kind": event.kind,
        "message": event.message,
        "old": event.old,
        "new": event.new,
        "changes_commit": event.changes_commit,
        "commits": [commit_to_dict(c) for c in event.commits],
        "commits_removed": [commit_to_dict(c) for c in event.commits_removed],
        "source": event.source,
        "line": event.line,
        "files_may_differ": event.files_may_differ,
        "approximate": event.approximate,
        "detail": event.detail,
        "note": event.note,
        "old_inferred": event.old_inferred,
    }


def run_to_dict(run: Run) -> dict[str, Any]:
    document = {
        "id": run.id,
        "source": run.source,
        "kind": run.kind,
        "start": iso(run.start),
        "end": iso(run.end),
        "start_local": run.start_local,
        "tz": run.tz,
        "tz_source": run.tz_source,
        "first_line": run.first_line,
        "last_line": run.last_line,
        "commit": run.commit,
        "attribution": run.attribution,
        "events_during": list(run.events_during),
        "candidate_commits": list(run.candidate_commits),
        "files_may_differ": run.files_may_differ,
        "nccl_versions": list(run.nccl_versions),
        "config": json_safe(run.config),
        "metrics": {name: asdict(summary) for name, summary in run.metrics.items()},
        "steady": None if run.steady is None else asdict(run.steady),
    }
    if run.samples is not None:
        document["samples"] = {kind: [_sample_row(row) for row in rows] for kind, rows in run.samples.items()}
    return document


def shift_to_dict(shift: Shift) -> dict[str, Any]:
    """One shift (docs/json-v1.md, "shifts[]")."""

    def side(s: ShiftSide) -> dict[str, Any]:
        return {"commit": s.commit, "runs": list(s.runs), "value": s.value, "commits": list(s.commits)}

    return {
        "id": shift.id,
        "group": shift.group,
        "metric": shift.metric,
        "unit": shift.unit,
        "from": side(shift.from_side),
        "to": side(shift.to_side),
        "change_pct": shift.change_pct,
        "p_value": shift.p_value,
        "method": shift.method,
        "verdict": shift.verdict,
        "single_run": shift.single_run,
        "more_runs": None if shift.more_runs is None else {"from": shift.more_runs[0], "to": shift.more_runs[1]},
        "events": list(shift.events),
        "suspects": [
            {
                "sha": s.sha,
                "subject": s.subject,
                "change": s.change,
                "event": s.event,
                "author_date": iso(s.author_date) if s.author_date is not None else None,
                "paths": None if s.paths is None else list(s.paths),
                "unlikely": s.unlikely,
                "cleared": s.cleared,
            }
            for s in shift.suspects
        ],
        "confounders": [{"field": c.field, "from": json_safe(c.from_value), "to": json_safe(c.to_value)}
                        for c in shift.confounders],
        "bisect": None if shift.bisect is None else asdict(shift.bisect),
        "notes": list(shift.notes),
    }


def culprit_to_dict(culprit: Culprit) -> dict[str, Any]:
    return {"sha": culprit.sha, "subject": culprit.subject, "shifts": list(culprit.shifts),
            "reason": culprit.reason, "likelihood": culprit.likelihood}


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


def _sample_row(row: dict[str, Any]) -> dict[str, Any]:
    """``json_safe`` of a sample: flat, scalars only (parsers.records), so without the recursion
    (a million samples: seconds)."""
    out = dict(row)
    for key, value in row.items():
        if value.__class__ is float:
            if not math.isfinite(value):
                out[key] = repr(value)
        elif isinstance(value, datetime):
            out[key] = iso(value)
        elif isinstance(value, (dict, list, tuple)):
            out[key] = json_safe(value)
    return out


def dumps(timeline: Timeline) -> str:
    """The JSON v1 document: the top level indented, each run, event, shift... on a line of its own
    (one ``grep`` a run). Not ``indent=2`` all through: that makes ``json`` use its pure-Python
    encoder, about ten times slower (a thousand runs: half a second)."""

    def compact(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)

    fields = []
    for key, value in timeline.to_dict().items():
        if isinstance(value, list) and value:
            value_text = "[\n" + ",\n".join(f"    {compact(item)}" for item in value) + "\n  ]"
        else:
            value_text = compact(value)
        fields.append(f"  {compact(key)}: {value_text}")
    return "{\n" + ",\n".join(fields) + "\n}\n"


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` so a reader sees the old file or the new one, never a part.

    ``-`` means standard output.
    """
    if os.fspath(path) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    target = Path(path)
    if target.is_char_device() or target.is_fifo():  # /dev/null, a pipe: nothing to replace
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(text)
        return
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
