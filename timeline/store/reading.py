"""``Store.read``: the stored runs and code events of each machine, as typed as build made them.

A handful of queries whatever the number of runs (machines, repos, runs, their blobs, events,
their commits, samples), never one a row: ``timeline history`` reads 100,000 runs this way, each
from its columns (walking the index that holds them, ``ix_runs_history``) and the facets it
shares with the other runs of its log (``codec.ColumnReader``; its summaries fetched from its
array and decoded when first read, a few dozen runs a query: ``_Docs``). The runs and
events of one machine are numbered again (``r1``, ``e1``...) in the order build numbers them,
and a run's events-during point at the new event ids. Runs of the same server arguments share
one ``config`` dict (and messages, NCCL versions...): read them, do not change them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import islice
from operator import attrgetter, eq
from typing import Any

from sqlalchemy import ColumnElement, Select, select
from sqlalchemy.engine import Connection

from timeline.collector import uncollected
from timeline.loader import samples_from_dict
from timeline.model import CodeEvent, CommitInfo, RepoInfo, Run, run_order
from timeline.store import codec, schema
from timeline.store.database import Database
from timeline.store.errors import StoreError
from timeline.store.machine import Machine


@dataclass
class StoredHistory:
    """Everything stored about one machine: its runs (in build's order: by start, then log and
    line) and code events (by time), with ids numbered for this reading, and its checkout (the
    one ingested last; None when no ingest named one)."""

    machine: Machine
    runs: list[Run]
    events: list[CodeEvent]
    repo: RepoInfo | None


def _machine(row: Any) -> Machine:
    return Machine(row.name, row.host, row.gpu_count, tuple(json.loads(row.nccl_versions)), row.driver)


def machines(connection: Connection) -> list[Machine]:
    return [_machine(row) for row in connection.execute(select(schema.machines).order_by(schema.machines.c.name))]


def read(database: Database, machine: str | None, since: datetime | None, with_samples: bool) -> list[StoredHistory]:
    with uncollected(), database.reading() as connection:
        return _read(database, connection, machine, since, with_samples)


_STEADY_N = 4 + codec.RUN_COLUMNS.index("steady_n")  # in a row of the reading


def _read(
    database: Database, connection: Connection, machine: str | None, since: datetime | None, with_samples: bool
) -> list[StoredHistory]:
    table = schema.machines
    query = select(table).order_by(table.c.name)
    if machine is not None:
        query = query.where(table.c.name == machine)
    machine_rows = connection.execute(query).all()
    if not machine_rows:
        return []
    machine_ids = [row.id for row in machine_rows]
    if since is not None:
        since = (since if since.tzinfo else since.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)

    runs = schema.runs
    started: list[ColumnElement[bool]] = [] if since is None else [runs.c.start >= since]
    chosen: Select = select(runs.c.id).where(runs.c.machine_id.in_(machine_ids), *started)
    # what ix_runs_history holds (schema.HISTORY_INDEX): the reading walks that index, not the table
    columns = [runs.c.id, runs.c.config_id, runs.c.messages_id, runs.c.facets_id]
    columns += [runs.c[name] for name in codec.RUN_COLUMNS]
    # a fetch a machine (by the index on machine and start), not a value a run naming its machine
    run_rows = {
        machine_id: connection.execute(
            select(*columns).where(runs.c.machine_id == machine_id, *started).order_by(runs.c.start)
        ).all()
        for machine_id in machine_ids
    }
    # the blobs by id: a few distinct ones, however many runs name them
    named = sorted({blob_id for rows in run_rows.values() for row in rows for blob_id in (row[1], row[2], row[3])})
    blobs: dict[int, Any] = {}
    for batch in schema.batches(named):
        blobs.update(
            (row.id, json.loads(row.body))
            for row in connection.execute(
                select(schema.blobs.c.id, schema.blobs.c.body).where(schema.blobs.c.id.in_(batch))
            )
        )
    samples = {}
    if with_samples:
        samples = {
            row.run_id: row.body
            for row in connection.execute(
                select(schema.samples.c.run_id, schema.samples.c.body).where(schema.samples.c.run_id.in_(chosen))
            )
        }

    events_by_machine = _events(connection, machine_ids, since)
    histories: list[StoredHistory] = []
    repos = _repos(connection, machine_ids)
    docs = _Docs(database, [runs.c.machine_id.in_(machine_ids), *started])
    for machine_row in machine_rows:
        events = events_by_machine.get(machine_row.id, [])
        reader = codec.ColumnReader({entry: event.id for entry, event in events}, blobs, docs)
        stored = []
        for row in run_rows[machine_row.id]:
            run = reader.run(row[4:], docs.place(row[0], row[_STEADY_N]), blobs[row[1]], blobs[row[2]], row[3])
            if samples and row[0] in samples:
                run.samples = samples_from_dict(json.loads(samples[row[0]]))
            stored.append(run)
        _in_run_order(stored)
        for number, run in enumerate(stored, 1):
            run.id = f"r{number}"
        histories.append(
            StoredHistory(_machine(machine_row), stored, [event for _, event in events], repos.get(machine_row.id))
        )
    return histories


_START = attrgetter("start")


def _in_run_order(runs: list[Run]) -> None:
    """One machine's ``runs`` sorted in ``run_order``: by their starts alone when each has one and
    no two tie (a machine's runs mostly), without a ``run_order`` key made a run (100,000 runs:
    0.6x the time; they come by start already, the sort checks it)."""
    if None not in map(_START, runs):
        runs.sort(key=_START)
        if not any(map(eq, map(_START, runs), map(_START, islice(runs, 1, None)))):
            return
    runs.sort(key=run_order)  # a run without a start, or two at one start: by log and line too


def _events(
    connection: Connection, machine_ids: list[int], since: datetime | None
) -> dict[int, list[tuple[str, CodeEvent]]]:
    """Each machine's events in the reflog's order, numbered ``e1``..., with the digest of each one's entry."""
    events = schema.events
    event_filter: ColumnElement[bool] = events.c.machine_id.in_(machine_ids)
    if since is not None:
        event_filter &= events.c.time >= since
    links = schema.event_commits
    commits_of: dict[int, tuple[list[CommitInfo], list[CommitInfo]]] = {}
    described: dict[str, CommitInfo] = {}
    for link in connection.execute(
        select(links.c.event_id, links.c.removed, links.c.sha, schema.commits.c.doc)
        .join(schema.commits, schema.commits.c.sha == links.c.sha)
        .where(links.c.event_id.in_(select(events.c.id).where(event_filter)))
        .order_by(links.c.event_id, links.c.removed, links.c.position)
    ):
        commit = described.get(link.sha)
        if commit is None:
            commit = described[link.sha] = codec.decode_commit(link.sha, link.doc)
        commits_of.setdefault(link.event_id, ([], []))[1 if link.removed else 0].append(commit)
    found: dict[int, list[tuple[str, CodeEvent]]] = {}
    for row in connection.execute(
        select(events.c.id, events.c.machine_id, events.c.entry, events.c.doc).where(event_filter)
    ):
        brought, removed = commits_of.get(row.id, ([], []))
        found.setdefault(row.machine_id, []).append((row.entry, codec.decode_event(row.doc, "", brought, removed)))
    for listed in found.values():
        # the reflog's order: by time, then by line (two moves in one second)
        listed.sort(key=lambda item: (item[1].ts, item[1].line or 0))
        for number, (_, event) in enumerate(listed, 1):
            event.id = f"e{number}"
    return found


def _repos(connection: Connection, machine_ids: list[int]) -> dict[int, RepoInfo]:
    """The checkout each machine ingested last."""
    repos = schema.repos
    latest: dict[int, RepoInfo] = {}
    for row in connection.execute(
        select(repos.c.machine_id, repos.c.doc)
        .where(repos.c.machine_id.in_(machine_ids))
        .order_by(repos.c.last_ingest, repos.c.id)
    ):
        latest[row.machine_id] = codec.decode_repo(row.doc)
    return latest


class _Docs:
    """The arrays of one reading's runs (``codec.Docs``), fetched when an output first reads a
    field kept only there (``codec.FROM_ARRAY``), not with the runs: the default view of 100,000
    runs shows a few hundred of them, and the index the runs are read from (``ix_runs_history``)
    is a tenth of the table that holds the arrays. A fetch takes the runs read next to the one
    asked for (the runs a view shows come in clusters: around a shift, the latest ones). A reader
    that asks for the run after those (the JSON document, the CSV: every run in order, each
    machine's next to the others'), or one that went on asking past ``_ROUNDS`` fetches, gets
    every run of the reading at once. Each fetch is on a connection of its own, let go after it:
    the runs outlive the store's ``close``. An ingest may store a longer reading of a run in the
    meantime (a log still written when it was stored: ``writing._readings``), in the same row: a
    run whose steady value no longer counts the stats lines read is an error, not the array of
    one reading joined to the columns of another (a longer reading without more stats lines has
    the same steady value and summaries)."""

    _AROUND = 16  # runs on each side of the one asked for, in the reading's order
    _ROUNDS = 64

    def __init__(self, database: Database, chosen: list[ColumnElement[bool]]) -> None:
        self._database = database
        self._chosen = chosen  # the reading's runs: its machines, from its ``since``
        self._rows: list[int] = []  # the runs' row ids, in the reading's order
        self._counts: list[int | None] = []  # their steady values' counts of stats lines, as read
        self._fetched: dict[int, tuple[str, int | None]] = {}  # row id -> its array, its steady count
        self._rounds = 0
        self._ends: set[int] = set()  # the place after each run fetched: asked for, the reader reads them in order

    def place(self, row: int, steady_n: int | None) -> int:
        """The place in this reading of the run of row id ``row`` (its steady value counted
        ``steady_n`` stats lines), read next: what it asks ``doc`` for."""
        self._rows.append(row)
        self._counts.append(steady_n)
        return len(self._rows) - 1

    def doc(self, place: int) -> str:
        row = self._rows[place]
        found = self._fetched.pop(row, None)
        if found is None:
            self._fetch(place)
            found = self._fetched.pop(row, None)
            if found is None:
                raise StoreError(f"{self._database.shown}: a run read from the store is no longer in it")
        doc, steady_n = found
        if steady_n != self._counts[place]:
            raise StoreError(
                f"{self._database.shown}: a run was stored again while it was read (a longer reading of its "
                "log, by an ingest meanwhile): run the command again"
            )
        return doc

    def _fetch(self, place: int) -> None:
        runs = schema.runs
        self._rounds += 1
        if self._rounds > self._ROUNDS or place in self._ends:
            wanted = self._chosen
        else:
            end = place + self._AROUND + 1
            self._ends.add(end)
            wanted = [runs.c.id.in_(self._rows[max(0, place - self._AROUND) : end])]
        try:
            with self._database.reading() as connection:
                found = connection.execute(select(runs.c.id, runs.c.doc, runs.c.steady_n).where(*wanted))
                self._fetched.update((row, (doc, steady_n)) for row, doc, steady_n in found)
        finally:
            self._database.engine.dispose()
