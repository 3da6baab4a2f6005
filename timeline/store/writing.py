"""``Store.ingest``: a build's runs, code events and commits, and its machine, into the store.

One transaction a call. Every row has a unique key (a run: its lines and line range; an event:
its machine, checkout and reflog entry; a commit: its sha; a blob: its digest) and is inserted
with ``ON CONFLICT DO NOTHING ... RETURNING``, so what was known is skipped and counted, and
two ingests of the same logs at once store each row once. Rows go in key order (no two
transactions wait on each other's rows in opposite orders: no deadlock) and in batches
(executemany), never a round trip a row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import Table, bindparam, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from timeline.export import samples_to_dict
from timeline.model import CodeEvent, CommitInfo, RepoInfo, Run, Timeline
from timeline.render.plain import utc
from timeline.store import codec, schema
from timeline.store.keys import RunKey, span_digests
from timeline.store.machine import Machine, joined_drivers


@dataclass(frozen=True)
class IngestResult:
    """What one ingest stored: new rows, and the rows the store already had."""

    runs_added: int
    runs_known: int
    events_added: int
    events_known: int
    commits_added: int
    # runs stored while still being written, replaced by this ingest's longer reading of them
    runs_replaced: int = 0


def _insert(connection: Connection, table: Table) -> Any:
    """The dialect's INSERT, which has ON CONFLICT DO NOTHING (SQLite and PostgreSQL spell it alike)."""
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    return dialect.insert(table).on_conflict_do_nothing()


def _inserted(connection: Connection, table: Table, rows: list[dict[str, Any]], *returned: str) -> list[Any]:
    """Insert ``rows`` (skipping those whose key is taken); the ``returned`` columns of the new ones."""
    if not rows:
        return []
    statement = _insert(connection, table).returning(*(table.c[name] for name in returned))
    found: list[Any] = []
    for batch in schema.batches(rows):
        found.extend(connection.execute(statement, list(batch)).all())
    return found


def ingest(
    connection: Connection,
    timeline: Timeline,
    machine: Machine,
    keys: list[RunKey],
    keep_samples: bool,
    now: datetime,
) -> IngestResult:
    machine_id = _machine(connection, machine, now)
    repo_id = None if timeline.repo is None else _repo(connection, machine_id, timeline.repo, now)
    entries = {event.id: codec.event_entry(event) for event in timeline.events}
    commits_added = _commits(connection, timeline.events)
    events_added = 0 if repo_id is None else _events(connection, machine_id, repo_id, timeline.events, entries)
    runs_added, runs_replaced = _runs(connection, machine_id, repo_id, timeline.runs, keys, entries, keep_samples, now)
    return IngestResult(
        runs_added=runs_added,
        runs_known=len(timeline.runs) - runs_added - runs_replaced,
        events_added=events_added,
        events_known=len(entries) - events_added if repo_id is not None else 0,
        commits_added=commits_added,
        runs_replaced=runs_replaced,
    )


def _machine(connection: Connection, machine: Machine, now: datetime) -> int:
    """The machine's row, made or brought up to date: the NCCL versions of every ingest, the
    most GPUs one run used, the last host seen, every driver version seen (as ``machine_of``
    joins a build's)."""
    table = schema.machines
    connection.execute(
        _insert(connection, table),
        {
            "name": machine.name,
            "host": machine.host,
            "gpu_count": machine.gpu_count,
            "nccl_versions": codec.dumps(list(machine.nccl_versions)),
            "driver": machine.driver,
            "first_ingest": now,
            "last_ingest": now,
        },
    )
    # FOR UPDATE: a concurrent ingest of the same machine waits here, so neither loses the other's versions
    row = connection.execute(select(table).where(table.c.name == machine.name).with_for_update()).one()
    versions = sorted({*json.loads(row.nccl_versions), *machine.nccl_versions})
    counts = [count for count in (row.gpu_count, machine.gpu_count) if count is not None]
    connection.execute(
        update(table)
        .where(table.c.id == row.id)
        .values(
            host=machine.host or row.host,
            gpu_count=max(counts, default=None),
            nccl_versions=codec.dumps(versions),
            driver=joined_drivers(driver for driver in (row.driver, machine.driver) if driver),
            last_ingest=now,
        )
    )
    return int(row.id)


def _repo(connection: Connection, machine_id: int, repo: RepoInfo, now: datetime) -> int:
    table = schema.repos
    values = {"head": repo.head, "doc": codec.encode_repo(repo), "last_ingest": now}
    connection.execute(_insert(connection, table), {"machine_id": machine_id, "path": repo.path, **values})
    where = (table.c.machine_id == machine_id) & (table.c.path == repo.path)
    connection.execute(update(table).where(where).values(**values))
    return int(connection.execute(select(table.c.id).where(where)).scalar_one())


def _commits(connection: Connection, events: list[CodeEvent]) -> int:
    described: dict[str, CommitInfo] = {}
    for event in events:
        for commit in (*event.commits, *event.commits_removed):
            described.setdefault(commit.sha, commit)
    rows = [
        {"sha": sha, "subject": commit.subject, "doc": codec.encode_commit(commit)}
        for sha, commit in sorted(described.items())
    ]
    return len(_inserted(connection, schema.commits, rows, "sha"))


def _events(
    connection: Connection, machine_id: int, repo_id: int, events: list[CodeEvent], entries: dict[str, str]
) -> int:
    rows: list[dict[str, Any]] = sorted(
        (
            {
                "machine_id": machine_id,
                "repo_id": repo_id,
                "entry": entries[event.id],
                "time": utc(event.time),
                "ts": event.ts,
                "kind": event.kind,
                "old": event.old,
                "new": event.new,
                "doc": codec.encode_event(event),
            }
            for event in events
        ),
        key=lambda row: row["entry"],
    )
    new = {entry: event_id for event_id, entry in _inserted(connection, schema.events, rows, "id", "entry")}
    firsts = {entries[event.id]: event for event in reversed(events)}  # an entry twice in the reflog: its first
    links = [
        {"event_id": new[entry], "removed": removed, "position": position, "sha": commit.sha}
        for entry, event in firsts.items()
        if entry in new
        for removed, listed in ((False, event.commits), (True, event.commits_removed))
        for position, commit in enumerate(listed)
    ]
    for batch in schema.batches(links):
        connection.execute(schema.event_commits.insert(), list(batch))
    return len(new)


def _blob_ids(connection: Connection, bodies: dict[str, str]) -> dict[str, int]:
    """The id of each blob (by digest), stored once."""
    table = schema.blobs
    rows = [{"digest": key, "body": body} for key, body in sorted(bodies.items())]
    ids = {key: blob_id for blob_id, key in _inserted(connection, table, rows, "id", "digest")}
    missing = sorted(set(bodies) - set(ids))
    for batch in schema.batches(missing):
        ids.update(
            {
                key: blob_id
                for blob_id, key in connection.execute(
                    select(table.c.id, table.c.digest).where(table.c.digest.in_(batch))
                )
            }
        )
    return ids


def _runs(
    connection: Connection,
    machine_id: int,
    repo_id: int | None,
    runs: list[Run],
    keys: list[RunKey],
    entries: dict[str, str],
    keep_samples: bool,
    now: datetime,
) -> tuple[int, int]:
    """The runs stored: (added, replaced: the longer reading of a run stored while being written)."""
    if not runs:
        return 0, 0
    configs = [codec.dumps(run.config) for run in runs]
    messages = [codec.dumps(run.messages) for run in runs]
    values = [codec.run_values(run, entries) for run in runs]
    facets = [codec.run_facets(run_values) for run_values in values]
    blob_ids = _blob_ids(connection, {codec.digest(body): body for body in (*configs, *messages, *facets)})
    rows: list[dict[str, Any]] = sorted(
        (
            {
                "run_key": key.key,
                "content": key.content,
                "machine_id": machine_id,
                "repo_id": repo_id,
                "config_id": blob_ids[codec.digest(config)],
                "messages_id": blob_ids[codec.digest(printed)],
                "facets_id": blob_ids[codec.digest(shared)],
                "doc": codec.encode_run(run, entries),
                "ingested": now,
                **codec.run_columns(run_values),
            }
            for run, run_values, key, config, printed, shared in zip(
                runs, values, keys, configs, messages, facets, strict=True
            )
        ),
        key=lambda row: row["run_key"],
    )
    readings = _readings(connection, machine_id, rows)
    replacing = [
        {**row, "stored_id": readings.replaced[row["run_key"]]} for row in rows if row["run_key"] in readings.replaced
    ]
    if replacing:  # one statement, run for each row (executemany), not one statement a run
        connection.execute(update(schema.runs).where(schema.runs.c.id == bindparam("stored_id")), replacing)
    gone = sorted({*readings.replaced.values(), *readings.dropped})
    for batch in schema.batches(gone):
        connection.execute(delete(schema.samples).where(schema.samples.c.run_id.in_(batch)))
    for batch in schema.batches(readings.dropped):
        connection.execute(delete(schema.runs).where(schema.runs.c.id.in_(batch)))
    fresh = [row for row in rows if row["run_key"] not in readings.replaced and row["run_key"] not in readings.earlier]
    added = dict((key, run_id) for run_id, key in _inserted(connection, schema.runs, fresh, "id", "run_key"))
    if keep_samples:
        ids = {**added, **readings.replaced}
        kept = [
            {"run_id": ids[key.key], "body": codec.dumps(samples_to_dict(run.samples))}
            for run, key in zip(runs, keys, strict=True)
            if run.samples is not None and key.key in ids
        ]
        kept = list({row["run_id"]: row for row in kept}.values())  # one run twice in the logs: once
        for batch in schema.batches(kept):
            connection.execute(schema.samples.insert(), list(batch))
    return len(added), len(readings.replaced)


@dataclass
class _Readings:
    """The runs of an ingest that are another reading of a run the store has (same machine, log,
    first line and start, the lines of the shorter reading the first lines of the longer)."""

    replaced: dict[str, int] = field(default_factory=dict)  # run key -> the stored shorter reading it replaces
    dropped: list[int] = field(default_factory=list)  # other shorter readings of the same runs, deleted
    earlier: set[str] = field(default_factory=set)  # run keys of shorter readings of stored runs: known


def _instant(moment: datetime | None) -> datetime | None:
    """A stored start as an aware time (SQLite gives back naive UTC)."""
    return moment if moment is None or moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _readings(connection: Connection, machine_id: int, rows: list[dict[str, Any]]) -> _Readings:
    """Which new runs are a longer reading of a stored run (a log ingested while a run was still
    being written, then again once it grew) or a shorter one, their lines checked in the log as it
    is now. Safe under concurrent ingests: the machine's row is locked (``_machine``), so the
    ingests of one machine's logs run one after another."""
    table = schema.runs
    found = _Readings()
    # a run without a start or a line range is never taken for another reading of one
    ranged = [row for row in rows if None not in (row["start"], row["first_line"], row["last_line"])]
    starts = sorted({row["start"] for row in ranged})
    stored: dict[tuple[str, int], list[Any]] = {}
    for batch in schema.batches(starts):  # by the index on (machine, start)
        for other in connection.execute(
            select(table.c.id, table.c.run_key, table.c.source, table.c.first_line, table.c.last_line)
            .add_columns(table.c.start, table.c.content)
            .where((table.c.machine_id == machine_id) & table.c.start.in_(batch))
        ):
            stored.setdefault((other.source, other.first_line), []).append(other)
    candidates = [
        (row, other)
        for row in ranged
        for other in stored.get((row["source"], row["first_line"]), [])
        if other.run_key != row["run_key"]
        and other.last_line is not None
        and other.last_line != row["last_line"]
        and _instant(other.start) == row["start"]
    ]
    by_source: dict[str, list[Any]] = {}
    for _, other in candidates:
        by_source.setdefault(other.source, []).append(other)
    unchanged: set[int] = set()  # stored runs whose lines the log still holds as they were
    for source, others in by_source.items():
        digests = span_digests(source, [(other.first_line, other.last_line) for other in others])
        unchanged.update(other.id for other, digest in zip(others, digests, strict=True) if digest == other.content)
    shorter: dict[str, list[Any]] = {}
    for row, other in candidates:
        if other.id not in unchanged:
            continue
        if other.last_line > row["last_line"]:
            found.earlier.add(row["run_key"])
        else:
            shorter.setdefault(row["run_key"], []).append(other)
    known: set[str] = set()  # a longer reading the store has already (ingested from a copy of the log)
    for batch in schema.batches(sorted(shorter)):
        known.update(connection.execute(select(table.c.run_key).where(table.c.run_key.in_(batch))).scalars())
    taken: set[int] = set()
    for key, others in sorted(shorter.items()):
        if key in found.earlier or key in known:
            continue
        others = [other for other in sorted(others, key=lambda o: -o.last_line) if other.id not in taken]
        if others:
            found.replaced[key] = others[0].id
            found.dropped.extend(other.id for other in others[1:])
            taken.update(other.id for other in others)
    return found
