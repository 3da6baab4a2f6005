"""The JSON contract (schema version 3), and writing outputs atomically.

The document is a contract for other tools: fields are added freely, never renamed or removed
without a new ``schema_version``. Every field is documented in docs/json.md, with what
changed from versions 1 and 2 (each commit described once, in the ``commits`` array; events
list their commits by position in it).
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, fields
from datetime import datetime, timedelta, tzinfo
from operator import attrgetter
from pathlib import Path
from typing import Any, BinaryIO

from timeline.clock import format_offset, iso, steady_offset
from timeline.columns import SampleBatch, SampleRows
from timeline.errors import PATH_ERRNOS, OutputError
from timeline.model import (
    CodeEvent,
    CommitInfo,
    Culprit,
    MetricSummary,
    Provenance,
    RepoInfo,
    Run,
    Shift,
    SteadyValue,
    Timeline,
)
from timeline.render.plain import (
    clearing_values,
    commit_values,
    confounder_values,
    event_values,
    json_safe,
    note_values,
    side_values,
)
from timeline.render.wording import (
    clearing_text,
    confounder_text,
    culprit_reason,
    evidence_text,
    rerun_text,
    shift_notes,
)
from timeline.suspects import knob_linked

SCHEMA_VERSION = 3


def timeline_to_dict(timeline: Timeline) -> dict[str, Any]:
    document = _document(timeline, samples=True)
    return {key: value if key in _NO_NUMBERS else _finite(value) for key, value in document.items()}


def _document(timeline: Timeline, *, samples: bool, whole: bool = True) -> dict[str, Any]:
    """The JSON document as a dict, non-finite floats as they are; ``whole=False``: its ``runs``,
    ``events`` and ``context`` left empty (``json_pieces`` writes each run and event as it makes
    it: ten thousand runs' dicts, or a 100,000-entry reflog's events, are never held at once)."""
    shifts = {s.id: s for s in timeline.shifts}
    listed = listed_commits([*timeline.events, *timeline.context])
    # the events' dicts name their commits by position (json_pieces makes its own events' text)
    positions = {sha: index for index, sha in enumerate(listed)} if whole else {}
    configs: dict[int, Any] = {}
    return {
        "schema_version": SCHEMA_VERSION,
        "generated_at": iso(timeline.generated_at),
        **({} if timeline.provenance is None else provenance_to_dict(timeline.provenance)),
        "log_tz": timeline.log_tz,
        "log_tz_source": timeline.log_tz_source,
        "repo": None if timeline.repo is None else repo_to_dict(timeline.repo),
        "events": [event_to_dict(e, positions) for e in timeline.events] if whole else [],
        "context": [event_to_dict(e, positions) for e in timeline.context] if whole else [],
        "commits": [commit_to_dict(commit) for commit in listed.values()],
        "runs": [run_to_dict(r, samples=samples, configs=configs) for r in timeline.runs] if whole else [],
        "warnings": [
            {"source": w.source, "line": w.line, "message": w.message, "code": w.code} for w in timeline.warnings
        ],
        "shifts": [shift_to_dict(s, timeline.culprits) for s in timeline.shifts],
        "culprits": [culprit_to_dict(c, shifts) for c in timeline.culprits],
    }


# Parts that hold no float, only text, booleans and integers (times, shas, positions): walking
# them for ``_finite`` took 1.9 s of a 100,000-entry reflog's document (3.5 million positions).
_NO_NUMBERS = frozenset({"events", "context", "commits"})


def _finite(value: Any) -> Any:
    """``value`` with each non-finite float made null: a number computed from finite ones that a
    double cannot hold (the change from 50 to 1e308 tok/s) has no JSON form, and one left in
    stopped the writer halfway through the document (``_finite_text``: the same, as text)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def provenance_to_dict(provenance: Provenance) -> dict[str, Any]:
    """``generator``, ``host`` and ``options``: what made the document, where, and how."""
    return {
        "generator": {
            "name": "timeline",
            "version": provenance.version,
            "python": provenance.python,
            "platform": provenance.platform,
        },
        "host": provenance.host,
        "options": json_safe(provenance.options),
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


def listed_commits(events: Iterable[CodeEvent]) -> dict[str, CommitInfo]:
    """Every commit the events brought in or took away, once, by sha, in the order the events
    first list them: the ``commits`` array. A checkout moved back and forth for a year lists the
    same commits millions of times: the events name them by position, this says what they are."""
    described: dict[str, CommitInfo] = {}
    read: set[int] = set()  # the lists read (by identity: the events of one move share theirs)
    for event in events:
        for commits in (event.commits, event.commits_removed):
            if id(commits) not in read:
                read.add(id(commits))
                for commit in commits:
                    described.setdefault(commit.sha, commit)
    return described


def commit_to_dict(commit: CommitInfo) -> dict[str, Any]:
    """One element of ``commits`` (docs/json.md, "commits")."""
    document = commit_values(commit)
    document["author_date"] = iso(document["author_date"])
    document["committer_date"] = iso(document["committer_date"])
    return document


def event_to_dict(event: CodeEvent, positions: dict[str, int]) -> dict[str, Any]:
    """One event (docs/json.md, "events[]"): its commits by position in ``commits``
    (``positions``: each sha's, from ``listed_commits``)."""
    document = event_values(event)
    document["time"] = iso(event.time)
    document["commits"] = [positions[sha] for sha in document["commits"]]
    document["commits_removed"] = [positions[sha] for sha in document["commits_removed"]]
    if event.machine is not None:  # a timeline of several machines (timeline.history)
        document["machine"] = event.machine
    return document


def _shallow(cls: type) -> Callable[[Any], dict[str, Any]]:
    """``asdict`` for a dataclass whose fields hold no record to copy: its values taken at once."""
    names = tuple(field.name for field in fields(cls))
    values = attrgetter(*names)
    return lambda record: dict(zip(names, values(record), strict=True))


# numbers and a unit: no copy to make (a tenth of the time of asdict)
_metric = _shallow(MetricSummary)
_steady_fields = _shallow(SteadyValue)


def _steady(steady: SteadyValue) -> dict[str, Any]:
    """``steady`` as docs/json.md says: ``ranks`` only when several ranks were summed."""
    values = _steady_fields(steady)
    if values["ranks"]:
        values["ranks"] = dict(values["ranks"])
    else:
        del values["ranks"]
    return values


def run_to_dict(run: Run, *, samples: bool = True, configs: dict[int, Any] | None = None) -> dict[str, Any]:
    """One run (docs/json.md, "runs[]"); ``samples=False`` leaves its samples out. ``configs``:
    the ``config`` of each server arguments' dict already made (by ``id``), for the runs of one
    document, which share them (timeline.store.reading)."""
    config = None if configs is None else configs.get(id(run.config))
    if config is None:
        config = json_safe(run.config)
        if configs is not None:
            configs[id(run.config)] = config
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
        "ambiguous_reasons": list(run.ambiguous_reasons),
        "zone_readings": [
            {"commit": r.commit, "min_offset": format_offset(r.min_offset), "max_offset": format_offset(r.max_offset)}
            for r in run.zone_readings
        ],
        "files_may_differ": run.files_may_differ,
        "nccl_versions": list(run.nccl_versions),
        "cuda_driver_versions": list(run.cuda_driver_versions),
        "config": config,
        "metrics": {name: _metric(summary) for name, summary in run.metrics.items()},
        "steady": None if run.steady is None else _steady(run.steady),
        "status": run.status,
        "error": run.error,
        "error_line": run.error_line,
        "date_source": run.date_source,
    }
    if run.machine is not None:  # a timeline of several machines (timeline.history)
        document["machine"] = run.machine
    if samples and run.samples is not None:
        document["samples"] = samples_to_dict(run.samples)
    return document


def samples_to_dict(samples: dict[str, SampleRows]) -> dict[str, list[dict[str, Any]]]:
    """A run's stats lines, by kind, as the JSON's ``samples`` holds them (timeline.loader reads them back)."""
    return {kind: rows.rows(0, len(rows), _plain_column) for kind, rows in samples.items()}


def shift_to_dict(shift: Shift, culprits: Sequence[Culprit] = ()) -> dict[str, Any]:
    """One shift (docs/json.md, "shifts[]"); ``culprits`` say which suspects touch the code
    behind each confounder."""

    return {
        "id": shift.id,
        "group": shift.group,
        "metric": shift.metric,
        "unit": shift.unit,
        "from": side_values(shift.from_side),
        "to": side_values(shift.to_side),
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
                "cleared": None if s.cleared is None else clearing_text(s.cleared),
                "cleared_by": None if s.cleared is None else s.cleared.by,
                "clearing": clearing_values(s.cleared),
                "undone_by": s.undone_by,
            }
            for s in shift.suspects
        ],
        "confounders": [
            {**confounder_values(c), "linked": list(linked), "text": confounder_text(c, linked)}
            for c, linked in ((c, knob_linked(culprits, shift, c)) for c in shift.confounders)
        ],
        "measured": shift.measured,
        "reruns": [
            {"side": r.side, "settings": {k: json_safe(v) for k, v in r.settings}, "text": rerun_text(r, shift)}
            for r in shift.reruns
        ],
        "equal_flags": shift.equal_flags,
        "arguments_added": list(shift.arguments_added),
        "arguments_gone": list(shift.arguments_gone),
        "messages_added": list(shift.messages_added),
        "messages_gone": list(shift.messages_gone),
        "bisect": None if shift.bisect is None else asdict(shift.bisect),
        "notes": shift_notes(shift),
        "note_facts": note_values(shift.notes),
    }


def culprit_to_dict(culprit: Culprit, shifts: dict[str, Shift]) -> dict[str, Any]:
    """One culprit (docs/json.md, "culprits[]"): its evidence as codes and facts, and worded."""
    return {
        "sha": culprit.sha,
        "subject": culprit.subject,
        "shifts": list(culprit.shifts),
        "reason": culprit_reason(culprit, shifts),
        "likelihood": culprit.likelihood,
        "evidence": [
            {
                "kind": e.kind,
                "effect": e.effect,
                "shifts": list(e.shifts),
                "field": e.field,
                "message": e.message,
                "paths": list(e.paths),
                "count": e.count,
                "text": evidence_text(e, culprit, shifts),
                "clearing": clearing_values(e.clearing),
            }
            for e in culprit.evidence
        ],
    }


def _plain_column(kind: str, values: list[Any]) -> list[Any]:
    """``json_safe`` of one field of a batch of samples (``SampleRows.rows``), by how it is
    stored: ints as they are, a scan for non-finite floats, times as ISO text (a million
    samples: seconds, not the minute a recursion per value takes)."""
    if kind in ("int", "bool", "text", "none"):
        return values
    if kind == "float":
        try:
            if all(map(math.isfinite, values)):
                return values
        except TypeError:  # a None among them
            pass
        return [v if v is None or math.isfinite(v) else repr(v) for v in values]
    if kind == "time":
        return [iso(v) for v in values]
    return [json_safe(v) for v in values]


SAMPLE_BATCH = 4096  # sample rows encoded at a time
_BOOL_TEXT = {True: "true", False: "false"}


def _samples_text(batch: SampleBatch) -> str:
    """``_compact`` of a batch of sample rows, without its brackets, built column by column:
    each column's values made JSON text at once, each row by a %-template of its keys (a third
    of the time of dicts through json's encoder)."""
    texts = {key: _json_texts(kind, values) for key, (kind, values) in batch.columns.items()}
    shapes = batch.shapes
    used = set(batch.row_shapes)
    templates = {
        shape: "{" + ", ".join(_compact(key).replace("%", "%%") + ": %s" for key in shapes[shape]) + "}"
        for shape in used
    }
    if len(used) == 1:  # one set of keys (the common case): the rows at C speed
        (shape,) = used
        columns = [texts[key] for key in shapes[shape]]
        if not columns:
            return ", ".join(["{}"] * len(batch.row_shapes))
        return ", ".join(map(templates[shape].__mod__, zip(*columns, strict=True)))
    return ", ".join(
        templates[shape] % tuple(texts[key][i] for key in shapes[shape]) for i, shape in enumerate(batch.row_shapes)
    )


_EPOCH_US = (datetime(1970, 1, 1) - datetime.min) // timedelta(microseconds=1)


def _iso_texts(walls: array, zone: tzinfo | None) -> list[str]:
    """``iso`` of each wall-clock reading (microseconds since ``datetime.min``) in ``zone``, as
    JSON text: by numpy's datetime64 text, all at once, when the zone keeps one offset through
    them (a million times: a second, against four made one by one)."""
    import numpy as np

    if not len(walls):
        return []
    us = np.frombuffer(walls, np.int64)
    first = datetime.min + timedelta(microseconds=int(us.min()))
    last = datetime.min + timedelta(microseconds=int(us.max()))
    if zone is not None and not steady_offset(zone, first, last):
        return [f'"{iso((datetime.min + timedelta(microseconds=wall)).replace(tzinfo=zone))}"' for wall in us.tolist()]
    suffix = "" if zone is None else first.replace(tzinfo=zone, microsecond=0).isoformat()[19:]  # the offset
    stamps = (us - _EPOCH_US).astype("datetime64[us]")
    texts = np.datetime_as_string(stamps, unit="s")
    fraction = us % 1_000_000 >= 1000
    if fraction.any():  # iso's milliseconds, where there is one
        texts = np.where(fraction, np.datetime_as_string(stamps, unit="ms"), texts)
    return [f'"{text}{suffix}"' for text in texts.tolist()]


def _json_texts(kind: str, values: list[Any]) -> list[str]:
    """``_compact`` of each of ``_plain_column``'s values, the common kinds without a call a value."""
    try:
        if kind == "int":
            return list(map(int.__repr__, values))  # json's own way with an int
        if kind == "float" and all(map(math.isfinite, values)):
            return list(map(float.__repr__, values))  # json's own way with a float
        if kind == "bool":
            return list(map(_BOOL_TEXT.__getitem__, values))
        if kind == "text":
            distinct = {value: _compact(value) for value in set(values)}
            return list(map(distinct.__getitem__, values))
        if kind == "time":
            return [f'"{iso(value)}"' if value is not None else "null" for value in values]  # ISO needs no escapes
        if kind == "none":
            return ["null"] * len(values)
        if kind == "walls":
            return _iso_texts(*values)
    except (TypeError, KeyError):  # a None among them
        pass
    return list(map(_compact, _plain_column(kind, values)))


# json.dumps(value, ensure_ascii=False, allow_nan=False), without an encoder made for each value
# (a 100,000-entry reflog's event ids: 0.15 s against 0.02 s)
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def _compact(value: Any) -> str:
    return _ENCODER.encode(value)


def dumps(timeline: Timeline) -> str:
    """The JSON document (``json_pieces``, joined)."""
    return "".join(json_pieces(timeline))


def json_pieces(timeline: Timeline) -> Iterator[str]:
    """The JSON document as text, in pieces: the top level indented, each run, event, shift...
    on a line of its own (one ``grep`` a run); a run's samples a batch of rows at a time, so a
    build with ``--samples`` (millions of stats lines) is never held as one string. Not ``indent=2`` all through:
    that makes ``json`` use its pure-Python encoder, about ten times slower (a thousand runs:
    half a second)."""
    yield "{\n"
    configs: dict[int, Any] = {}
    document = _document(timeline, samples=False, whole=False)
    positions = {commit["sha"]: index for index, commit in enumerate(document["commits"])}
    for number, (key, value) in enumerate(document.items()):
        yield (",\n" if number else "") + f"  {_compact(key)}: "
        if key == "runs" and timeline.runs:  # each made, written and let go: never all at once
            yield "[\n"
            for index, run in enumerate(timeline.runs):
                yield ",\n    " if index else "    "
                yield from _run_pieces(run, run_to_dict(run, samples=False, configs=configs))
            yield "\n  ]"
        elif key in ("events", "context") and getattr(timeline, key):
            yield from _lines(_event_texts(getattr(timeline, key), positions))
        elif isinstance(value, list) and value:  # an item a line, never all of them as one string
            yield from _lines(_compact(item) if key in _NO_NUMBERS else _finite_text(item) for item in value)
        else:
            yield _compact(value) if key in _NO_NUMBERS else _finite_text(value)
    yield "\n}\n"


def _lines(texts: Iterable[str]) -> Iterator[str]:
    """A JSON array of ``texts`` (at least one), an item a line."""
    for index, text in enumerate(texts):
        yield (",\n    " if index else "[\n    ") + text
    yield "\n  ]"


_EVENT_TEXT = (
    '{"id": %s, "time": "%s", "ref": %s, "kind": %s, "message": %s, "old": %s, "new": %s, "changes_commit": %s, '
    '"commits": %s, "commits_removed": %s, "source": %s, "line": %s, "files_may_differ": %s, "approximate": %s, '
    '"detail": %s, "note": %s, "old_inferred": %s%s}'
)
_JSON_BOOL = {True: "true", False: "false"}
_SHA = attrgetter("sha")


def _event_texts(events: Sequence[CodeEvent], positions: dict[str, int]) -> Iterator[str]:
    """``_compact(event_to_dict(event, positions))`` of each event, made from the event itself:
    each distinct string's JSON text (the shas, kinds, messages, the log's path: 31,000 of a
    100,000-entry reflog's 800,000) and each list's of commits (the events of a move, and the
    moves that list the same commits, share one: 44,000 lists for 200,000) made once, the rest by
    one template: under half the time of each event's dict made and encoded (100,000 events:
    0.8-0.9 s against 1.8-2.0 s of CPU). tests/test_export.py holds it to that text."""
    strings: dict[str | None, str] = {None: "null"}
    lists: dict[int, str] = {}  # by the list's identity: the events hold them while this runs
    position_texts = {sha: str(index) for sha, index in positions.items()}

    def string(value: str | None) -> str:
        """``value``'s JSON text, kept (called when first met: the lookups are inline)."""
        made = strings[value] = _compact(value)
        return made

    def listing(commits: list[CommitInfo]) -> str:
        """``commits``' JSON text (their positions), kept (called when first met)."""
        made = lists[id(commits)] = "[" + ", ".join(map(position_texts.__getitem__, map(_SHA, commits))) + "]"
        return made

    text, listed = strings.get, lists.get
    for event in events:
        yield _EVENT_TEXT % (
            _compact(event.id),
            iso(event.time),  # digits, signs and a T: nothing to escape
            text(event.ref) or string(event.ref),
            text(event.kind) or string(event.kind),
            text(event.message) or string(event.message),
            text(event.old) or string(event.old),
            text(event.new) or string(event.new),
            _JSON_BOOL[event.changes_commit],
            listed(id(event.commits)) or listing(event.commits),
            listed(id(event.commits_removed)) or listing(event.commits_removed),
            text(event.source) or string(event.source),
            "null" if event.line is None else int.__repr__(event.line),
            _JSON_BOOL[event.files_may_differ],
            _JSON_BOOL[event.approximate],
            text(event.detail) or string(event.detail),
            text(event.note) or string(event.note),
            _JSON_BOOL[event.old_inferred],
            "" if event.machine is None else f', "machine": {text(event.machine) or string(event.machine)}',
        )


def _finite_text(value: Any) -> str:
    """``_compact(_finite(value))``, without the walk when there is no non-finite float (json
    refuses one, ``allow_nan=False``): the walk was a third of writing 10,000 runs."""
    try:
        return _compact(value)
    except ValueError:
        return _compact(_finite(value))


def _run_pieces(run: Run, document: dict[str, Any]) -> Iterator[str]:
    """``_finite_text(run_to_dict(run))``, in pieces: the same text (json's ", " and ": ")."""
    text = _finite_text(document)
    if run.samples is None:
        yield text
        return
    yield text[:-1] + ', "samples": {'
    for number, (kind, rows) in enumerate(run.samples.items()):
        yield f"{', ' if number else ''}{_compact(kind)}: ["
        for start in range(0, len(rows), SAMPLE_BATCH):
            yield (", " if start else "") + _samples_text(
                rows.batch(start, min(start + SAMPLE_BATCH, len(rows)), walls=True)
            )
        yield "]"
    yield "}}"


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _temporary_name(target: Path) -> Path:
    return target.parent / f".{target.name}.{os.urandom(6).hex()}.tmp"


def _create(temporary: Path) -> int:
    """A new file only this process writes (0600 until the write sets the final mode)."""
    return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)


def output_target(path: str | os.PathLike, *, option: str | None = None) -> Path:
    """The file a write to ``path`` replaces (a symlink's target, so the link stays), checked
    before any work: ``OutputError`` (one line naming ``path``) when its folder is missing, it
    is a folder, or its folder cannot be written; ``option``: the parameter that named it."""
    given = os.fspath(path)
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    if target.is_dir():
        raise OutputError(f"{given}: is a folder (give a file name)", errno.EISDIR, option=option)
    if target.is_char_device() or target.is_fifo():  # /dev/null, a pipe: written in place
        return target
    folder = target.parent
    if not folder.exists():
        raise OutputError(f"{given}: no such folder: {folder}", errno.ENOENT, option=option)
    if not folder.is_dir():
        raise OutputError(f"{given}: {folder} is not a folder", errno.ENOTDIR, option=option)
    if not os.access(folder, os.W_OK | os.X_OK):
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
        why = "a read-only file system" if read_only else "no permission to write there"
        raise OutputError(
            f"{given}: cannot write in {folder}: {why}", errno.EROFS if read_only else errno.EACCES, option=option
        )
    return target


def write_text_atomic(
    path: str | os.PathLike, text: str | Iterable[str], *, errors: str = "strict", option: str | None = None
) -> None:
    """Write ``text`` (a string, or its pieces) to ``path`` (``-``: standard output) with
    ``write_atomic``, as UTF-8. ``errors``: how text that UTF-8 cannot encode is written
    (``encode``'s argument); ``option``: the parameter that named ``path``, for the error."""
    pieces = [text] if isinstance(text, str) else text
    if os.fspath(path) == "-":
        _write_stdout(pieces, errors)
        return

    def write(handle: BinaryIO) -> None:
        for piece in pieces:
            handle.write(piece.encode("utf-8", errors))

    write_atomic(path, write, option=option)


def write_atomic(path: str | os.PathLike, write: Callable[[BinaryIO], None], *, option: str | None = None) -> None:
    """Call ``write`` with a binary file whose bytes end up at ``path``, so a reader sees the old
    file or the new one, never a part: into a temporary file beside it, then renamed over it.
    The one writer of every file the CLI writes (JSON, CSV, HTML, Parquet).

    An existing file keeps its permission bits (a 0600 output stays 0600); a new one gets
    0666 less the umask, as ``open`` would; a symlink stays a link (its target is replaced).
    Whatever stops the write (a full disk, Ctrl-C, SIGTERM through the CLI's handler, an
    exception in ``write``) removes the temporary file and leaves the old file as it was; an
    ``OSError`` becomes an ``OutputError`` naming ``path`` (``option``: the parameter that named it).
    """
    given = os.fspath(path)
    target = output_target(path, option=option)
    if target.is_char_device() or target.is_fifo():
        try:
            with open(target, "wb") as handle:
                write(handle)
        except OSError as exc:
            raise OutputError(f"{given}: not written ({exc.strerror or exc})", exc.errno, option=option) from None
        return
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
        kept = "the previous file is unchanged"
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
        kept = "nothing was left"
    temporary = None
    try:
        # The name is known before the file exists, so whatever interrupts the write (Ctrl-C, or
        # SIGTERM through the CLI's handler, which may be run between any two steps: a signal can
        # land on a thread numpy's BLAS started, where no mask holds it back) finds it to remove.
        while True:
            temporary = _temporary_name(target)
            try:
                fd = _create(temporary)
                break
            except FileExistsError:
                continue
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temporary, target)
        temporary = None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if exc.errno in PATH_ERRNOS:
            raise OutputError(f"{given}: cannot write in {target.parent}: {reason}", exc.errno, option=option) from None
        raise OutputError(f"{given}: not written ({reason}); {kept}", exc.errno, option=option) from None
    finally:
        if temporary is not None:
            temporary.unlink(missing_ok=True)


def _write_stdout(pieces: Iterable[str], errors: str) -> None:
    try:
        sys.stdout.flush()
        stream = sys.stdout.buffer
        for piece in pieces:
            stream.write(piece.encode("utf-8", errors))
        stream.flush()
    except OSError as exc:
        raise OutputError(f"standard output: not written ({exc.strerror or exc})", exc.errno) from None
