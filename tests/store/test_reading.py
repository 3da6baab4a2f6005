"""``Store.read``: what was ingested comes back as build made it, per machine, from a date on."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone

import pytest
from sqlalchemy import create_engine, delete, event, update
from sqlalchemy.engine import Engine

from timeline.export import samples_to_dict
from timeline.history import history
from timeline.model import run_order
from timeline.store import StoreError, open_store
from timeline.store.machine import machine_of
from timeline.store.schema import metadata


def without_samples(run):
    return dataclasses.replace(run, samples=None)


def test_build_ingest_read_gives_the_same_typed_runs_and_events(month_timeline, store_url):
    machine = machine_of(month_timeline, "node-1", "host-1")
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine, keep_samples=True)
        (history,) = store.read()
    assert history.machine == machine
    assert [without_samples(r) for r in history.runs] == [without_samples(r) for r in month_timeline.runs]
    assert [samples_to_dict(r.samples) for r in history.runs] == [
        samples_to_dict(r.samples) for r in month_timeline.runs
    ]
    assert history.events == month_timeline.events
    assert history.repo == month_timeline.repo
    assert history.runs[3].steady == month_timeline.runs[3].steady and history.runs[3].messages


def test_samples_are_stored_only_when_asked_for(month_timeline, store_url):
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "h"))
        (history,) = store.read()
    assert all(run.samples is None for run in history.runs)
    assert all(run.metrics for run in history.runs)  # the summaries and spread are kept


def test_a_reading_of_several_ingests_is_numbered_as_one_build_of_them_all(month, month_timeline, store_url):
    import timeline

    days = sorted(month.logs.glob("*.log"))
    with open_store(store_url, {}) as store:
        for half in (days[len(days) // 2 :], days[: len(days) // 2]):  # the later days first
            store.ingest(
                timeline.build(half, repo=month.repo, log_tz="UTC", cache=False), machine_of(month_timeline, "n", "h")
            )
        (history,) = store.read()
    assert [(r.id, r.start, r.events_during) for r in history.runs] == [
        (r.id, r.start, r.events_during) for r in month_timeline.runs
    ]


def test_machines_are_read_apart_and_since_a_date(month_timeline, store_url):
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-a", "a"))
        since = datetime(2026, 4, 15, tzinfo=timezone.utc)
        (a,) = store.read(machine="node-a", since=since)
        assert a.runs and all(r.start >= since for r in a.runs)
        assert [r.id for r in a.runs] == [f"r{n}" for n in range(1, len(a.runs) + 1)]
        assert all(e.time >= since for e in a.events)
        assert store.read(machine="node-b") == []
        assert store.read(since=datetime(2026, 4, 15)) == [a]  # naive: UTC


@contextmanager
def selects() -> Iterator[list[str]]:
    """The SELECT statements sent to any store meanwhile."""
    sent: list[str] = []

    def heard(connection, cursor, statement, parameters, context, executemany) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            sent.append(statement)

    event.listen(Engine, "before_cursor_execute", heard)
    try:
        yield sent
    finally:
        event.remove(Engine, "before_cursor_execute", heard)


def test_a_runs_array_is_fetched_when_first_read_with_the_runs_next_to_it(month_timeline, store_url):
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "h"))
        (history,) = store.read()
    built = [without_samples(r) for r in month_timeline.runs]
    # the store is closed: what only the arrays hold is fetched when first read, a few runs at once
    with selects() as sent:
        assert history.runs[20].metrics == built[20].metrics
        assert len(sent) == 1 and "doc" in sent[0]
        assert [r.end for r in history.runs[5:36]] == [r.end for r in built[5:36]]
        assert len(sent) == 1  # fetched with the 21st run: the 16 read before it and after it
        assert history.runs[2].status == built[2].status
        assert len(sent) == 2
        assert history.runs == built  # every run read, in order: the rest at once
        assert len(sent) == 3


def test_a_run_gone_from_the_store_before_its_array_is_read_is_one_line(month_timeline, store_url):
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "h"))
        (history,) = store.read()
    engine = create_engine(store_url)
    with engine.begin() as connection:
        connection.execute(delete(metadata.tables["runs"]))
    engine.dispose()
    with pytest.raises(StoreError, match="^.*: a run read from the store is no longer in it$"):
        assert history.runs[0].metrics


def test_a_run_stored_again_before_its_array_is_read_is_one_line(month_timeline, store_url):
    """An ingest stores a longer reading of a run (its log was still written) in the same row: its
    array is not joined to the columns of the reading before."""
    with open_store(store_url, {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "h"))
        (history,) = store.read()
    runs = metadata.tables["runs"]
    engine = create_engine(store_url)
    with engine.begin() as connection:  # what writing._runs does for a longer reading, in short
        connection.execute(
            update(runs).where(runs.c.first_line == history.runs[3].first_line).values(steady_n=runs.c.steady_n + 40)
        )
    engine.dispose()
    assert history.runs[0].metrics  # fetched with its neighbours, the 4th among them
    with pytest.raises(StoreError, match="^.*: a run was stored again while it was read .*: run the command again$"):
        assert history.runs[3].metrics
    assert history.runs[4].metrics == month_timeline.runs[4].metrics


def test_the_runs_are_read_from_their_index_not_their_table(month_timeline, tmp_path):
    """SQLite walks only the index made for the reading (schema.HISTORY_INDEX): every column read is in it."""
    path = tmp_path / "store.sqlite"
    with open_store(str(path), {}) as store:
        store.ingest(month_timeline, machine_of(month_timeline, "node-1", "h"))
        with selects() as sent:
            store.read(with_samples=False)
    (runs,) = [statement for statement in sent if "FROM runs" in statement and "steady_value" in statement]
    with sqlite3.connect(path) as connection:
        plan = " ".join(row[-1] for row in connection.execute(f"EXPLAIN QUERY PLAN {runs}", (1,)))
    assert plan == "SEARCH runs USING COVERING INDEX ix_runs_history (machine_id=?)"


@pytest.mark.parametrize("names", [("node-b", "node-a"), ("node-a", "node-a")])
@pytest.mark.parametrize("without_start", [False, True])
def test_runs_at_one_start_are_numbered_in_run_order(month, tmp_path, store_url, names, without_start):
    """The month's runs as two machines' or as one's from two folders (the second's logs print
    another, cosmetic, server argument: other runs, the same starts): each start a tie, broken
    by the machine's name, else by the log's; a run without a start comes last."""
    import timeline

    other = tmp_path / "other"
    other.mkdir()
    for log in month.logs.glob("*.log"):
        text = log.read_text(encoding="utf-8").replace("decode_log_interval=40", "decode_log_interval=41")
        (other / log.name).write_text(text, encoding="utf-8")
    with open_store(store_url, {}) as store:
        for name, logs in zip(names, (other, month.logs), strict=True):  # the later log first
            built = timeline.build(logs, repo=month.repo, log_tz="UTC", cache=False)
            if without_start:
                built.runs[7].start = None
            store.ingest(built, machine_of(built, name, name))
    runs = history(store_url).timeline.runs
    assert runs == sorted(runs, key=run_order) and len(runs) == 2 * 45
    assert [(run.machine, run.source) for run in runs[:2]] == sorted((run.machine, run.source) for run in runs[:2])
    assert runs[0].start == runs[1].start and runs[0].source != runs[1].source
    assert [run.id for run in runs] == [f"r{n}" for n in range(1, len(runs) + 1)]
    if without_start:
        assert [run.start for run in runs[-2:]] == [None, None]
