"""The typed model in the store's compact JSON form, and back.

A run is kept as one JSON array (its fields in ``RUN_FIELDS`` order), not the export's object
(an array of values parses in half the time of an object that repeats every key). Its server
arguments and messages are kept apart (``blobs``: each distinct one once), its events named by
their store identity (``event_entry``, a digest of the reflog entry), not by the ``e3`` of one
build. Times keep their own offset (ISO 8601 text). Nothing is lost: ``decode_run(encode_run(run))``
equals ``run`` but for ``id`` (numbered again when read), ``samples`` (in their own table) and
``machine`` (the row's; None when read, as build made it).

Reading 100,000 runs back is the hot path of ``timeline history``, and decoding that many arrays
takes seconds: most fields are kept in a column of their own too (``run_columns``), and
``ColumnReader`` makes the run from the columns of those history tests on every run, its
``FROM_ARRAY`` fields fetched and decoded from the array only when something reads them (an
output that shows the run).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import fields
from datetime import datetime, timedelta
from typing import Any, Protocol

from timeline.model import CodeEvent, CommitInfo, MetricSummary, RepoInfo, Run, SteadyValue, ZoneReading
from timeline.render.plain import utc
from timeline.workload import workload_label

# The fields of a Run in its array, in order; the others are kept elsewhere (KEPT_APART).
RUN_FIELDS = (
    "source",
    "kind",
    "start",
    "end",
    "start_local",
    "tz",
    "tz_source",
    "first_line",
    "last_line",
    "commit",
    "attribution",
    "events_during",
    "candidate_commits",
    "ambiguous_reasons",
    "zone_readings",
    "files_may_differ",
    "nccl_versions",
    "metrics",
    "steady",
    "status",
    "error",
    "error_line",
    "date_source",
    "cuda_driver_versions",  # migration 0005 gave the arrays stored before it an empty list
)
# machine: the store's row says it; a reading leaves it None, as build made the run (the caller
# that puts several machines in one timeline names them).
KEPT_APART = ("id", "config", "messages", "samples", "machine")
METRIC_FIELDS = tuple(f.name for f in fields(MetricSummary))
STEADY_FIELDS = tuple(f.name for f in fields(SteadyValue))
EVENT_FIELDS = (
    "time",
    "kind",
    "message",
    "old",
    "new",
    "changes_commit",
    "ref",
    "source",
    "line",
    "files_may_differ",
    "approximate",
    "detail",
    "note",
    "old_inferred",
)
# ts: from time; commits: table event_commits; machine: as for runs
EVENT_APART = ("id", "ts", "commits", "commits_removed", "machine")
COMMIT_FIELDS = ("subject", "author", "author_email", "author_date", "committer_date", "paths")


def dumps(value: Any) -> str:
    """Compact JSON; non-finite floats as JSON's NaN/Infinity extension, which ``json.loads`` reads back."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


_fromiso = datetime.fromisoformat


def _time(text: str | None) -> datetime | None:
    return None if text is None else _fromiso(text)


def _made(cls: type[Any], values: dict[str, Any]) -> Any:
    """An instance of the (frozen) dataclass ``cls`` from its field values by name.

    Set straight into the instance's ``__dict__``: the values were the fields of such an instance
    when stored, and a frozen dataclass's ``__init__`` (one ``object.__setattr__`` a field) is
    most of the time of reading 100,000 runs."""
    made = object.__new__(cls)
    made.__dict__.update(values)
    return made


# --- runs --------------------------------------------------------------------------------------


def encode_run(run: Run, entries: dict[str, str]) -> str:
    """``run`` as the store's JSON array; ``entries`` maps the timeline's event ids to their digests."""
    steady = run.steady
    values: dict[str, Any] = {
        **{name: getattr(run, name) for name in RUN_FIELDS},
        "start": _iso(run.start),
        "end": _iso(run.end),
        "events_during": [entries[event] for event in run.events_during],
        "zone_readings": [
            [r.commit, r.min_offset.total_seconds(), r.max_offset.total_seconds()] for r in run.zone_readings
        ],
        "metrics": {name: [getattr(m, f) for f in METRIC_FIELDS] for name, m in run.metrics.items()},
        "steady": None if steady is None else [getattr(steady, f) for f in STEADY_FIELDS],
    }
    return dumps([values[name] for name in RUN_FIELDS])


def decode_run(
    doc: str, config: dict[str, Any], messages: list[str], event_ids: dict[str, str], run_id: str = ""
) -> Run:
    """The ``Run`` of ``encode_run``'s array; ``event_ids`` maps event digests to this reading's event ids."""
    values = dict(zip(RUN_FIELDS, json.loads(doc), strict=True))
    values["start"] = _time(values["start"])
    values["end"] = _time(values["end"])
    values["events_during"] = [event_ids[entry] for entry in values["events_during"] if entry in event_ids]
    if values["zone_readings"]:
        values["zone_readings"] = [
            ZoneReading(commit, timedelta(seconds=low), timedelta(seconds=high))
            for commit, low, high in values["zone_readings"]
        ]
    values["metrics"] = {
        name: _made(MetricSummary, dict(zip(METRIC_FIELDS, m, strict=True))) for name, m in values["metrics"].items()
    }
    steady = values["steady"]
    if steady is not None:
        values["steady"] = _made(SteadyValue, dict(zip(STEADY_FIELDS, steady, strict=True)))
    values.update(id=run_id, config=dict(config), messages=list(messages), samples=None, machine=None)
    run = Run.__new__(Run)
    run.__dict__.update(values)
    return run


# The fields of a stored run fetched and decoded from its array when first read (``StoredRun``),
# not read from columns: what the outputs show, not what history tests on every run. The first
# five are kept only in the array; the others have columns too, for users' queries (and
# ``last_line`` for an ingest's check of runs stored while their log was still written:
# ``writing._readings``).
FROM_ARRAY = (
    "end",
    "start_local",
    "candidate_commits",
    "zone_readings",
    "metrics",
    "last_line",
    "files_may_differ",
    "status",
    "error",
    "error_line",
    "date_source",
)
# The columns of a run that the runs of one log share, most of them whatever the log: kept once
# a distinct set (a blob, ``runs.facets_id``; migrations 0006 and 0007 make it from these
# columns), so a reading fetches one value a run for them, not eleven. In the blob the lists are
# lists, not JSON text.
FACETS = (
    "source",
    "kind",
    "tz",
    "tz_source",
    "attribution",
    "events_during",
    "nccl_versions",
    "steady_metric",
    "steady_unit",
    "steady_source",
    "cuda_driver_versions",
)
# The columns ``ColumnReader`` reads (schema.runs), in this order: the array's fields but the
# ``FROM_ARRAY`` ones, the start as its ISO text, the steady value a column a field, less the
# ``FACETS``.
_AS_COLUMNS = {"start": ("start_iso",), "steady": tuple(f"steady_{name}" for name in STEADY_FIELDS)}
RUN_COLUMNS = tuple(
    column
    for name in RUN_FIELDS
    if name not in FROM_ARRAY
    for column in _AS_COLUMNS.get(name, (name,))
    if column not in FACETS
)


# The columns that hold a list or a dict: JSON text in schema.runs, themselves in the facets' blob.
_JSON_COLUMNS = frozenset(
    ("events_during", "ambiguous_reasons", "nccl_versions", "steady_ranks", "cuda_driver_versions")
)


def run_values(run: Run, entries: dict[str, str]) -> dict[str, Any]:
    """The run's values besides its array, a column each (schema.runs), lists as lists: what users
    query, and what history tests. ``run_columns`` and ``run_facets`` store them."""
    steady = run.steady
    return {
        "source": run.source,
        "kind": run.kind,
        "start": utc(run.start),
        "start_iso": _iso(run.start),
        "tz": run.tz,
        "tz_source": run.tz_source,
        "first_line": run.first_line,
        "last_line": run.last_line,
        "commit": run.commit,
        "workload": workload_label(run.config) or None,
        "attribution": run.attribution,
        "events_during": [entries[event] for event in run.events_during],
        "ambiguous_reasons": run.ambiguous_reasons,
        "files_may_differ": run.files_may_differ,
        "nccl_versions": run.nccl_versions,
        **{f"steady_{name}": None if steady is None else getattr(steady, name) for name in STEADY_FIELDS},
        "status": run.status,
        "error": run.error,
        "error_line": run.error_line,
        "date_source": run.date_source,
        "cuda_driver_versions": run.cuda_driver_versions,
    }


def run_columns(values: dict[str, Any]) -> dict[str, Any]:
    """The run's ``run_values`` as its columns: lists and dicts as JSON text (a run without a steady
    value has no ranks: NULL)."""
    return {
        name: dumps(value) if name in _JSON_COLUMNS and value is not None else value for name, value in values.items()
    }


def run_facets(values: dict[str, Any]) -> str:
    """The run's ``FACETS`` (of its ``run_values``) as their blob's JSON, lists as lists."""
    return dumps([values[name] for name in FACETS])


class Docs(Protocol):
    """Where a ``StoredRun``'s array is fetched from when first needed (timeline.store.reading)."""

    def doc(self, place: int) -> str:
        """The array of the run the reading gave ``place``."""
        ...


class _FromArray:
    """A ``FROM_ARRAY`` field of a ``StoredRun``: the first read of any of them fetches the run's
    array (``Docs``) and decodes it into the instance, whose own values then answer (a descriptor
    without ``__set__`` gives way to the instance's attribute). It also hides the field's class
    default (``status = "ok"``), which would otherwise answer for a run that lacks the attribute."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __get__(self, run: StoredRun | None, owner: type) -> Any:
        if run is None:
            return self
        values = run.__dict__
        if "_row" not in values:
            raise AttributeError(f"{owner.__name__!r} object has no attribute {self._name!r}")
        for name, value in _from_array(values["_docs"].doc(values["_row"])).items():
            values.setdefault(name, value)  # a field set before this read keeps its new value
        del values["_row"], values["_docs"]
        return values[self._name]


class StoredRun(Run):
    """A ``Run`` made from its columns (``ColumnReader``): its ``FROM_ARRAY`` fields are fetched
    and decoded from its array when first read. Equal to the ``Run`` build made."""

    def __eq__(self, other: object) -> bool:
        # the dataclass's own equality wants the very same class: a Run build made is equal too
        if not isinstance(other, Run):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _RUN_NAMES)


for _name in FROM_ARRAY:
    setattr(StoredRun, _name, _FromArray(_name))
_RUN_NAMES = tuple(f.name for f in fields(Run))
_FROM_ARRAY_AT = tuple((name, RUN_FIELDS.index(name)) for name in FROM_ARRAY)
_END, _READINGS, _METRICS = (RUN_FIELDS.index(name) for name in ("end", "zone_readings", "metrics"))


def _from_array(doc: str) -> dict[str, Any]:
    """The ``FROM_ARRAY`` fields of ``decode_run(doc, ...)``, and only those (what the outputs of
    100,000 stored runs decode: a run's other fields, its server arguments and messages are
    made from the columns already)."""
    values = json.loads(doc)
    found = {name: values[index] for name, index in _FROM_ARRAY_AT}
    readings = values[_READINGS]
    found["end"] = _time(values[_END])
    if readings:
        found["zone_readings"] = [
            ZoneReading(commit, timedelta(seconds=low), timedelta(seconds=high)) for commit, low, high in readings
        ]
    found["metrics"] = {
        name: _made(MetricSummary, dict(zip(METRIC_FIELDS, m, strict=True))) for name, m in values[_METRICS].items()
    }
    return found


_DURING = FACETS.index("events_during")


class ColumnReader:
    """Makes ``StoredRun``s from rows of ``RUN_COLUMNS`` and their facets (``FACETS``, one list a
    blob id in ``facets``), each distinct facets' list made once: the runs of one reading share
    their lists, server arguments and messages (read them, do not change them)."""

    def __init__(self, event_ids: dict[str, str], facets: dict[int, list[Any]], docs: Docs) -> None:
        self._event_ids = event_ids
        self._docs = docs
        self._blobs = facets
        self._facets: dict[int, tuple[Any, ...]] = {}

    def _shared(self, facets_id: int) -> tuple[Any, ...]:
        """The facets of the blob ``facets_id``, their events during as this reading's ids."""
        found = self._facets.get(facets_id)
        if found is None:
            values = list(self._blobs[facets_id])
            values[_DURING] = [self._event_ids[e] for e in values[_DURING] if e in self._event_ids]
            found = self._facets[facets_id] = tuple(values)
        return found

    def run(
        self, columns: Sequence[Any], place: int, config: dict[str, Any], messages: list[str], facets_id: int
    ) -> Run:
        """The run of one row: ``columns`` in ``RUN_COLUMNS`` order, what its array is fetched by
        when first read (``Docs.doc``), its facets' blob id."""
        (
            source,
            kind,
            tz,
            tz_source,
            attribution,
            events_during,
            nccl_versions,
            steady_metric,
            steady_unit,
            steady_source,
            cuda_driver_versions,
        ) = self._shared(facets_id)
        start, first_line, commit, ambiguous, steady_value, steady_n, steady_skipped, steady_spread, ranks = columns
        run = StoredRun.__new__(StoredRun)
        run.__dict__ = {
            "id": "",
            "source": source,
            "kind": kind,
            "start": None if start is None else _fromiso(start),
            "tz": tz,
            "tz_source": tz_source,
            "first_line": first_line,
            "commit": commit,
            "attribution": attribution,
            # read for the runs a shift leaves out (one a boundary, hundreds in a store), not decoded from their arrays
            "ambiguous_reasons": [] if ambiguous == "[]" else json.loads(ambiguous),
            "events_during": events_during,
            "nccl_versions": nccl_versions,
            "cuda_driver_versions": cuda_driver_versions,
            "config": config,
            "samples": None,
            "steady": None
            if steady_value is None
            else _made(
                SteadyValue,
                {  # by name, not zipped with STEADY_FIELDS: a third of the time of 100,000 runs' steady values
                    "metric": steady_metric,
                    "unit": steady_unit,
                    "value": steady_value,
                    "n": steady_n,
                    "skipped": steady_skipped,
                    "spread": steady_spread,
                    "source": steady_source,
                    "ranks": {} if ranks == "{}" else json.loads(ranks),
                },
            ),
            "messages": messages,
            "machine": None,
            "_row": place,
            "_docs": self._docs,
        }
        return run


# --- events, commits, the checkout -------------------------------------------------------------


def event_entry(event: CodeEvent) -> str:
    """The event's identity on its machine and checkout: a digest of its reflog entry."""
    return digest(dumps([event.old, event.new, _iso(event.time), event.message]))


def encode_event(event: CodeEvent) -> str:
    return dumps([_iso(event.time) if name == "time" else getattr(event, name) for name in EVENT_FIELDS])


def decode_event(doc: str, event_id: str, commits: list[CommitInfo], removed: list[CommitInfo]) -> CodeEvent:
    values = dict(zip(EVENT_FIELDS, json.loads(doc), strict=True))
    time = _fromiso(values["time"])
    return CodeEvent(
        **{**values, "time": time}, id=event_id, ts=int(time.timestamp()), commits=commits, commits_removed=removed
    )


def encode_commit(commit: CommitInfo) -> str:
    return dumps(
        [
            commit.subject,
            commit.author,
            commit.author_email,
            _iso(commit.author_date),
            _iso(commit.committer_date),
            None if commit.paths is None else list(commit.paths),
        ]
    )


def decode_commit(sha: str, doc: str) -> CommitInfo:
    subject, author, email, authored, committed, paths = json.loads(doc)
    return CommitInfo(
        sha, subject, author, email, _time(authored), _time(committed), None if paths is None else tuple(paths)
    )


def encode_repo(repo: RepoInfo) -> str:
    return dumps([repo.path, repo.head, repo.coverage_reason, _iso(repo.coverage_start), repo.coverage_description])


def decode_repo(doc: str) -> RepoInfo:
    path, head, reason, start, description = json.loads(doc)
    return RepoInfo(path, head, reason, _time(start), description)
