"""``timeline.load(path)``: a JSON document (``timeline build --json``) read back into a ``Timeline``.

The document holds every fact of the model that an output reads, so a loaded timeline gives the
same frames, tables and JSON as the one that was built (``tests/test_loader.py`` checks build ->
JSON -> load -> the same JSON and frames). Versions 3 (each commit described once, in the
``commits`` array, events list positions in it), 2 (``commits`` keyed by sha, events list shas)
and 1 (the details in every event) are all read. What it cannot hold: the messages a run
printed (``Run.messages``, read by the shift analysis only) and samples when the document was
written without ``--samples``. Unknown fields are ignored (documents only ever gain fields
within a version).
"""

from __future__ import annotations

import json
import os
from dataclasses import fields
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from timeline.columns import SampleRows
from timeline.errors import TimelineError
from timeline.model import (
    Bisect,
    Clearing,
    CodeEvent,
    CommitInfo,
    Confounder,
    Culprit,
    Evidence,
    MetricSummary,
    Provenance,
    RepoInfo,
    Rerun,
    Run,
    Shift,
    ShiftNotes,
    ShiftSide,
    SteadyValue,
    Suspect,
    Timeline,
    ZoneReading,
)
from timeline.records import Diagnostic

__all__ = ["load", "from_document", "samples_from_dict", "DocumentError"]

# 2: events list shas, the top-level "commits" describes each; 3: events list positions in the
# "commits" array (docs/json.md)
SCHEMA_VERSIONS = (1, 2, 3)
_NOT_FINITE = {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}  # json_safe's text for them
T = TypeVar("T")


class DocumentError(TimelineError, ValueError):
    """The file is not a timeline JSON document."""


def load(path: str | os.PathLike) -> Timeline:
    """The ``Timeline`` of the JSON document at ``path``: its runs (with their samples when it
    was written with ``--samples``), events, shifts, culprits and warnings. Raises
    ``DocumentError`` (one line naming the file) when it cannot be read as one."""
    source = os.fspath(path)
    try:
        document = json.loads(Path(path).read_bytes())
    except OSError as exc:
        raise DocumentError(f"{source}: cannot read: {exc.strerror or exc}") from exc
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise DocumentError(f"{source}: not JSON: {exc}") from exc
    return from_document(document, source)


def from_document(document: Any, source: str = "document") -> Timeline:
    """``load`` of a parsed document (``json.loads`` of the export, or ``timeline.to_dict``)."""
    if not isinstance(document, dict) or "schema_version" not in document:
        raise DocumentError(f"{source}: not a timeline JSON document (no schema_version)")
    if document["schema_version"] not in SCHEMA_VERSIONS:
        raise DocumentError(
            f"{source}: schema_version {document['schema_version']!r}, this timeline reads "
            + ", ".join(map(str, SCHEMA_VERSIONS[:-1]))
            + f" and {SCHEMA_VERSIONS[-1]}"
        )
    try:
        return _timeline(document)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DocumentError(f"{source}: not a valid timeline JSON document ({type(exc).__name__}: {exc})") from exc


def _timeline(document: dict[str, Any]) -> Timeline:
    described = _described(document.get("commits"))

    def _event(event: dict[str, Any]) -> CodeEvent:
        return _code_event(event, described)

    return Timeline(
        generated_at=datetime.fromisoformat(document["generated_at"]),
        log_tz=document["log_tz"],
        log_tz_source=document["log_tz_source"],
        repo=_repo(document.get("repo")),
        events=[_event(e) for e in document.get("events", [])],
        runs=[_run(r) for r in document.get("runs", [])],
        warnings=[
            Diagnostic(w["source"], w["line"], w["message"], w.get("code", "other"))
            for w in document.get("warnings", [])
        ],
        context=[_event(e) for e in document.get("context", [])],
        shifts=[_shift(s) for s in document.get("shifts", [])],
        culprits=[_culprit(c) for c in document.get("culprits", [])],
        provenance=_provenance(document),
    )


def _provenance(document: dict[str, Any]) -> Provenance | None:
    generator = document.get("generator")
    if generator is None:  # written before the document recorded it
        return None
    return Provenance(
        generator["version"], generator["python"], generator["platform"], document["host"], document["options"]
    )


def _known(cls: type[T], values: dict[str, Any], **overrides: Any) -> T:
    """``cls`` from the fields of ``values`` it has (a newer document's extra fields ignored)."""
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**{**{k: v for k, v in values.items() if k in names}, **overrides})


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _repo(repo: dict[str, Any] | None) -> RepoInfo | None:
    if repo is None:
        return None
    coverage = repo.get("coverage") or {}
    return RepoInfo(
        repo["path"],
        repo["head"],
        coverage.get("reason"),
        _time(coverage.get("start")),
        coverage.get("description", ""),
    )


# --- events -----------------------------------------------------------------------------------


def _commit(values: dict[str, Any]) -> CommitInfo:
    paths = values.get("paths")
    return _known(
        CommitInfo,
        values,
        author_date=_time(values.get("author_date")),
        committer_date=_time(values.get("committer_date")),
        paths=None if paths is None else tuple(paths),
    )


def _described(commits: list[Any] | dict[str, Any] | None) -> dict[int | str, CommitInfo]:
    """The ``commits`` table, one ``CommitInfo`` a commit (shared by the events that list it), by
    what the events name it by: its position (version 3's array) or its sha (version 2's object;
    version 1 has none)."""
    if isinstance(commits, list):
        return {index: _commit(values) for index, values in enumerate(commits)}
    return {sha: _commit({**values, "sha": sha}) for sha, values in (commits or {}).items()}


def _code_event(event: dict[str, Any], described: dict[int | str, CommitInfo]) -> CodeEvent:
    """An event; its commits from ``described`` by position (version 3) or sha (version 2), or
    each given whole (version 1)."""

    def one(commit: Any) -> CommitInfo:
        if isinstance(commit, dict):
            return _commit(commit)
        if commit not in described:
            raise ValueError(f"event {event['id']} lists commit {commit!r}, which commits does not describe")
        return described[commit]

    def listed(key: str) -> list[CommitInfo]:
        return [one(commit) for commit in event.get(key, [])]

    time = datetime.fromisoformat(event["time"])
    return _known(
        CodeEvent,
        event,
        time=time,
        ts=int(time.timestamp()),
        commits=listed("commits"),
        commits_removed=listed("commits_removed"),
    )


# --- runs -------------------------------------------------------------------------------------


def _run(run: dict[str, Any]) -> Run:
    samples = run.get("samples")
    steady = run.get("steady")
    return _known(
        Run,
        run,
        start=_time(run["start"]),
        end=_time(run["end"]),
        metrics={name: _known(MetricSummary, _finite(summary)) for name, summary in run.get("metrics", {}).items()},
        steady=None if steady is None else _known(SteadyValue, steady),
        zone_readings=[
            ZoneReading(r["commit"], _offset(r["min_offset"]), _offset(r["max_offset"]))
            for r in run.get("zone_readings", [])
        ],
        samples=None if samples is None else samples_from_dict(samples),
    )


def samples_from_dict(samples: dict[str, list[dict[str, Any]]]) -> dict[str, SampleRows]:
    """A run's ``samples`` as the JSON holds them (timeline.export.samples_to_dict), typed again."""
    return {kind: _sample_rows(rows) for kind, rows in samples.items()}


def _offset(text: str) -> timedelta:
    """``-07:00`` as a timedelta."""
    sign = -1 if text.startswith("-") else 1
    hours, minutes = text[1:].split(":")
    return sign * timedelta(hours=int(hours), minutes=int(minutes))


def _finite(values: dict[str, Any]) -> dict[str, Any]:
    return {key: _NOT_FINITE.get(value, value) if isinstance(value, str) else value for key, value in values.items()}


def _sample_rows(rows: list[dict[str, Any]]) -> SampleRows:
    """The stats lines of one kind, typed again: ``time`` a datetime, "inf"/"nan" floats."""
    stored = SampleRows()
    for row in rows:
        values = _finite(row)
        if values.get("time") is not None:
            values["time"] = datetime.fromisoformat(values["time"])
        stored.append(values)
    return stored


# --- shifts and culprits ----------------------------------------------------------------------


def _clearing(clearing: dict[str, Any] | None) -> Clearing | None:
    return None if clearing is None else _known(Clearing, clearing)


def _side(side: dict[str, Any]) -> ShiftSide:
    return _known(ShiftSide, side)


def _shift(shift: dict[str, Any]) -> Shift:
    more = shift.get("more_runs")
    bisect = shift.get("bisect")
    facts = shift.get("note_facts") or {}
    notes = ShiftNotes(
        absorbed_by=facts.get("absorbed_by"),
        pooled={side: list(commits) for side, commits in (facts.get("pooled") or {}).items()},
        left_out=[(item["run"], item["reason"]) for item in facts.get("left_out", [])],
        no_event=facts.get("no_event", False),
        boundary=list(facts.get("boundary", [])),
    )
    return _known(
        Shift,
        shift,
        from_side=_side(shift["from"]),
        to_side=_side(shift["to"]),
        more_runs=None if more is None else (more["from"], more["to"]),
        suspects=[
            _known(Suspect, s, author_date=_time(s.get("author_date")), cleared=_clearing(s.get("clearing")))
            for s in shift.get("suspects", [])
        ],
        confounders=[Confounder(c["field"], c["from"], c["to"]) for c in shift.get("confounders", [])],
        bisect=None if bisect is None else _known(Bisect, bisect),
        notes=notes,
        quiet=shift["verdict"] is None,  # a change under the minimum effect has no verdict (timeline.detect)
        reruns=[Rerun(r["side"], tuple(r["settings"].items())) for r in shift.get("reruns", [])],
    )


def _culprit(culprit: dict[str, Any]) -> Culprit:
    return _known(
        Culprit,
        culprit,
        evidence=[
            _known(
                Evidence,
                e,
                shifts=tuple(e.get("shifts", ())),
                paths=tuple(e.get("paths", ())),
                clearing=_clearing(e.get("clearing")),
            )
            for e in culprit.get("evidence", [])
        ],
    )
